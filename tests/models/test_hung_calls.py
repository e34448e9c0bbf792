"""Hung calls through the real HTTP clients: cut, retried, and never answered twice.

The fake server counts the successful replies it delivers per step (a conversation
prefix) on connections the client still held; a duplicated step is one it answered
twice, which the harness must never cause.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from gem_eval import make
from gem_eval.agent import run_episode
from gem_eval.models import RetryPolicy, get_model
from gem_eval.models.call_timeout import CallTimeout
from gem_eval.models.chat_api import ChatAPIModel
from gem_eval.trajectory import Trajectory
from tests.fixtures.openai_server import FakeOpenAIServer, Fault, Reply, reply_with

# game:GuessTheNumber-v0-easy with seed 0 hides 7.
EASY, SEED = "game:GuessTheNumber-v0-easy", 0
CUT_S = 2.0  # the adapted timeout in these tests: a fast model's calls, cut at the floor
RETRY = RetryPolicy(max_retries=3, timeout_s=30.0, initial_wait_s=0.01, max_wait_s=0.05)


@pytest.fixture(params=["litellm", "openai"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def adapted_model(server: FakeOpenAIServer, backend: str) -> ChatAPIModel:
    """A warm model whose timeout has adapted to fast calls: a call is cut after ``CUT_S``.

    One call first, under the full timeout: litellm's first call imports it (seconds).
    """
    model = get_model(
        "openai/fake", base_url=server.base_url, backend=backend, retry=RETRY, concurrency=8
    )
    assert isinstance(model, ChatAPIModel)
    asyncio.run(model.generate([{"role": "user", "content": "warm up"}]))
    # The server counts a reply after writing it, on its own thread: a reset before that
    # count would let the warm-up's reply land in the test's statistics.
    wait_for_stats(server, "replies_delivered", 1)
    server.reset()
    model.call_timeout = CallTimeout(ceiling_s=RETRY.timeout_s, floor_s=CUT_S, min_samples=0)
    return model


def wait_for_stats(server: FakeOpenAIServer, key: str, value: int) -> dict[str, Any]:
    """The server's statistics once ``stats[key]`` reached ``value`` (or after 10 s)."""
    deadline = time.monotonic() + 10
    while True:
        stats = server.stats()
        if stats[key] >= value or time.monotonic() > deadline:
            return stats
        time.sleep(0.05)


def test_a_hung_call_is_cut_retried_and_no_rate_limit(
    openai_server: FakeOpenAIServer, backend: str
) -> None:
    model = adapted_model(openai_server, backend)
    openai_server.enqueue(Fault.hang(20), Reply("hi"))

    async def main() -> Any:
        async with model:
            return await model.generate([{"role": "user", "content": "hello"}])

    output = asyncio.run(main())
    assert output.text == "hi" and output.retries == 1
    # Not a rate limit: the connection limit kept its size and epoch, and no slot is held.
    assert (model.limit.limit, model.limit.epoch, model.limit.cuts) == (8, 0, 0)
    assert model.limit.in_flight == 0
    wait_for_stats(openai_server, "abandoned", 1)
    stats = wait_for_stats(openai_server, "replies_delivered", 1)  # counted after writing
    assert stats["answers"] == {"hang": 1, "reply": 1}
    assert stats["abandoned"] == 1  # the client hung up: the server dropped the request
    assert (stats["replies_delivered"], stats["duplicated_steps"]) == (1, 0)


def play(model: ChatAPIModel, linger_s: float) -> Trajectory:
    """One episode; the event loop then lives on for ``linger_s``, as in a longer run."""

    async def main() -> Trajectory:
        async with model:
            traj = await run_episode(make(EASY), model, seed=SEED)
            await asyncio.sleep(linger_s)
            return traj

    return asyncio.run(main())


def test_a_step_is_never_answered_twice(openai_server: FakeOpenAIServer, backend: str) -> None:
    """The second step hangs a little longer than the cut, then the server would answer it.

    The harness cuts it and asks again; the hung request must be gone by then (its
    connection closed), or the server answers the same step twice.
    """
    model = adapted_model(openai_server, backend)
    openai_server.handler = reply_with("\\boxed{7}")  # what the hung request would answer
    openai_server.enqueue(Reply("\\boxed{5}"), Fault.hang(CUT_S + 0.5), Reply("\\boxed{7}"))
    traj = play(model, linger_s=1.5)  # past the hang: a live request would be answered
    assert traj.outcome == "completed" and traj.success
    assert [step.output.retries for step in traj.steps] == [0, 1]
    wait_for_stats(openai_server, "abandoned", 1)
    stats = wait_for_stats(openai_server, "replies_delivered", 2)
    assert stats["steps"] == 2 and stats["duplicated_steps"] == 0
    assert sorted(stats["replies_per_step"].values()) == [1, 1]
    assert stats["requests"] == 3 and stats["abandoned"] == 1  # the hung one, dropped


def test_a_slow_reply_within_the_timeout_is_used(
    openai_server: FakeOpenAIServer, backend: str
) -> None:
    model = adapted_model(openai_server, backend)
    openai_server.enqueue(Fault.hang(CUT_S / 5), Reply("never sent"))
    openai_server.handler = reply_with("late but fine")

    async def main() -> Any:
        async with model:
            return await model.generate([{"role": "user", "content": "hello"}])

    output = asyncio.run(main())
    assert output.text == "late but fine" and output.retries == 0
    stats = wait_for_stats(openai_server, "replies_delivered", 1)  # counted after writing
    assert (stats["requests"], stats["replies_delivered"], stats["abandoned"]) == (1, 1, 0)
