from __future__ import annotations

import json
from typing import Any

import pytest

from gem_eval import make
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


class Calculator:
    """A tool called as ``<calc>{"a": 1, "b": 2}</calc>``; adds a and b."""

    name = "calc"

    def parse(self, action: str) -> Any | None:
        if action.startswith("<calc>") and action.endswith("</calc>"):
            return json.loads(action[6:-7])
        return None

    def execute(self, call: Any) -> str:
        return str(call["a"] + call["b"])


def test_tool_env_routes_tool_calls_and_passes_answers_through() -> None:
    inner = FakeEnv(length=1)
    env = ToolEnv(inner, [Calculator()], max_tool_uses=2, tool_reward=0.05)
    env.reset(0)
    obs, reward, term, trunc, info = env.step('<calc>{"a": 2, "b": 3}</calc>')
    assert (obs, reward, term, trunc) == ("5", 0.05, False, False)
    assert info == {"tool": "calc", "tool_uses": {"calc": 1}}
    assert inner.k == 0  # the env never saw the tool call

    obs, reward, *_, info = env.step('<calc>{"a": 2}</calc>')
    assert obs == "Tool error: KeyError: 'b'" and reward == 0.0
    assert info["tool_error"] == "KeyError: 'b'"

    obs, reward, *_, info = env.step('<calc>{"a": 1, "b": 1}</calc>')
    assert obs.startswith("Tool limit reached (2 calls)") and info["tool_error"] == "limit"

    obs, reward, term, *_ = env.step("final answer")
    assert (obs, reward, term) == ("final answer@1", 1.0, True)
    env.reset()
    assert env.total_tool_uses == 0
