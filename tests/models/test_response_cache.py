"""The model-response cache, driven through real model clients against the fake
OpenAI-compatible server, whose received requests are the model calls made."""

from __future__ import annotations

import asyncio
import itertools
import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from gem_eval.errors import ModelCallError
from gem_eval.models import GenerateConfig, ModelOutput, RetryPolicy, get_model
from gem_eval.models.base import Message, Model, ToolSchema
from gem_eval.models.reference import OracleModel
from gem_eval.models.response_cache import CachedModel, ResponseCache
from gem_eval.records import EpisodeRecord, EpisodeSpec, LimitsSpec, ModelSpec, TaskSpec
from gem_eval.runner import LocalExecutor, Runner
from tests.fixtures.openai_server import FakeOpenAIServer, Fault, Reply

FAST_RETRY = RetryPolicy(max_retries=2, timeout_s=5.0, initial_wait_s=0.01, max_wait_s=0.05)
HELLO: list[Message] = [{"role": "user", "content": "Guess a number."}]
ADD: ToolSchema = {
    "type": "function",
    "function": {"name": "add", "description": "a+b", "parameters": {"type": "object"}},
}
DAY = 86400.0


def client(server: FakeOpenAIServer, spec: str = "openai/fake", backend: str = "openai") -> Model:
    return get_model(
        spec, base_url=server.base_url, api_key="sk-x", backend=backend, retry=FAST_RETRY
    )


def counter(server: FakeOpenAIServer) -> None:
    """Answer each request with a new number: a reply served twice came from the cache."""
    numbers = itertools.count(1)
    server.handler = lambda _request: Reply(f"\\boxed{{{next(numbers)}}}")


async def ask(
    model: Model,
    cache: ResponseCache,
    *,
    salt: dict[str, Any] | None = None,
    messages: list[Message] = HELLO,
    tools: list[ToolSchema] | None = None,
    config: GenerateConfig | None = None,
    backend: str = "openai",
) -> ModelOutput:
    cached = CachedModel(model, cache, salt=salt or {"epoch": 0, "seed": 0}, backend=backend)
    return await cached.generate(messages, tools, config)


def test_the_same_request_is_served_from_the_cache(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    counter(openai_server)
    cache = ResponseCache(tmp_path / "r.sqlite")

    async def main() -> tuple[ModelOutput, ModelOutput]:
        async with client(openai_server) as model:
            return await ask(model, cache), await ask(model, cache)

    first, second = asyncio.run(main())
    assert len(openai_server.requests) == 1
    assert not first.cached and second.cached
    assert second.text == first.text == "\\boxed{1}"
    assert second.usage.input_tokens == first.usage.input_tokens > 0
    assert second.latency_s == 0.0
    assert cache.counts() == {"hits": 1, "misses": 1}
    assert cache.stats().entries == 1


def test_a_cached_reply_cost_nothing_and_keeps_its_tokens(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    cache = ResponseCache(tmp_path / "r.sqlite")

    async def main() -> tuple[ModelOutput, ModelOutput]:
        # A priced model (litellm knows gpt-4o's prices offline) served by the fake server.
        async with client(openai_server, "openai/gpt-4o", backend="litellm") as model:
            return await ask(model, cache), await ask(model, cache)

    first, second = asyncio.run(main())
    assert len(openai_server.requests) == 1
    assert first.usage.cost_usd is not None and first.usage.cost_usd > 0
    assert second.cached and second.usage.cost_usd == 0.0
    assert second.usage.output_tokens == first.usage.output_tokens > 0


def test_a_cached_reply_of_an_unpriced_model_keeps_its_cost_unknown(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    cache = ResponseCache(tmp_path / "r.sqlite")

    async def main() -> tuple[ModelOutput, ModelOutput]:
        async with client(openai_server, "openai/no-such-price", backend="litellm") as model:
            return await ask(model, cache), await ask(model, cache)

    first, second = asyncio.run(main())
    assert len(openai_server.requests) == 1
    assert first.usage.cost_usd is None  # litellm knows no price for it
    assert second.cached and second.usage.cost_usd is None
    assert second.usage.input_tokens == first.usage.input_tokens > 0


CHANGES: dict[str, dict[str, Any]] = {
    "epoch": {"salt": {"epoch": 1, "seed": 0}},
    "seed": {"salt": {"epoch": 0, "seed": 1}},
    "messages": {"messages": [{"role": "user", "content": "Guess again."}]},
    "tools": {"tools": [ADD]},
    "temperature": {"config": GenerateConfig(temperature=0.7)},
    "provider extra": {"config": GenerateConfig(extra={"top_k": 5})},
    "backend": {"backend": "litellm"},
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_anything_that_decides_the_reply_is_in_the_key(
    openai_server: FakeOpenAIServer, tmp_path: Path, change: str
) -> None:
    counter(openai_server)
    cache = ResponseCache(tmp_path / "r.sqlite")

    async def main() -> tuple[ModelOutput, ModelOutput, ModelOutput]:
        async with client(openai_server) as model:
            base = await ask(model, cache)
            changed = await ask(model, cache, **CHANGES[change])
            return base, changed, await ask(model, cache, **CHANGES[change])

    base, changed, again = asyncio.run(main())
    assert len(openai_server.requests) == 2  # the changed request was a call; its repeat not
    assert not changed.cached and changed.text != base.text
    assert again.cached and again.text == changed.text


def test_the_model_name_is_in_the_key_and_the_base_url_is_not(tmp_path: Path) -> None:
    from tests.fixtures.openai_server import serve

    cache = ResponseCache(tmp_path / "r.sqlite")

    async def main(server: FakeOpenAIServer, spec: str) -> ModelOutput:
        async with client(server, spec) as model:
            return await ask(model, cache)

    with serve() as one, serve() as other:  # one model served at two URLs
        counter(one)
        counter(other)
        first = asyncio.run(main(one, "openai/fake"))
        moved = asyncio.run(main(other, "openai/fake"))
        renamed = asyncio.run(main(other, "openai/other"))
        assert (len(one.requests), len(other.requests)) == (1, 1)
    assert moved.cached and moved.text == first.text
    assert not renamed.cached


def test_failed_calls_are_not_cached(openai_server: FakeOpenAIServer, tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "r.sqlite")
    openai_server.enqueue(Fault.status(400))  # refused for good: no retry

    async def main() -> ModelOutput:
        async with client(openai_server) as model:
            with pytest.raises(ModelCallError):
                await ask(model, cache)
            assert cache.stats().entries == 0
            return await ask(model, cache)

    output = asyncio.run(main())
    assert len(openai_server.requests) == 2 and not output.cached
    assert cache.stats().entries == 1


def test_reference_agents_are_not_cacheable(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="oracle"):
        CachedModel(OracleModel(), ResponseCache(tmp_path / "r.sqlite"))


def test_clear_by_age_and_by_model(openai_server: FakeOpenAIServer, tmp_path: Path) -> None:
    now = 1_000_000_000.0
    clock = [now - 10 * DAY]
    cache = ResponseCache(tmp_path / "r.sqlite", clock=lambda: clock[0])

    async def fill() -> None:
        async with client(openai_server) as fake, client(openai_server, "openai/b") as b:
            await ask(fake, cache, salt={"old": 1})
            await ask(b, cache, salt={"old": 1})
            clock[0] = now - 3600
            await ask(fake, cache, salt={"old": 0})
            await ask(b, cache, salt={"old": 0})

    asyncio.run(fill())
    clock[0] = now
    stats = cache.stats()
    assert stats.entries == 4 and stats.by_model == {"openai/b": 2, "openai/fake": 2}
    assert (stats.oldest, stats.newest) == (now - 10 * DAY, now - 3600)
    assert cache.count(older_than_s=7 * DAY) == 2
    assert cache.clear(older_than_s=7 * DAY) == 2
    assert cache.stats().oldest == now - 3600
    assert cache.clear(model="openai/b") == 1
    assert cache.stats().by_model == {"openai/fake": 1}
    assert cache.clear() == 1 and cache.stats().entries == 0


def _writer(path: str, worker: int, start: Any, rounds: int) -> None:
    """One process's share of the concurrency test: shared keys and its own, written
    and read back while the others do the same."""
    cache = ResponseCache(Path(path))
    start.wait()
    for i in range(rounds):
        cache.put(f"shared-{i}", "m", ModelOutput(text=f"shared-{i}"))
        cache.put(f"own-{worker}-{i}", "m", ModelOutput(text=f"own-{worker}-{i}"))
        got = cache.get(f"shared-{i}")
        if got is None or got.text != f"shared-{i}":
            raise SystemExit(f"worker {worker}: shared-{i} read back as {got}")
    cache.close()


def test_processes_writing_one_file_at_once_stay_consistent(tmp_path: Path) -> None:
    path, workers, rounds = tmp_path / "r.sqlite", 3, 150
    context = multiprocessing.get_context("spawn")  # fork would copy the server's threads
    start = context.Event()
    processes = [
        context.Process(target=_writer, args=(str(path), w, start, rounds)) for w in range(workers)
    ]
    for process in processes:
        process.start()
    start.set()
    for process in processes:
        process.join(timeout=120)
    assert [p.exitcode for p in processes] == [0] * workers
    cache = ResponseCache(path)
    assert cache.stats().entries == rounds * (workers + 1)
    for key in [f"shared-{i}" for i in range(rounds)] + [f"own-2-{i}" for i in range(rounds)]:
        output = cache.get(key)
        assert output is not None and output.text == key


def _run(
    executor: LocalExecutor, model: ModelSpec, specs: list[EpisodeSpec]
) -> list[EpisodeRecord]:
    records: list[EpisodeRecord] = []

    async def main() -> None:
        await executor.start([model])
        try:
            await Runner("r", executor, [records.append], concurrency=4).run(specs)
        finally:
            await executor.aclose()

    asyncio.run(main())
    return sorted(records, key=lambda r: r.key)


def test_a_second_run_makes_no_model_calls_and_scores_the_same(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    counter(openai_server)  # every call answers differently: a second run's calls would show
    cache = ResponseCache(tmp_path / "r.sqlite")
    model = ModelSpec(name="openai/fake", base_url=openai_server.base_url, backend="openai")
    task = TaskSpec(
        id="guess", env_id="game:GuessTheNumber-v0-easy", limits=LimitsSpec(max_turns=4)
    )
    specs = [
        EpisodeSpec(
            key=EpisodeSpec.make_key(model.name, task.id, sample, epoch),
            task=task,
            model=model,
            sample=sample,
            epoch=epoch,
            seed=sample,
        )
        for sample in range(3)
        for epoch in range(2)
    ]

    def executor() -> LocalExecutor:
        factory = lambda spec: client(openai_server)  # noqa: E731
        return LocalExecutor(factory, cache=cache)

    played = executor()
    first = _run(played, model, specs)
    calls = len(openai_server.requests)
    assert calls == sum(r.turns for r in first) and calls > len(specs)
    assert played.cache_counts() == {"hits": 0, "misses": calls}
    again = _run(executor(), model, specs)
    assert len(openai_server.requests) == calls  # not one call more
    assert cache.counts() == {"hits": calls, "misses": calls}  # both runs, one cache
    assert [r.score for r in again] == [r.score for r in first]
    assert [r.outcome for r in again] == [r.outcome for r in first]
    for old, new in zip(first, again, strict=True):
        assert old.trajectory is not None and new.trajectory is not None
        assert [s.output.text for s in new.trajectory.steps] == [
            s.output.text for s in old.trajectory.steps
        ]
        assert all(s.output.cached for s in new.trajectory.steps)
        assert not any(s.output.cached for s in old.trajectory.steps)
    # Each epoch had its own calls: the two epochs of a sample were answered apart.
    by_sample: dict[int, set[str]] = {r.sample: set() for r in first}
    for r in first:
        assert r.trajectory is not None
        by_sample[r.sample].add(r.trajectory.steps[0].output.text)
    assert all(len(texts) == 2 for texts in by_sample.values())


def test_the_oracle_is_played_uncached(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "r.sqlite")
    model = ModelSpec(name="oracle")
    task = TaskSpec(id="guess", env_id="game:GuessTheNumber-v0-easy")
    spec = EpisodeSpec(
        key=EpisodeSpec.make_key("oracle", "guess", 0, 0),
        task=task,
        model=model,
        sample=0,
        epoch=0,
        seed=0,
    )
    [record] = _run(LocalExecutor(lambda s: get_model(s.name), cache=cache), model, [spec])
    assert record.success
    assert cache.stats().entries == 0 and cache.counts() == {"hits": 0, "misses": 0}


def test_clearing_gives_the_space_back(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "r.sqlite")
    for n in range(50):
        cache.put(f"k{n}", "openai/fake", ModelOutput(text=f"{n}" * 20_000))
    full = cache.stats().size_bytes
    assert full > 50 * 20_000
    assert cache.clear(model="openai/other") == 0
    assert cache.stats().size_bytes == full  # nothing removed: nothing rewritten
    assert cache.clear() == 50
    assert cache.stats().size_bytes < full / 10  # vacuumed, the log truncated
    cache.close()
