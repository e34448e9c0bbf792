"""``gem-eval gate`` end to end: each exit code, from the CLI in a subprocess, on run
directories written by the results store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gem_eval.records import EpisodeRecord, ModelSpec, RunManifest, TaskSpec
from gem_eval.store import RunDir
from tests.e2e.test_run_cli import gem_eval


def write_run(
    results: Path,
    run_id: str,
    successes: list[bool] | np.ndarray,
    *,
    suite_hash: str = "h1",
    infra: int = 0,
    status: str = "finished",
    started_at: float = 1000.0,
    first: int = 0,
    models: tuple[str, ...] = (),
    scorer: str = "success",
    tasks: tuple[str, ...] = ("t0", "t1", "t2", "t3"),
    options: dict[str, Any] | None = None,
) -> None:
    """A run of one model (``openai/<run_id>``, or each of ``models``) on tasks t0..t3,
    scored by ``scorer``: sample ``first + i`` (of task ``t{i % 4}``) succeeds when
    ``successes[i]``, then ``infra`` more samples lost to infrastructure errors. A run of
    part of the suite plays only ``tasks``, and its manifest keeps the run's ``options``
    (``{"tasks": [...]}``)."""
    n = len(successes)
    names = models or (f"openai/{run_id}",)
    played = [i for i in range(first, first + n + infra) if f"t{i % 4}" in tasks]
    manifest = RunManifest(
        run_id=run_id,
        suite="fixed",
        suite_hash=suite_hash,
        models=[ModelSpec(name=name) for name in names],
        tasks=[
            TaskSpec(id=task, env_id="game:GuessTheNumber-v0-easy", scorer=scorer)  # type: ignore[arg-type]
            for task in tasks
        ],
        episodes_planned=len(played) * len(names),
        gem_eval_version="0.0.0",
        host="test",
        started_at=started_at,
        finished_at=started_at + 1,
        status=status,
        extra={"options": options} if options else {},
    )
    run = RunDir.create(results, manifest)
    outcomes: list[tuple[str, float | None]] = [("completed", float(ok)) for ok in successes]
    outcomes += [("infra_error", None)] * infra
    run.extend(
        EpisodeRecord(
            run_id=run_id,
            key=f"{model}|t{i % 4}|{i}|0",
            model=model,
            task_id=f"t{i % 4}",
            sample=i,
            epoch=0,
            outcome=outcome,  # type: ignore[arg-type]
            score=score,
            success=bool(score),
            turns=1,
            started_at=started_at,
            finished_at=started_at + 1,
        )
        for model in names
        for i, (outcome, score) in enumerate(outcomes, first)
        if i in played
    )


def bernoulli(p: float, n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random(n) < p


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """A base run and a run with the same outcomes (the base's baseline)."""
    root = tmp_path / "results"
    write_run(root, "base", bernoulli(0.8, 200, seed=1))
    write_run(root, "same", bernoulli(0.8, 200, seed=1), started_at=2000.0)
    return root


def test_0_no_significant_regression(results: Path) -> None:
    done = gem_eval("gate", "same", "--baseline", "base", results=results)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("gate PASS: same against baseline base")


def test_1_a_significant_regression(results: Path) -> None:
    write_run(results, "worse", bernoulli(0.4, 200, seed=2), started_at=3000.0)
    done = gem_eval("gate", "latest", "--baseline", "base", results=results)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith("gate FAIL: worse against baseline base")
    assert "significant drop beyond 0.02" in done.stdout and not done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["gate", "nope", "--baseline", "base"], "error: no run 'nope'"),
        (["gate", "same", "--baseline", "bsae"], "no run 'bsae'. Did you mean:"),
        (["gate", "same", "--baseline", "base", "--alpha", "0.7"], "--alpha must lie in"),
        (
            ["gate", "same", "--baseline", "base", "--max-drop", "lots"],
            "invalid value for '--max-drop'",
        ),
        (["gate", "same", "--baseline", "base", "--max-drop", "1.5"], "--max-drop must lie in"),
        (["gate", "same", "--baseline", "base", "--max-drop", "-0.1"], "--max-drop must lie in"),
        (["gate", "base", "--baseline", "base"], "its baseline are one run, base: a run"),
        (["gate", "latest", "--baseline", "same"], "its baseline are one run, same: a run"),
        (["compare", "same", "same"], "its baseline are one run, same: a run"),
        (["gate", "same"], "missing option '--baseline'"),
    ],
)
def test_2_bad_input(results: Path, args: list[str], message: str) -> None:
    done = gem_eval(*args, results=results)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("new", "reason"),
    [
        ({"suite_hash": "h2"}, "suite hashes differ"),
        ({"infra": 30}, "30 of 230 episodes of the new run were not scored"),
        ({"status": "interrupted"}, "run new is interrupted"),
    ],
)
def test_3_runs_not_comparable(results: Path, new: dict[str, object], reason: str) -> None:
    write_run(results, "new", bernoulli(0.8, 200, seed=1), **new)  # type: ignore[arg-type]
    done = gem_eval("gate", "new", "--baseline", "base", results=results)
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stdout.startswith("gate INCOMPARABLE: new against baseline base")
    assert reason in done.stdout


def test_3_without_a_common_sample(results: Path) -> None:
    write_run(results, "new", bernoulli(0.8, 200, seed=1), first=1000)
    done = gem_eval("gate", "new", "--baseline", "base", results=results)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "no episode was scored in both runs" in done.stdout


def test_4_the_gate_itself_failed(results: Path) -> None:
    (results / "index.sqlite").write_bytes(b"not a database, " * 512)  # a corrupt cache
    done = gem_eval("gate", "same", "--baseline", "base", results=results)
    assert done.returncode == 4, done.stdout + done.stderr
    assert done.stderr.splitlines()[-1].startswith("error: the gate failed: DatabaseError")
    assert not done.stdout  # no verdict was printed


def test_a_model_missing_from_the_baseline_is_named(tmp_path: Path) -> None:
    results = tmp_path / "results"
    outcomes = bernoulli(0.8, 40, seed=3)
    write_run(results, "old", outcomes, models=("openai/a", "openai/b"))
    write_run(results, "new", outcomes, models=("openai/a", "openai/c"), started_at=2000.0)
    line = "model openai/c is in the new run only: not compared"
    lacks = gem_eval("gate", "new", "--baseline", "old", results=results)
    assert lacks.returncode == 3, lacks.stdout + lacks.stderr  # the new run lacks openai/b
    assert "model openai/b is in the base run only: not compared" in lacks.stdout
    done = gem_eval("gate", "new", "--baseline", "old", "--allow-subset", results=results)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "model openai/b is in the base run only: not compared" in done.stdout
    assert line in done.stdout
    compared = gem_eval("compare", "old", "new", results=results)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert line in compared.stdout


def test_runs_scored_differently_are_refused(results: Path) -> None:
    write_run(results, "ret", bernoulli(0.8, 200, seed=1), scorer="return", started_at=3000.0)
    reason = "the runs are scored differently: base by success, new by return"
    done = gem_eval("gate", "ret", "--baseline", "base", results=results)
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        "gate INCOMPARABLE: ret against baseline base",
        f"  {reason}",
    ]
    compared = gem_eval("compare", "base", "ret", results=results)
    assert compared.returncode == 2 and not compared.stdout
    assert compared.stderr == f"error: base and ret do not compare: {reason}\n"


def test_3_a_run_of_part_of_the_baselines_tasks(results: Path) -> None:
    """A run of tasks t0 and t1 against a baseline of t0..t3: the gate names t2 and t3 and
    judges nothing, unless --allow-subset asks it to judge t0 and t1."""
    part = {"tasks": ["t0", "t1"]}
    write_run(results, "part", bernoulli(0.8, 200, seed=1), tasks=("t0", "t1"), options=part)
    missing = [
        "  task t2 is in the base run only (50 samples): not compared",
        "  task t3 is in the base run only (50 samples): not compared",
    ]
    done = gem_eval("gate", "part", "--baseline", "base", results=results)
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        "gate INCOMPARABLE: part against baseline base",
        "  the new run lacks 100 samples of 2 tasks that the baseline played: a gate "
        "compares like with like",
        *missing,
        "  --allow-subset judges the part both runs played",
    ]
    allowed = gem_eval("gate", "part", "--baseline", "base", "--allow-subset", results=results)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    lines = allowed.stdout.splitlines()
    assert lines[0] == "gate PASS: part against baseline base"
    assert "over 100 pairs of 100 samples" in lines[1] and lines[2:] == missing
    compared = gem_eval("compare", "base", "part", results=results)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert compared.stdout.splitlines()[-2:] == [line.strip() for line in missing]
