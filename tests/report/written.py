"""Two runs written straight to a results directory, for the tests that check that the
report, the viewer and the CLI say the same: an older run that solves every sample and a
newer one that solves none (so the gate fails when the older is the baseline, and passes
the other way round), each episode four turns long, its last observation one the model
never read ("Out of turns (4): game over"), its seed the suite's base seed (7) plus the
sample, its cost unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gem_eval.models.base import ModelOutput, Usage
from gem_eval.records import EpisodeRecord, ModelSpec, RunManifest, TaskSpec
from gem_eval.store import RunDir
from gem_eval.trajectory import Step, Trajectory

MODEL = "openai/m"
TASK = "guess"
SAMPLES = 30
BASE_SEED = 7
LAST_WORD = "Out of turns (4): game over"


@dataclass(frozen=True)
class TwoRuns:
    results: Path
    old: str
    new: str


def write_two_runs(results: Path) -> TwoRuns:
    """The older run (every sample solved) and the newer one (none solved)."""
    old = write_run(results, "2026-12-01T10-00-00-demo-aaaaaa", 1_796_119_200.0, solved=True)
    new = write_run(results, "2026-12-02T10-00-00-demo-bbbbbb", 1_796_205_600.0, solved=False)
    return TwoRuns(results, old, new)


def write_run(results: Path, run_id: str, started: float, *, solved: bool) -> str:
    manifest = RunManifest(
        run_id=run_id, suite="demo", suite_hash="d" * 64, models=[ModelSpec(name=MODEL)],
        tasks=[TaskSpec(id=TASK, env_id="game:GuessTheNumber-v0-easy")],
        episodes_planned=SAMPLES, gem_eval_version="0.0.0", host="test", started_at=started,
    )  # fmt: skip
    run = RunDir.create(results, manifest)
    for sample in range(SAMPLES):
        run.append(episode(run_id, sample, started, solved=solved))
    done = manifest.model_copy(update={"status": "finished", "finished_at": started + 60})
    run.write_manifest(done)
    return run_id


def episode(run_id: str, sample: int, started: float, *, solved: bool) -> EpisodeRecord:
    """Four guesses; the env's replies to the first three go back to the model, its reply
    to the last (the verdict) does not."""
    messages = [{"role": "user", "content": "Guess a number between 1 and 10."}]
    steps = []
    for turn in range(4):
        guess = str(turn + 1)
        messages.append({"role": "assistant", "content": guess})
        last = turn == 3
        reply = ("Correct!" if solved else LAST_WORD) if last else f"{guess} is too low."
        if not last:
            messages.append({"role": "user", "content": reply})
        output = ModelOutput(text=guess, usage=Usage(input_tokens=10, output_tokens=1))
        steps.append(
            Step(
                index=turn, output=output, action=guess, observation=reply,
                reward=1.0 if (last and solved) else 0.0, terminated=last and solved,
                truncated=last and not solved,
            )
        )  # fmt: skip
    trajectory = Trajectory(
        env_id="game:GuessTheNumber-v0-easy", model=MODEL, seed=BASE_SEED + sample,
        initial_observation=messages[0]["content"], messages=messages, steps=steps,
        usage=Usage(input_tokens=40, output_tokens=4), success=solved,
    )  # fmt: skip
    return EpisodeRecord(
        run_id=run_id, key=f"{MODEL}|{TASK}|{sample}|0", model=MODEL, task_id=TASK,
        category="games", sample=sample, epoch=0, seed=BASE_SEED + sample,
        outcome="completed", score=1.0 if solved else 0.0, success=solved, turns=4,
        input_tokens=40, output_tokens=4, cost_usd=None, latency_s=0.5,
        started_at=started + sample, finished_at=started + sample + 1, trajectory=trajectory,
    )  # fmt: skip
