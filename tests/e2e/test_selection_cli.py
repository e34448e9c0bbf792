"""``--task`` / ``--sample`` / ``--category`` on ``run``, ``rollout`` and ``tasks check``."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_run_cli import gem_eval, records, run_dirs
from tests.fixtures.openai_server import FakeOpenAIServer, Reply


def test_run_plays_only_the_selected_tasks_and_samples(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.handler = lambda body: Reply("\\boxed{7}")
    base = ["--model", "openai/fake", "--model-base-url", openai_server.base_url, "-q"]
    result = gem_eval(
        "run", "--suite", "smoke", "--task", "wordle*", "--sample", "1", *base, results=tmp_path
    )
    assert result.returncode == 0, result.stderr + result.stdout
    [run] = run_dirs(tmp_path)
    rows = records(run)
    assert [(r["task_id"], r["sample"]) for r in rows] == [("wordle-easy", 1)]
    assert len(openai_server.requests) >= 1
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["episodes_planned"] == 1
    assert manifest["extra"]["options"]["tasks"] == ["wordle*"]
    # A resume keeps what the run measures: another selection needs --force.
    again = gem_eval("run", "--resume", "latest", "--task", "game:*", results=tmp_path)
    assert again.returncode == 2
    assert "--task would change it" in again.stderr, again.stderr
    # A selection that matches nothing: one line, nothing created.
    bad = gem_eval("run", "--suite", "smoke", "--category", "game", *base, results=tmp_path)
    assert bad.returncode == 2
    assert "--category 'game' is no category of the suite. Did you mean: games?" in bad.stderr
    assert "Traceback" not in bad.stderr and len(run_dirs(tmp_path)) == 1


def test_tasks_check_and_rollout_take_the_selection(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    check = gem_eval(
        "tasks", "check", "smoke", "--task", "wordle-easy", "--sample", "0", results=tmp_path
    )
    assert check.returncode == 0, check.stderr + check.stdout
    assert "1/1 tasks healthy" in check.stdout
    [run] = run_dirs(tmp_path)
    assert {(r["task_id"], r["sample"]) for r in records(run)} == {("wordle-easy", 0)}

    openai_server.handler = lambda body: Reply("\\boxed{7}")
    out = tmp_path / "batch"
    rollout = gem_eval(
        "rollout",
        "smoke",
        "--model",
        "openai/fake",
        "--model-base-url",
        openai_server.base_url,
        "--category",
        "games",
        "--task",
        "game:*",
        "--sample",
        "0",
        "--format",
        "jsonl",
        "--out",
        str(out),
        "-q",
        results=tmp_path / "r",
    )
    assert rollout.returncode == 0, rollout.stderr + rollout.stdout
    [played] = run_dirs(tmp_path / "r")
    assert {(r["task_id"], r["sample"]) for r in records(played)} == {
        ("game:GuessTheNumber-v0-easy", 0)
    }
