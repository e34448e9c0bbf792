"""The episode time limit when episodes share one server slot (a local llama.cpp server).

Several episodes play at once against a real HTTP server through a model allowed one
call at a time, as ``local/gemma3-270m`` is: the time an episode waits for the slot is
not its own, and must not end it; the time its own calls take still does.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gem_eval.agent import Limits, run_episode
from gem_eval.models import RetryPolicy, get_model
from gem_eval.trajectory import Trajectory
from tests.fakes import FakeEnv
from tests.fixtures.openai_server import FakeOpenAIServer, Reply, serve

TURNS = 3  # FakeEnv(length=3): three answers end an episode
QUICK_S, SLOW_S = 0.1, 0.9  # a call's latency at the server
LIMIT = Limits(max_turns=10, max_time_s=2.0)
RETRY = RetryPolicy(max_retries=0, timeout_s=30.0)


def answer(body: dict[str, Any]) -> Reply:
    """Slow for an episode whose system message says so."""
    slow = body["messages"][0]["content"] == "slow"
    return Reply("a guess", latency=SLOW_S if slow else QUICK_S)


def play(server: FakeOpenAIServer, backend: str, systems: list[str | None]) -> list[Trajectory]:
    """One episode per entry of ``systems`` (its system message), all at once, through
    one model instance that takes one call at a time."""
    model = get_model(
        "openai/fake", base_url=server.base_url, backend=backend, retry=RETRY, concurrency=1
    )

    async def main() -> list[Trajectory]:
        await model.start()
        try:  # the first call pays the client's cold start (litellm: seconds), not an episode
            await model.generate([{"role": "user", "content": "warm up"}])
            episodes = [
                run_episode(FakeEnv(TURNS), model, limits=LIMIT, seed=n, system_prompt=system)
                for n, system in enumerate(systems)
            ]
            return list(await asyncio.gather(*episodes))
        finally:
            await model.aclose()

    return asyncio.run(main())


@pytest.mark.parametrize("backend", ["openai", "litellm"])
def test_waiting_for_the_slot_does_not_count_against_the_time_limit(backend: str) -> None:
    with serve(answer) as server:
        trajs = play(server, backend, [None] * 10)  # 30 calls of 0.1 s, one at a time
    assert [(t.outcome, t.truncated_by, len(t.steps)) for t in trajs] == [
        ("completed", None, TURNS)
    ] * 10
    # The episodes did wait longer than their limit: it was left out, not avoided.
    assert max(t.duration_s for t in trajs) > LIMIT.max_time_s  # type: ignore[operator]
    assert all(t.queued_s > 0 for t in trajs[1:])
    assert all(t.duration_s - t.queued_s < LIMIT.max_time_s for t in trajs)  # type: ignore[operator]


@pytest.mark.parametrize("backend", ["openai", "litellm"])
def test_an_episode_whose_own_calls_take_too_long_is_still_cut(backend: str) -> None:
    with serve(answer) as server:
        trajs = play(server, backend, ["slow", None, None, None])
    slow, *quick = trajs
    # Three calls of 0.9 s exceed 2 s of its own time: cut during the third.
    assert (slow.outcome, slow.truncated_by) == ("truncated", "max_time")
    assert len(slow.steps) < TURNS
    assert 2.0 <= slow.duration_s - slow.queued_s < 3.0
    assert [(t.outcome, len(t.steps)) for t in quick] == [("completed", TURNS)] * 3
