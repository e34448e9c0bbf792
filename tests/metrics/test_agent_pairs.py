"""Leaderboards, ``compare`` and the gate know the agent: a row is an agent + model pair,
the default board keeps each pair's latest run, and two runs of different agents on the
same samples pair as runs of two models do, naming each run's agent. The runs are run
directories written here, read through the real index."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from gem_eval.cli.app import app
from gem_eval.errors import UserError
from gem_eval.records import DEFAULT_AGENT, ModelSpec, TaskSpec
from gem_eval.store import RunDir
from tests.store.test_run_dir import make_manifest, make_record

MODEL = "openai/gpt"
TASKS = ("t0", "t1")


def write_run(
    results: Path,
    run_id: str,
    successes: list[bool],
    *,
    agents: dict[str, str] | None = None,
    started_at: float = 1000.0,
) -> None:
    """A finished run of :data:`MODEL` on tasks t0 and t1 (``agents``: task -> its agent,
    gem-eval's own loop for the others): sample i (of task ``t{i % 2}``) succeeds when
    ``successes[i]``."""
    agents = agents or {}
    tasks = [
        TaskSpec(id=t, env_id="game:GuessTheNumber-v0-easy", agent=agents.get(t, DEFAULT_AGENT))
        for t in TASKS
    ]
    manifest = make_manifest(
        run_id,
        suite="fixed",
        models=[ModelSpec(name=MODEL)],
        tasks=tasks,
        episodes_planned=len(successes),
        started_at=started_at,
        finished_at=started_at + 1,
        status="finished",
    )
    run = RunDir.create(results, manifest)
    run.extend(
        make_record(run_id, MODEL, TASKS[i % 2], i, "completed", float(ok))
        for i, ok in enumerate(successes)
    )


def invoke(results: Path, *args: str) -> Any:
    return CliRunner().invoke(app, [*args, "--results-dir", str(results)], env={"COLUMNS": "200"})


def board(results: Path, *args: str) -> list[dict[str, Any]]:
    done = invoke(results, "leaderboard", *args, "-f", "json")
    assert done.exit_code == 0, done.output
    rows: list[dict[str, Any]] = json.loads(done.stdout)
    return rows


def test_the_default_board_keeps_each_agent_and_model_pairs_latest_run(tmp_path: Path) -> None:
    """One model played by gem-eval's loop, then by Terminus-2: the later run does not hide
    the earlier one, since they are two pairs; each pair's re-run supersedes its own."""
    results = tmp_path / "results"
    terminus = dict.fromkeys(TASKS, "terminus-2")
    write_run(results, "loop", [True] * 8)
    write_run(results, "tb-old", [False] * 8, agents=terminus, started_at=2000.0)
    write_run(results, "tb", [True] * 4 + [False] * 4, agents=terminus, started_at=3000.0)

    rows = board(results)
    assert [(r["model"], r["agent"], r["run_id"], r["score"]) for r in rows] == [
        (MODEL, "gem-eval", "loop", 1.0),
        (MODEL, "terminus-2", "tb", 0.5),
    ]
    assert [r["run_id"] for r in board(results, "--agent", "terminus-2")] == ["tb"]
    assert [r["run_id"] for r in board(results, "--agent", "gem-eval")] == ["loop"]

    table = invoke(results, "leaderboard")
    assert table.exit_code == 0, table.output
    lines = table.stdout.splitlines()
    assert lines[0].startswith("suite fixed, each agent + model's latest finished run")
    header = next(line for line in lines if line.split()[:1] == ["model"])
    assert [cell.strip() for cell in header.split("┃")][:3] == ["model", "agent", "run"]
    assert "1 other run not shown: --all-runs shows every run" in table.stdout

    unknown = invoke(results, "leaderboard", "--agent", "terminus2")
    assert isinstance(unknown.exception, UserError)
    assert "Did you mean: terminus-2" in str(unknown.exception)


def test_a_board_of_gem_evals_loop_alone_has_no_agent_column(tmp_path: Path) -> None:
    """Runs made before tasks had an agent, or with the default: the terminal table stays
    as narrow as before; files keep the column."""
    results = tmp_path / "results"
    write_run(results, "loop", [True] * 4)
    table = invoke(results, "leaderboard")
    header = next(line for line in table.stdout.splitlines() if line.split()[:1] == ["model"])
    assert "agent" not in header
    assert [r["agent"] for r in board(results)] == ["gem-eval"]


def test_a_run_of_several_agents_is_a_row_per_pair(tmp_path: Path) -> None:
    """Terminus-2 played t0, gem-eval's loop t1: two rows of one run; a newer run of the
    loop alone displaces only the loop's row."""
    results = tmp_path / "results"
    write_run(results, "mixed", [True, False] * 4, agents={"t0": "terminus-2"})
    rows = board(results)
    assert [(r["agent"], r["run_id"], r["samples"]) for r in rows] == [
        ("terminus-2", "mixed", 4),
        ("gem-eval", "mixed", 4),
    ]
    write_run(results, "loop", [True] * 8, started_at=2000.0)
    assert invoke(results, "results", "reindex").exit_code == 0
    rows = board(results)
    assert [(r["agent"], r["run_id"]) for r in rows] == [
        ("gem-eval", "loop"),
        ("terminus-2", "mixed"),
    ]


def test_compare_and_gate_pair_two_agents_on_the_same_samples_and_name_them(
    tmp_path: Path,
) -> None:
    results = tmp_path / "results"
    write_run(results, "loop", [True] * 20)
    write_run(results, "tb", [True] * 10 + [False] * 10, agents=dict.fromkeys(TASKS, "terminus-2"))

    done = invoke(results, "compare", "loop", "tb")
    assert done.exit_code == 0, done.output
    assert "agents: base gem-eval, new terminus-2" in done.stdout.splitlines()
    assert "diff -0.500 over 20 pairs" in done.stdout

    gate = invoke(results, "gate", "tb", "--baseline", "loop")
    assert gate.exit_code == 1, gate.output
    assert gate.stdout.startswith("gate FAIL: tb against baseline loop")
    assert "  agents: base gem-eval, new terminus-2" in gate.stdout.splitlines()


def test_a_run_of_several_agents_pairs_on_the_agent(tmp_path: Path) -> None:
    """Base: Terminus-2 on t0, the loop on t1; new: the loop on both. Episodes pair per
    agent: the loop's t1 pairs, Terminus-2 is in the base run only, and the loop's t0 in
    the new run only."""
    results = tmp_path / "results"
    write_run(results, "mixed", [True] * 8, agents={"t0": "terminus-2"})
    write_run(results, "loop", [True] * 8, started_at=2000.0)

    done = invoke(results, "compare", "mixed", "loop")
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    assert "agents: base gem-eval, terminus-2, new gem-eval" in lines
    assert "diff +0.000 over 4 pairs" in done.stdout
    assert "agent terminus-2 is in the base run only: not compared" in lines
    assert "task t0 played by gem-eval is in the new run only (4 samples): not compared" in lines

    gate = invoke(results, "gate", "loop", "--baseline", "mixed")
    assert gate.exit_code == 3, gate.output
    assert "the new run lacks 1 agent that the baseline played" in gate.stdout
