"""A model call cut at any moment (the episode's time limit, the per-call timeout) leaves
nothing behind: no coroutine that was never awaited, whichever client sent it.

litellm builds a request in a worker thread that returns the coroutine sending it; a
call cancelled while that thread ran used to drop the coroutine ("RuntimeWarning:
coroutine 'OpenAIChatCompletion.acompletion' was never awaited", printed by ``make
demo`` when its episodes hit their time limit).
"""

from __future__ import annotations

import asyncio
import gc
import warnings

import pytest

from gem_eval.clock import EpisodeClock
from gem_eval.models import GenerateConfig, RetryPolicy, get_model
from gem_eval.models.base import Model
from tests.fixtures.openai_server import Reply, serve

# Cancel after this many event-loop turns, then after these seconds: from before the
# request is built to while the server is answering.
TURNS = range(8)
DELAYS_S = (0.001, 0.005, 0.02, 0.1)
RETRY = RetryPolicy(max_retries=0, timeout_s=30.0)


def never_awaited(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if "never awaited" in str(w.message)]


@pytest.mark.parametrize("backend", ["litellm", "openai"])
def test_a_call_cut_at_any_moment_leaves_no_coroutine_unawaited(backend: str) -> None:
    async def cut_after(model: Model, turns: int, delay_s: float) -> None:
        call = asyncio.ensure_future(
            model.generate([{"role": "user", "content": "hi"}], None, GenerateConfig())
        )
        for _ in range(turns):
            await asyncio.sleep(0)
        await asyncio.sleep(delay_s)
        call.cancel()
        await asyncio.gather(call, return_exceptions=True)

    async def main(base_url: str) -> None:
        model = get_model("openai/fake", base_url=base_url, backend=backend, retry=RETRY)
        await model.start()
        try:
            await model.generate([{"role": "user", "content": "warm up"}])
            for turns in TURNS:
                await cut_after(model, turns, 0.0)
            for delay_s in DELAYS_S:
                await cut_after(model, 0, delay_s)
            # The episode's limit reached before its call could start.
            await asyncio.gather(
                EpisodeClock().run_until(model.generate([{"role": "user", "content": "x"}]), 0),
                return_exceptions=True,
            )
        finally:
            await model.aclose()

    answer = Reply("late", latency=0.3)
    with serve(lambda _body: answer) as server, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(main(server.base_url))
        gc.collect()  # a dropped coroutine warns when it is collected
    assert never_awaited(caught) == []
