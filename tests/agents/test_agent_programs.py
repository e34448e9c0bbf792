"""An agent program plays a terminal task inside gem-eval: its model calls go through the
run's endpoint and land in the record one step each, the task's own verifier grades what
it left, and what must not be scored (a spent budget, a failed model path) is not."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gem_eval.agents.registry import AGENTS, AgentInfo, register
from gem_eval.errors import ModelCallError, UserError
from gem_eval.models.base import ModelOutput, Usage
from gem_eval.models.scripted import ScriptedModel
from gem_eval.records import ModelSpec
from gem_eval.runner.session import RunOptions, execute_run, plan_run

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "tests" / "fixtures" / "harbor_jobs" / "tasks"


@pytest.fixture(autouse=True)
def fake_agent() -> object:
    register(AgentInfo("fake-cli", "tests.agents.fake_agent:FakeCli", "tests", ("terminal",), "x"))
    yield
    AGENTS.pop("fake-cli", None)


def suite(tmp_path: Path, agent: str = "fake-cli") -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "tb.yaml"
    base = ROOT / "tasks" / "terminal" / "base"
    path.write_text(
        f"""
name: tb
defaults:
  agent: {agent}
  sandbox:
    image_map: {{"python:3*": {base}}}
tasks:
  - id: t
    env: terminal:Task-v0
    args: {{path: {TASKS}}}
"""
    )
    return path


def play(tmp_path: Path, model: ScriptedModel, **options: object) -> list:
    plan = plan_run(str(suite(tmp_path)), [ModelSpec(name="scripted")], RunOptions(**options),
                    tmp_path / "r")  # fmt: skip
    asyncio.run(execute_run(plan, model_factory=lambda spec: model))
    return sorted(plan.run_dir.records(), key=lambda r: r.task_id)


@pytest.mark.docker
def test_an_agent_program_plays_and_the_task_grades_it(tmp_path: Path) -> None:
    model = ScriptedModel(
        lambda messages: "done" if len(messages) > 1 else "echo hi > /app/hello.txt"
    )
    count, hello = play(tmp_path, model)
    assert (hello.task_id, hello.outcome, hello.score) == ("t/hello-file", "completed", 1.0)
    assert (count.outcome, count.score) == ("completed", 0.0)  # the same command: wrong there
    traj = hello.trajectory
    assert traj is not None and traj.agent == "fake-cli" and len(traj.steps) == 2
    first, second = (step.info["request"] for step in traj.steps)
    assert first == {
        "from": None,
        "messages": [{"role": "user", "content": traj.initial_observation}],
    }
    assert second["from"] == 0 and [m["role"] for m in second["messages"]] == ["user"]
    assert traj.steps[-1].info["success"] is True
    assert traj.agent_run is not None and traj.agent_run["version"] == "1.0"
    assert traj.agent_run["turns"][0]["commands"] == ["echo hi > /app/hello.txt"]
    assert any(a.endswith("fake-cli.log") for a in hello.attachments)


@pytest.mark.docker
def test_a_spent_budget_cancels_and_a_failed_model_path_is_not_scored(tmp_path: Path) -> None:
    priced = ModelOutput(text="echo hi > /app/hello.txt", usage=Usage(cost_usd=1.0))
    records = play(tmp_path / "a", ScriptedModel([priced]), max_cost_usd=0.5, concurrency=1)
    # The first call spends the budget: the agent's next call is refused, its episode is
    # cancelled (not scored), and no other episode starts.
    [cut] = records
    assert cut.outcome == "cancelled" and cut.score is None
    assert cut.trajectory is not None and len(cut.trajectory.steps) == 1
    down = ModelCallError("503 upstream down", status=503, transient=True)
    records = play(tmp_path / "b", ScriptedModel([down]))
    assert {(r.outcome, r.score) for r in records} == {("infra_error", None)}


def test_an_agent_that_cannot_play_a_task_is_refused_before_the_run(tmp_path: Path) -> None:
    games = tmp_path / "g.yaml"
    games.write_text("tasks:\n  - env: game:GuessTheNumber-v0-easy\n    agent: fake-cli\n")
    with pytest.raises(UserError, match="agent 'fake-cli' cannot play task"):
        plan_run(str(games), [ModelSpec(name="m")], RunOptions(), tmp_path / "r")
    assert not (tmp_path / "r").exists()


def test_the_agent_is_not_part_of_what_a_sample_is(tmp_path: Path) -> None:
    from gem_eval.suites import load_suite

    assert load_suite(suite(tmp_path)).hash == load_suite(suite(tmp_path, "gem-eval")).hash


def test_validate_names_an_unknown_agent_and_one_that_cannot_play(tmp_path: Path) -> None:
    from gem_eval.suites.check import check_file

    path = tmp_path / "bad.yaml"
    path.write_text(
        "tasks:\n"
        "  - env: game:GuessTheNumber-v0-easy\n    agent: fake-cli\n"
        "  - env: game:Wordle-v0-easy\n    agent: fake-clj\n"
    )
    _, problems = check_file(path)
    said = [f"{p.line}: {p.message}" for p in problems]
    assert len(said) == 2, said
    assert "agent 'fake-cli' cannot play task" in said[0]
    assert "unknown agent 'fake-clj'. Did you mean: fake-cli?" in said[1]
