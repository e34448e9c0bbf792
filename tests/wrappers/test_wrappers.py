from __future__ import annotations

import asyncio
import json
from typing import Any, ClassVar

import pytest

from gem_eval import make
from gem_eval.sandbox import Sandbox
from gem_eval.tools import Tool, ToolResult
from gem_eval.wrappers import ChatHistory, EpisodeStats, MaxTurns, ToolEnv, discounted_return
from tests.fakes import FakeEnv, run_to_end


def test_max_turns_truncates_and_marks_the_step() -> None:
    env = MaxTurns(FakeEnv(length=10), max_turns=3)
    env.reset(0)
    results = run_to_end(env)
    assert len(results) == 3
    *_, (_, _, terminated, truncated, info) = results
    assert (terminated, truncated, info["truncated_by"]) == (False, True, "max_turns")
    env.reset()
    assert len(run_to_end(env)) == 3  # the count restarts with the episode


def test_max_turns_leaves_a_terminating_step_alone() -> None:
    env = MaxTurns(FakeEnv(length=2), max_turns=2)
    env.reset(0)
    *_, (_, _, terminated, truncated, info) = run_to_end(env)
    assert (terminated, truncated) == (True, False)
    assert "truncated_by" not in info


def test_max_turns_rejects_zero() -> None:
    with pytest.raises(ValueError):
        MaxTurns(FakeEnv(), 0)


def test_discounted_return() -> None:
    assert discounted_return([1.0, 2.0, 3.0], 0.5) == pytest.approx(1 + 1 + 0.75)
    assert discounted_return([], 0.9) == 0.0
    assert discounted_return([1.0, 1.0], 1.0) == 2.0


def test_episode_stats_reports_on_the_last_step() -> None:
    env = EpisodeStats(FakeEnv(length=3), gamma=0.9)
    env.reset(0)
    results = run_to_end(env)
    assert all("episode" not in r[4] for r in results[:-1])
    episode = results[-1][4]["episode"]
    assert episode == {
        "turns": 3,
        "return": 6.0,
        "discounted_return": pytest.approx(1 + 0.9 * 2 + 0.81 * 3),
        "gamma": 0.9,
        "rewards": [1.0, 2.0, 3.0],
    }
    env.reset()
    env.step("a")
    assert env.summary()["rewards"] == [1.0]


def test_faster_solutions_earn_more_discounted_return() -> None:
    """GuessTheNumber: binary search beats a linear scan once rewards are discounted."""
    fast = EpisodeStats(make("game:GuessTheNumber-v0-hard"), gamma=0.9)
    slow = EpisodeStats(make("game:GuessTheNumber-v0-hard", max_turns=50), gamma=0.9)
    fast.reset(11)
    slow.reset(11)
    while True:
        *_, term, trunc, info = fast.step(fast.unwrapped.oracle_action())  # type: ignore[attr-defined]
        if term or trunc:
            quick = info["episode"]
            break
    for guess in range(1, 51):
        *_, term, trunc, info = slow.step(f"\\boxed{{{guess}}}")
        if term or trunc:
            linear = info["episode"]
            break
    assert quick["turns"] < linear["turns"]
    assert quick["return"] == pytest.approx(1.0) and linear["return"] == pytest.approx(1.0)
    assert quick["discounted_return"] > linear["discounted_return"]


def test_chat_history_keeps_openai_messages() -> None:
    env = ChatHistory(FakeEnv(length=2), system_prompt="be brief")
    first, _ = env.reset(0)
    run_to_end(env, "x")
    assert env.messages == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": first},
        {"role": "assistant", "content": "x"},
        {"role": "user", "content": "x@1"},
        {"role": "assistant", "content": "x"},
        {"role": "user", "content": "x@2"},
    ]
    env.reset()
    assert len(env.messages) == 2


class Calculator(Tool):
    """Adds a and b; called as ``<tool_call>{"name": "calc", ...}</tool_call>``."""

    name = "calc"
    description = "Add two integers."
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }

    def __init__(self) -> None:
        self.closed = False

    async def call(self, args: dict[str, Any], sandbox: Sandbox | None = None) -> ToolResult:
        if args["a"] < 0:
            raise ValueError("negative")
        return ToolResult(output=str(args["a"] + args["b"]))

    async def aclose(self) -> None:
        self.closed = True


def calc(a: int, b: int | None = None) -> str:
    args = {"a": a} if b is None else {"a": a, "b": b}
    return "<tool_call>" + json.dumps({"name": "calc", "arguments": args}) + "</tool_call>"


def test_tool_env_routes_tool_calls_and_passes_answers_through() -> None:
    inner = FakeEnv(length=1)
    tool = Calculator()
    env = ToolEnv(inner, [tool], max_tool_uses=3, tool_reward=0.05)
    env.reset(0)
    obs, reward, term, trunc, info = env.step(f"let me add {calc(2, 3)}")
    assert (reward, term, trunc) == (0.05, False, False)
    assert obs == '<tool_response name="calc">\n5\n</tool_response>'
    assert info == {"tool_calls": ["calc"], "tool_errors": [], "tool_uses": {"calc": 1}}
    assert inner.k == 0  # the env never saw the tool call

    obs, reward, *_, info = env.step(calc(2))  # a bad call: shown, not rewarded
    assert "missing required argument(s): b" in obs and reward == 0.0
    assert info["tool_errors"] and info["tool_uses"] == {"calc": 2}

    obs, reward, *_, info = env.step(calc(-1, 1))  # the tool raises: shown to the agent
    assert "the tool failed: ValueError: negative" in obs and reward == 0.0

    obs, reward, *_, info = env.step(calc(1, 1))
    assert obs.startswith("Tool limit reached (3 calls)") and info["tool_errors"] == ["limit"]

    obs, reward, term, *_ = env.step("final answer")
    assert (obs, reward, term) == ("final answer@1", 1.0, True)
    env.reset()
    assert env.total_tool_uses == 0
    env.close()
    assert tool.closed


@pytest.mark.bwrap
def test_tool_env_runs_python_in_a_sandbox_through_astep() -> None:
    from gem_eval.sandbox.local import LocalSandbox
    from gem_eval.tools.python import PythonTool

    async def play() -> list[str]:
        async with LocalSandbox() as sandbox:
            tool = PythonTool()
            env = ToolEnv(FakeEnv(length=1), [tool], sandbox=sandbox)
            await env.areset(0)
            first, *_ = await env.astep("<python>x = 6 * 7</python>")
            second, *_ = await env.astep("<python>x</python>")
            await tool.aclose()
            return [first, second]

    first, second = asyncio.run(play())
    assert "(no output)" in first
    assert second == '<tool_response name="python">\n42\n</tool_response>'
