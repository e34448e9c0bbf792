"""The run's model endpoint, driven by the clients agents use (the ``openai`` SDK, plain
and streamed; raw HTTP): every call reaches the run's model and its line's ``on_call``,
tokens open only their own line, failures keep their status, the budget stops calls."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from gem_eval.budget import Budget
from gem_eval.endpoint import Call, EpisodeLine, ModelEndpoint
from gem_eval.errors import ModelCallError
from gem_eval.models.base import GenerateConfig, ModelOutput, ToolCall, Usage
from gem_eval.models.scripted import ScriptedModel


def served(test: Callable[[ModelEndpoint], Awaitable[None]]) -> Callable[[], None]:
    """The test, run on a started endpoint (closed after)."""

    def run() -> None:
        async def main() -> None:
            endpoint = ModelEndpoint()
            await endpoint.start()
            try:
                await test(endpoint)
            finally:
                await endpoint.aclose()

        asyncio.run(main())

    run.__name__ = test.__name__
    return run


def _client(endpoint: ModelEndpoint, token: str) -> Any:
    import openai

    return openai.AsyncOpenAI(base_url=endpoint.base_url, api_key=token, max_retries=0)


@served
async def test_a_call_reaches_the_run_model_and_is_heard(endpoint: ModelEndpoint) -> None:
    model = ScriptedModel(["hello there"])
    heard: list[Call] = []
    line = EpisodeLine(model, GenerateConfig(temperature=0.3), on_call=heard.append)
    token = endpoint.open(line)
    reply = await _client(endpoint, token).chat.completions.create(
        model="my/model", messages=[{"role": "user", "content": "hi"}], max_tokens=50
    )
    assert reply.choices[0].message.content == "hello there"
    assert reply.model == "my/model"
    [call] = heard
    assert call.messages == [{"role": "user", "content": "hi"}]
    assert (call.config.temperature, call.config.max_tokens) == (0.3, 50)  # run's + agent's
    assert call.output is not None and call.output.text == "hello there"


@served
async def test_streamed_tool_calls_rebuild_in_the_client(endpoint: ModelEndpoint) -> None:
    call = ToolCall(id="c1", name="bash", arguments='{"command": "ls"}')
    output = ModelOutput(text="", tool_calls=[call], usage=Usage(input_tokens=7, output_tokens=3))
    token = endpoint.open(EpisodeLine(ScriptedModel([output])))
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]
    stream = await _client(endpoint, token).chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "list"}],
        tools=tools,
        stream=True,
        stream_options={"include_usage": True},
    )
    names, arguments, usage, finish = [], "", None, None
    async for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            finish = choice.finish_reason or finish
            for delta in choice.delta.tool_calls or []:
                names.append(delta.function.name)
                arguments += delta.function.arguments or ""
    assert names == ["bash"] and json.loads(arguments) == {"command": "ls"}
    assert finish == "tool_calls"
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens) == (7, 3)


@served
async def test_a_token_opens_only_its_own_line(endpoint: ModelEndpoint) -> None:
    import openai

    mine = endpoint.open(EpisodeLine(ScriptedModel(["a"])))
    with pytest.raises(openai.AuthenticationError):
        await _client(endpoint, "gem-not-a-token").chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}]
        )
    endpoint.close(mine)
    with pytest.raises(openai.AuthenticationError):
        await _client(endpoint, mine).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}]
        )


@served
async def test_a_failed_call_keeps_its_status_and_is_heard(endpoint: ModelEndpoint) -> None:
    import openai

    overflow = ModelCallError(
        "This model's maximum context length is 8192 tokens", status=400, transient=False
    )
    heard: list[Call] = []
    token = endpoint.open(EpisodeLine(ScriptedModel([overflow]), on_call=heard.append))
    with pytest.raises(openai.BadRequestError, match="maximum context length"):
        await _client(endpoint, token).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}]
        )
    assert len(heard) == 1 and heard[0].error is overflow and heard[0].output is None


@served
async def test_a_spent_budget_stops_the_line(endpoint: ModelEndpoint) -> None:
    import openai

    priced = ModelOutput(text="ok", usage=Usage(cost_usd=1.0))
    budget = Budget(cap=1.0)
    line = EpisodeLine(ScriptedModel([priced, priced]), budget=budget)
    client = _client(endpoint, endpoint.open(line))
    messages = [{"role": "user", "content": "x"}]
    await client.chat.completions.create(model="m", messages=messages)
    assert budget.spent == 1.0 and line.stopped is None
    with pytest.raises(openai.RateLimitError):
        await client.chat.completions.create(model="m", messages=messages)
    assert line.stopped is not None and line.calls == 1


@served
async def test_a_call_the_model_client_gave_up_on_stops_the_line(endpoint: ModelEndpoint) -> None:
    import openai

    refused = ModelCallError("connection refused: [Errno 111] Connect call failed", transient=True)
    model = ScriptedModel([refused, "never asked"])
    stops: list[str | None] = []
    line = EpisodeLine(model)
    line.on_stop = lambda: stops.append(line.stopped)
    client = _client(endpoint, endpoint.open(line))
    messages = [{"role": "user", "content": "x"}]
    for _ in range(2):  # the agent retries: answered at once, the model is not called
        with pytest.raises(openai.APIStatusError, match="connection refused") as failed:
            await client.chat.completions.create(model="m", messages=messages)
        assert failed.value.status_code == 502  # no server answered the model client
    assert line.failure is refused and line.calls == 1
    assert stops == ["connection refused: [Errno 111] Connect call failed"]


@served
async def test_a_failure_that_is_the_agents_does_not_stop_the_line(endpoint: ModelEndpoint) -> None:
    import openai

    overflow = ModelCallError("maximum context length is 8192 tokens", status=400, transient=False)
    line = EpisodeLine(ScriptedModel([overflow, "summarised"]))
    client = _client(endpoint, endpoint.open(line))
    messages = [{"role": "user", "content": "x"}]
    with pytest.raises(openai.BadRequestError):
        await client.chat.completions.create(model="m", messages=messages)
    reply = await client.chat.completions.create(model="m", messages=messages)
    assert reply.choices[0].message.content == "summarised"
    assert (line.stopped, line.failure, line.calls) == (None, None, 2)


@served
async def test_calls_of_two_episodes_in_flight_stay_apart(endpoint: ModelEndpoint) -> None:
    heard: dict[str, list[Call]] = {"a": [], "b": []}
    tokens = {
        name: endpoint.open(EpisodeLine(ScriptedModel([name] * 5), on_call=heard[name].append))
        for name in heard
    }

    async def ask(name: str) -> str:
        reply = await _client(endpoint, tokens[name]).chat.completions.create(
            model="m", messages=[{"role": "user", "content": name}]
        )
        return str(reply.choices[0].message.content)

    answers = await asyncio.gather(*(ask(n) for n in ["a", "b"] * 5))
    assert answers == ["a", "b"] * 5
    assert len(heard["a"]) == len(heard["b"]) == 5
    assert all(c.messages[0]["content"] == "a" for c in heard["a"])
