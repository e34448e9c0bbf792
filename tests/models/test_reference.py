"""``--model oracle`` plays whatever reference an env has: the games suite, the math and QA
questions score full marks; an env with none is refused before the run's first episode,
and if one is reached anyway the episode is a configuration error, never an
infrastructure one. No Docker: the suites' Docker tasks are left out."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gem_eval.agent import run_episode
from gem_eval.agent.failures import outcome_of
from gem_eval.errors import ModelCallError, UserError
from gem_eval.models.reference import OracleModel, lacks_reference, reference_kind
from gem_eval.records import EpisodeRecord, ModelSpec, TaskSpec
from gem_eval.registration import make
from gem_eval.runner.session import RunOptions, execute_run, plan_run

ROOT = Path(__file__).resolve().parents[2]
CHECKOUT = ROOT / "tests" / "fixtures" / "mcpmark_checkout"
MCP_TASK = CHECKOUT / "tasks" / "filesystem" / "standard" / "notes" / "tally_total"
BUNDLED_MCP_TASK = ROOT / "tasks" / "mcp" / "filesystem" / "messy_project" / "update_config"


def play_suite(suite: str | Path, tmp: Path, limit: int | None = None) -> list[EpisodeRecord]:
    plan = plan_run(str(suite), [ModelSpec(name="oracle")], RunOptions(limit=limit), tmp)
    summary = asyncio.run(execute_run(plan))
    assert summary.status == "finished", summary.failure()
    return list(plan.run_dir.records())


def test_the_games_suite_scores_full_marks(tmp_path: Path) -> None:
    records = play_suite("games", tmp_path, limit=2)
    assert len({r.task_id for r in records}) == 9
    assert {(r.outcome, r.success, r.score) for r in records} == {("completed", True, 1.0)}


def test_math_and_qa_questions_get_their_gold_answers(tmp_path: Path) -> None:
    suite = tmp_path / "questions.yaml"  # the math suite without its Docker task
    suite.write_text(
        "name: questions\n"
        "tasks:\n"
        "  - id: math\n"
        "    env: math:Math-v0\n"
        "    dataset:\n"
        "      path: tasks/math/basic.jsonl\n"
        "      fields: {question: question, answer: answer}\n"
        "  - id: gsm_symbolic\n"
        "    env: rg:gsm_symbolic-v0\n"
        "    samples: 3\n"
    )
    records = play_suite(suite, tmp_path / "math")
    records += play_suite("qa", tmp_path / "qa")
    tasks = {r.task_id for r in records}
    assert tasks == {"math", "gsm_symbolic", "qa-search", "qa-closed-book"}
    assert len(records) == 32 + 3 + 25 + 25
    assert {(r.outcome, r.success, r.score) for r in records} == {("completed", True, 1.0)}


def test_what_each_env_offers() -> None:
    assert reference_kind(make("game:Sudoku-v0-easy")) == "move"
    assert reference_kind(make("math:Math-v0", question="1+1?", answer="2")) == "answer"
    assert reference_kind(make("qa:QA-v0", question="Who?", answer="Ann")) == "answer"
    assert reference_kind(make("mcp:Task-v0", path=str(BUNDLED_MCP_TASK))) == "solution"
    assert reference_kind(make("mcp:Task-v0", path=str(MCP_TASK))) is None  # published
    code = make("code:Code-v0", question="f", tests="assert True", entry_point="f")
    assert reference_kind(code) is None


def test_tasks_without_a_reference_are_known_before_any_episode() -> None:
    def task(env_id: str, **kwargs: object) -> TaskSpec:
        return TaskSpec(id=env_id, env_id=env_id, env_kwargs=kwargs)

    assert not lacks_reference(task("game:Wordle-v0-easy"))
    assert not lacks_reference(task("math:Math-v0"))  # its rows come with each sample
    assert not lacks_reference(task("mcp:Task-v0", path=str(BUNDLED_MCP_TASK)))
    assert lacks_reference(task("mcp:Task-v0", path=str(MCP_TASK)))
    assert lacks_reference(task("code:StdIO-v0"))
    assert not lacks_reference(task("mcp:Task-v0", path="/no/such/task"))  # env_error later


def test_a_run_with_the_oracle_on_tasks_without_one_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCPMARK_TASKS", str(CHECKOUT))
    plan = plan_run("mcpmark", [ModelSpec(name="oracle")], RunOptions(), tmp_path)
    with pytest.raises(UserError) as err:
        asyncio.run(execute_run(plan))
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(
        "--model oracle: 4 task(s) have no reference to play "
        "(mcp/filesystem/easy/notes/tally_total, mcp/filesystem/notes/tally_total, "
        "mcp/postgres/shop/restock, mcp/postgres/audit/event_counts)"
    )
    assert "gem-eval tasks check" in message
    assert not plan.run_dir.path.exists()  # refused before the run was written


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [
        ("mcp:Task-v0", {"path": str(MCP_TASK)}),  # no solution script
        ("math:Math-v0", {"question": "What is 1+1?", "answer": None}),  # no gold answer
    ],
)
def test_reached_anyway_it_is_a_configuration_error(env_id: str, kwargs: dict[str, str]) -> None:
    env = make(env_id, **kwargs)
    env.reset(seed=0)
    with pytest.raises(ModelCallError) as err:
        asyncio.run(OracleModel().for_episode(env).generate([]))
    assert not err.value.transient
    assert outcome_of(err.value, "model") == "config_error"


def test_an_episode_of_a_question_without_gold_ends_as_a_config_error() -> None:
    env = make("math:Math-v0", question="What is 1+1?", answer=None)
    traj = asyncio.run(run_episode(env, OracleModel().for_episode(env), seed=0))
    assert traj.outcome == "config_error"
    assert "no gold answer" in (traj.error or "")
