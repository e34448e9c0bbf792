"""``tasks check`` (:mod:`gem_eval.runner.health`) without Docker: a task with a reference
is checked with the oracle and the do-nothing agent; a task with none with the do-nothing
agent only, reported as such, and never recorded as an error."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gem_eval import registration
from gem_eval.core import StepResult
from gem_eval.runner.health import check_tasks
from gem_eval.runner.session import RunOptions
from tests.fakes import FakeEnv


class Unsolved(FakeEnv):
    """No reference; any answer ends the episode with nothing earned."""

    def step(self, action: str) -> StepResult:
        return "over", 0.0, True, False, {"success": False}


class PassesOnNothing(FakeEnv):
    """No reference, and a grader that rewards doing nothing: a broken task."""

    def step(self, action: str) -> StepResult:
        return "over", 1.0, True, False, {"success": True}


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for env_id, cls in (("test:Unsolved-v0", Unsolved), ("test:Nothing-v0", PassesOnNothing)):
        monkeypatch.setitem(registration._REGISTRY, env_id, registration.EnvSpec(env_id, cls))
    path = tmp_path / "suite.yaml"
    path.write_text(
        "name: health\n"
        "tasks:\n"
        "  - {id: guess, env: game:GuessTheNumber-v0-easy}\n"
        "  - {id: unsolved, env: test:Unsolved-v0}\n"
        "  - {id: nothing, env: test:Nothing-v0}\n"
    )
    return path


def test_tasks_without_a_reference_are_checked_with_the_do_nothing_agent_only(
    suite: Path, tmp_path: Path
) -> None:
    from gem_eval.store import RunDir

    report = asyncio.run(check_tasks(str(suite), tmp_path / "r", RunOptions()))
    run_id, health = report.run_id, report.tasks
    assert report.agent is None and all(h.agent is None for h in health)
    by_task = {h.task_id: h for h in health}
    guess, unsolved, nothing = by_task["guess"], by_task["unsolved"], by_task["nothing"]
    assert (guess.reference, guess.oracle, guess.healthy) == (True, 1.0, True)
    assert (unsolved.reference, unsolved.oracle, unsolved.noop) == (False, None, 0.0)
    assert unsolved.healthy
    assert (nothing.reference, nothing.healthy) == (False, False)
    assert nothing.problem is not None and nothing.problem.startswith("do-nothing passed")
    assert "oracle" not in nothing.problem
    run = RunDir.open(tmp_path / "r", run_id)
    records = list(run.records())
    assert sorted((r.task_id, r.model) for r in records) == [
        ("guess", "noop"),
        ("guess", "oracle"),
        ("nothing", "noop"),
        ("unsolved", "noop"),
    ]
    assert {r.outcome for r in records} == {"completed"}
    manifest = run.read_manifest()
    assert manifest.status == "finished"
    assert manifest.episodes_planned == 4
    assert manifest.extra["no_reference"] == ["nothing", "unsolved"]
