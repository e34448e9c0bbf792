"""``--agent terminus-2`` on the bundled Terminal-Bench suite: Harbor's own Terminus-2,
hosted, plays two of its tasks (which have no network) against a scripted model, solving
one and failing the other; the record keeps every model call, the turns, the files."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from gem_eval.models.base import Message
from gem_eval.models.scripted import ScriptedModel
from gem_eval.records import ModelSpec
from gem_eval.runner.session import RunOptions, execute_run, plan_run

ROOT = Path(__file__).resolve().parents[2]
SOLVED, FAILED = "terminal/sort-downloads", "terminal/git-lost-commit"
CONFIRM = "Are you sure you want to mark the task as complete?"
SOLUTION = (ROOT / "tasks" / "terminal" / "sort-downloads" / "solution" / "solve.sh").read_text()


def terminus(messages: list[Message]) -> str:
    """Terminus-2's replies: the solution typed in (a here-document), or a look around."""
    first, last = str(messages[0]["content"]), str(messages[-1]["content"])
    if CONFIRM in last:
        commands: list[dict[str, object]] = []
    elif "/app/downloads" in first:
        commands = [{"keystrokes": f"bash <<'EOF'\n{SOLUTION}\nEOF\n", "duration": 2}]
    else:
        commands = [{"keystrokes": "ls /app\n", "duration": 0.5}]
    body = {"analysis": "Looking.", "plan": "Act.", "commands": commands, "task_complete": True}
    return json.dumps(body)


@pytest.mark.docker
@pytest.mark.harbor
def test_terminus2_plays_the_bundled_suite(tmp_path: Path) -> None:
    options = RunOptions(overrides={"agent": "terminus-2"}, tasks=[SOLVED, FAILED])
    plan = plan_run("terminal-bench", [ModelSpec(name="scripted")], options, tmp_path / "r")
    model = ScriptedModel(terminus)
    asyncio.run(execute_run(plan, model_factory=lambda spec: model))
    records = {r.task_id: r for r in plan.run_dir.records()}

    assert {t: (r.outcome, r.score) for t, r in records.items()} == {
        SOLVED: ("completed", 1.0),
        FAILED: ("completed", 0.0),
    }
    assert len(model.calls) == 4  # each: a reply, then the confirmation
    for record in records.values():
        traj = record.trajectory
        assert traj is not None and traj.agent == "terminus-2" and len(traj.steps) == 2
        run = traj.agent_run or {}
        # No network in these tasks: gem-eval brought tmux and asciinema in.
        assert run["provided"] == ["tmux", "asciinema"] and run["version"] == "2.0.0"
        assert run["setup_s"] > 0 and run["run_s"] > 0 and not run["timed_out"]
        first, confirmed = run["turns"]
        assert first["analysis"] == "Looking." and first["task_complete"] is True
        assert CONFIRM in first["observation"] and "root@" in first["observation"]
        assert confirmed["commands"] == []
        names = {Path(a).name for a in record.attachments}
        assert {"trajectory.json", "recording.cast", "terminus_2.pane"} <= names
    solved = records[SOLVED].trajectory
    assert (
        solved is not None
        and "bash <<'EOF'" in solved.agent_run["turns"][0]["commands"][0]["keystrokes"]
    )
    described = json.loads((plan.run_dir.path / "manifest.json").read_text())
    agents = described["resources"]["agents"]["terminus-2"]
    assert agents["harbor"] == "0.26.0" and agents["host_start_s"] > 0


@pytest.mark.docker
@pytest.mark.harbor
def test_terminus2_out_of_time_is_truncated_and_graded(tmp_path: Path) -> None:
    base = ROOT / "tasks" / "terminal" / "base"
    suite = tmp_path / "slow.yaml"
    suite.write_text(
        "name: slow\ndefaults:\n  limits: {max_time_s: 4}\n  agent: terminus-2\n"
        f"  sandbox: {{image_map: {{'python:3*': {base}}}}}\n"
        f"tasks:\n  - id: t\n    env: terminal:Task-v0\n"
        f"    args: {{path: {ROOT / 'tasks' / 'terminal' / 'sort-downloads'}}}\n"
    )
    slow = {"keystrokes": "sleep 30\n", "duration": 20}
    body = {"analysis": "Wait.", "plan": "Sleep.", "commands": [slow], "task_complete": False}
    model = ScriptedModel([json.dumps(body)])
    plan = plan_run(str(suite), [ModelSpec(name="scripted")], RunOptions(), tmp_path / "r")
    asyncio.run(execute_run(plan, model_factory=lambda spec: model))
    [record] = plan.run_dir.records()
    assert (record.outcome, record.score) == ("truncated", 0.0)
    traj = record.trajectory
    assert traj is not None and traj.truncated_by == "max_time" and len(traj.steps) == 1
    run = traj.agent_run or {}
    assert run["timed_out"] is True and 3.5 < run["run_s"] < 10
