"""Runs and the agents that played them (issue 23), without Docker: an episode's agent is
the one its record names, so a run resumed with ``--agent X --force`` shows a row per
agent; ``--dry-run`` history is kept per agent; ``results show`` and ``results list`` name
the agents; ``tasks check`` runs stay off the default leaderboard; the gate says what an
interrupted run scored. The episodes played are records written here (an agent program
needs Docker); planning, the index and the commands are the real ones."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gem_eval.agents.registry import AGENTS, AgentInfo, register
from gem_eval.cli.app import app
from gem_eval.errors import UserError
from gem_eval.estimate import estimate_run
from gem_eval.models.pricing import Price
from gem_eval.records import EpisodeRecord, EpisodeSpec, ModelSpec, RunManifest, TaskSpec
from gem_eval.runner.resume import ResumeRequest
from gem_eval.runner.scoring import cancelled_record, failed_record, to_record
from gem_eval.runner.session import RunOptions, plan_run
from gem_eval.store import Index, RunDir
from gem_eval.trajectory import Trajectory

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "tests" / "fixtures" / "harbor_jobs" / "tasks"
MODEL = "openai/m"
FREE = Price(0.0, 0.0, "free")


@pytest.fixture(autouse=True)
def fake_agents() -> Iterator[None]:
    for name in ("fake-cli", "fake-cli-2"):
        register(AgentInfo(name, "tests.agents.fake_agent:FakeCli", "tests", ("terminal",), "x"))
    yield
    for name in ("fake-cli", "fake-cli-2"):
        AGENTS.pop(name, None)


def invoke(results: Path, *args: str) -> Any:
    return CliRunner().invoke(app, [*args, "--results-dir", str(results)], env={"COLUMNS": "250"})


def board(results: Path, *args: str) -> list[dict[str, Any]]:
    done = invoke(results, "leaderboard", *args, "-f", "json")
    assert done.exit_code == 0, done.output
    rows: list[dict[str, Any]] = json.loads(done.stdout)
    return rows


def episode(task: TaskSpec, model: str = MODEL, sample: int = 0) -> EpisodeSpec:
    """The first epoch of ``task``'s sample ``sample`` for ``model``."""
    key = EpisodeSpec.make_key(model, task.id, sample, 0)
    return EpisodeSpec(
        key=key, task=task, model=ModelSpec(name=model), sample=sample, epoch=0, seed=sample
    )


def played(
    run_id: str, spec: EpisodeSpec, agent: str, success: bool, setup_s: float
) -> EpisodeRecord:
    """The record of ``spec`` played by the agent program ``agent``."""
    trajectory = Trajectory(
        env_id=spec.task.env_id,
        model=spec.model.name,
        agent=agent,
        agent_run={"setup_s": setup_s, "run_s": 2 * setup_s, "version": f"{agent} 1.0"},
        initial_observation="do the task",
        success=success,
    )
    return to_record(run_id, spec, trajectory, 1.0)


def terminal_suite(tmp_path: Path) -> Path:
    path = tmp_path / "tb.yaml"
    path.write_text(
        f"name: tb\ndefaults:\n  agent: fake-cli\n"
        f"tasks:\n  - id: t\n    env: terminal:Task-v0\n    args: {{path: {TASKS}}}\n"
    )
    return path


def test_a_forced_resume_with_another_agent_is_credited_to_the_agent_that_played(
    tmp_path: Path,
) -> None:
    """fake-cli plays each task's first epoch and the second is cancelled; the run is
    resumed with ``--agent fake-cli-2 --force``, which plays the second epochs: the
    manifest's tasks say fake-cli-2, and the index (what the end-of-run table reads), the
    leaderboard, ``--agent fake-cli-2``, ``results show`` and ``results list`` credit each
    episode to the agent its record names: a row per agent."""
    results = tmp_path / "r"
    suite = str(terminal_suite(tmp_path))
    plan = plan_run(suite, [ModelSpec(name=MODEL)], RunOptions(epochs=2), results)
    run_id = plan.manifest.run_id
    run = RunDir.create(results, plan.manifest.model_copy(update={"status": "interrupted"}))
    for spec in plan.todo:
        first = spec.epoch == 0
        run.append(
            played(run_id, spec, "fake-cli", True, 1.0)
            if first
            else cancelled_record(run_id, spec, 1.0)
        )

    request = ResumeRequest(options={"overrides": {"agent": "fake-cli-2"}}, force=True)
    resumed = plan_run(None, [], RunOptions(), results, resume=run_id, request=request)
    assert sorted((s.epoch, s.task.agent) for s in resumed.todo) == [(1, "fake-cli-2")] * 2
    assert {t.agent for t in resumed.manifest.tasks} == {"fake-cli-2"}
    run.extend(played(run_id, spec, "fake-cli-2", False, 3.0) for spec in resumed.todo)
    run.write_manifest(resumed.manifest.model_copy(update={"status": "finished"}))

    with Index.for_root(results) as index:
        index.rebuild(results)
        [row] = index.runs()
        frame = index.episodes_frame(run_ids=[run_id])  # what the end-of-run table reads
    assert row["played_by"] == ["fake-cli", "fake-cli-2"]
    by_epoch = {(e, a) for e, a in zip(frame["epoch"], frame["agent"])}
    assert by_epoch == {(0, "fake-cli"), (1, "fake-cli-2")}
    rows = board(results)
    assert sorted((r["agent"], r["run_id"], r["score"]) for r in rows) == [
        ("fake-cli", run_id, 1.0),
        ("fake-cli-2", run_id, 0.0),
    ]
    [only] = board(results, "--agent", "fake-cli-2")
    assert (only["run_id"], only["agent"], only["score"]) == (run_id, "fake-cli-2", 0.0)

    shown = invoke(results, "results", "show", run_id)
    assert shown.exit_code == 0, shown.output
    said = " ".join(shown.stdout.split())
    assert "fake-cli: version fake-cli 1.0, 2 episodes, mean setup 1.0 s, run 2.0 s" in said
    assert "fake-cli-2: version fake-cli-2 1.0, 2 episodes, mean setup 3.0 s, run 6.0 s" in said
    listed = invoke(results, "results", "list")
    assert listed.exit_code == 0, listed.output
    assert "fake-cli, fake-cli-2" in listed.stdout


def test_a_failed_episode_names_its_tasks_agent() -> None:
    """An episode that could not be played is recorded under the task's agent program."""
    task = TaskSpec(id="t", env_id="terminal:Task-v0", agent="fake-cli")
    failed = failed_record("r", episode(task), 1.0, OSError("no sandbox"))
    assert failed.trajectory is not None and failed.trajectory.agent == "fake-cli"


def history_run(results: Path, run_id: str, agent: str | None, input_tokens: int) -> None:
    """A run of suite ``est`` whose task ``guess`` was played by ``agent`` (``None``: a
    run made before tasks had an agent), each of its 2 episodes reading ``input_tokens``."""
    tasks = [] if agent is None else [TaskSpec(id="guess", env_id="game:x", agent=agent)]
    manifest = RunManifest(
        run_id=run_id,
        suite="est",
        suite_hash="h1",
        models=[ModelSpec(name=MODEL)],
        tasks=tasks,
        episodes_planned=2,
        gem_eval_version="0",
        host="h",
        started_at=1.0,
    )
    records = [
        EpisodeRecord(
            run_id=run_id,
            key=EpisodeSpec.make_key(MODEL, "guess", n, 0),
            model=MODEL,
            task_id="guess",
            sample=n,
            epoch=0,
            outcome="completed",
            score=0.0,
            success=False,
            turns=2,
            input_tokens=input_tokens,
            started_at=time.time(),
            finished_at=time.time(),
        )
        for n in range(2)
    ]
    RunDir.create(results, manifest).extend(records)


def test_dry_run_history_is_kept_per_agent(tmp_path: Path) -> None:
    """Terminus-2, Qwen Code and gem-eval's own loop (a run from before agents) played
    the same task and model: each agent's estimate reads its own history."""
    history_run(tmp_path, "old", None, 10)
    history_run(tmp_path, "tb", "terminus-2", 100)
    history_run(tmp_path, "qwen", "qwen-code", 500)
    with Index.for_root(tmp_path) as index:
        index.rebuild(tmp_path)

    def estimate(**task: Any) -> tuple[float | None, str]:
        spec = TaskSpec(id="guess", env_id="game:GuessTheNumber-v0-easy", **task)
        [row] = estimate_run(
            [episode(spec)],
            results_dir=tmp_path,
            concurrency=1,
            suite="est",
            pricing=lambda m: FREE,
        ).rows
        return row.input_tokens.value, row.source

    assert estimate(agent="qwen-code") == (500.0, "history: 2 episodes of run qwen")
    assert estimate(agent="terminus-2") == (100.0, "history: 2 episodes of run tb")
    assert estimate() == (10.0, "history: 2 episodes of run old")
    assert estimate(agent="mini-swe-agent")[1].startswith("bound")


def test_tasks_check_runs_stay_off_the_default_leaderboard(tmp_path: Path) -> None:
    """A ``tasks check`` run (oracle and noop) is neither a row nor a pair's latest run
    on the default board (alone, the board is empty and says why); ``--all-runs`` and
    naming it show it, marked ``tasks check``."""
    from gem_eval.runner.health import check_tasks

    suite = tmp_path / "health.yaml"
    suite.write_text("name: health\ntasks:\n  - {id: guess, env: game:GuessTheNumber-v0-easy}\n")
    results = tmp_path / "r"
    report = asyncio.run(check_tasks(str(suite), results, RunOptions()))
    alone = invoke(results, "leaderboard")
    assert isinstance(alone.exception, UserError)  # the entry point prints it in one line
    assert "1 other run not shown: --all-runs shows every run" in str(alone.exception)
    manifest = RunManifest(
        run_id="real",
        suite="health",
        suite_hash="h",
        models=[ModelSpec(name="noop")],
        tasks=[TaskSpec(id="guess", env_id="game:GuessTheNumber-v0-easy")],
        episodes_planned=1,
        gem_eval_version="0",
        host="h",
        started_at=1000.0,
        finished_at=1001.0,
        status="finished",
    )
    spec = episode(manifest.tasks[0], "noop")
    trajectory = Trajectory(env_id="game:x", model="noop", initial_observation="?", success=True)
    RunDir.create(results, manifest).append(to_record("real", spec, trajectory, 1000.0))
    with Index.for_root(results) as index:
        index.rebuild(results)

    assert [(r["run_id"], r["model"]) for r in board(results)] == [("real", "noop")]
    every = {(r["run_id"], r["model"]): r.get("variant") for r in board(results, "--all-runs")}
    assert every == {
        ("real", "noop"): None,
        (report.run_id, "noop"): "tasks check",
        (report.run_id, "oracle"): "tasks check",
    }
    named = board(results, report.run_id)
    assert {(r["model"], r["variant"]) for r in named} == {
        ("noop", "tasks check"),
        ("oracle", "tasks check"),
    }
    text = invoke(results, "leaderboard")
    assert "1 other run not shown: --all-runs shows every run" in text.stdout


def test_an_agent_check_run_is_a_tasks_check_of_its_own() -> None:
    """``tasks check --agent``'s run, and one made before the mark, say ``tasks check``
    rather than their overrides."""
    from gem_eval.store.variant import is_tasks_check, run_variant

    options = {"overrides": {"agent": "terminus-2", "agent_max_turns": 3}, "tasks": ["x*"]}
    extra = {"agent_check": {"agent": "terminus-2", "max_turns": 3}, "options": options}
    manifest = RunManifest(
        run_id="c",
        suite="s",
        suite_hash="h",
        models=[ModelSpec(name="noop")],
        tasks=[],
        episodes_planned=1,
        gem_eval_version="0",
        host="h",
        started_at=1.0,
        extra=extra,
    )
    assert is_tasks_check(manifest)
    assert run_variant(manifest) == "tasks check --task 'x*'"


def test_the_gate_says_what_an_interrupted_run_scored(tmp_path: Path) -> None:
    """Both episodes of the new run were cancelled: the gate says none was scored."""
    results = tmp_path / "r"
    for run_id, status in (("base", "finished"), ("new", "interrupted")):
        manifest = RunManifest(
            run_id=run_id,
            suite="s",
            suite_hash="h",
            models=[ModelSpec(name=MODEL)],
            tasks=[TaskSpec(id="t", env_id="game:GuessTheNumber-v0-easy")],
            episodes_planned=3,
            gem_eval_version="0",
            host="h",
            started_at=1000.0 if run_id == "base" else 2000.0,
            status=status,  # type: ignore[arg-type]
        )
        run = RunDir.create(results, manifest)
        for sample in range(3 if run_id == "base" else 2):
            spec = episode(manifest.tasks[0], sample=sample)
            if run_id == "base":
                traj = Trajectory(env_id="g", model=MODEL, initial_observation="?", success=True)
                run.append(to_record(run_id, spec, traj, 1000.0))
            else:
                run.append(cancelled_record(run_id, spec, 2000.0))
    done = invoke(results, "gate", "new", "--baseline", "base")
    assert done.exit_code == 3, done.output
    assert (
        "run new is interrupted: 0/3 episodes scored (2 cancelled, 1 not played): finish it"
        in done.stdout
    )
