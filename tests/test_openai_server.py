"""The fake OpenAI server, driven by litellm and the openai SDK as a vLLM server would be.

The fault table below also records which exception each client raises for each fault.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import openai
import pytest

from tests.fixtures.openai_server import (
    FakeOpenAIServer,
    Fault,
    Reply,
    ToolCallSpec,
    serve,
    tool_loop,
)

MESSAGES = [{"role": "user", "content": "What is 1 + 0? Answer in \\boxed{}."}]
PROMPT_TOKENS = len(MESSAGES[0]["content"]) // 4  # the server's estimate: 4 characters a token
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def litellm() -> ModuleType:
    """litellm, imported offline (3-6 s, so only when a test here needs it)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


Call = Callable[..., Awaitable[Any]]


def clients(litellm: ModuleType, server: FakeOpenAIServer) -> dict[str, Call]:
    """One chat call per client, neither retrying; keyword arguments pass through."""

    async def via_litellm(**kwargs: Any) -> Any:
        kwargs.setdefault("messages", MESSAGES)
        return await litellm.acompletion(
            model="openai/fake", api_base=server.base_url, api_key="x", num_retries=0, **kwargs
        )

    async def via_openai(**kwargs: Any) -> Any:
        kwargs.setdefault("messages", MESSAGES)
        async with openai.AsyncOpenAI(
            base_url=server.base_url, api_key="x", max_retries=0
        ) as client:
            response = await client.chat.completions.create(model="fake", **kwargs)
            if kwargs.get("stream"):
                return [chunk async for chunk in response]
            return response

    return {"litellm": via_litellm, "openai": via_openai}


CLIENTS = ["litellm", "openai"]


# -- replies -----------------------------------------------------------------------------------


@pytest.mark.parametrize("client", CLIENTS)
def test_plain_reply_with_usage(litellm: ModuleType, openai_server: FakeOpenAIServer, client: str):
    openai_server.enqueue(Reply("The answer is \\boxed{1}."))  # 24 chars
    response = asyncio.run(clients(litellm, openai_server)[client]())
    choice = response.choices[0]
    assert choice.message.content == "The answer is \\boxed{1}."
    assert choice.message.tool_calls is None
    assert choice.finish_reason == "stop"
    assert response.usage.prompt_tokens == PROMPT_TOKENS
    assert response.usage.completion_tokens == 24 // 4 + 1
    assert response.usage.total_tokens == PROMPT_TOKENS + 7
    assert response.usage.prompt_tokens_details.cached_tokens == 0
    (seen,) = openai_server.requests
    assert seen.authorization == "Bearer x"
    assert seen.body["model"] == "fake"
    assert seen.body["messages"] == MESSAGES


@pytest.mark.parametrize("client", CLIENTS)
def test_two_tool_calls(litellm: ModuleType, openai_server: FakeOpenAIServer, client: str):
    openai_server.enqueue(
        Reply(
            tool_calls=[
                ToolCallSpec("python", {"code": "print(1)"}),
                ToolCallSpec("search", {"query": "gem", "k": 3}, id="call_fixed"),
            ]
        )
    )
    response = asyncio.run(clients(litellm, openai_server)[client]())
    choice = response.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    first, second = choice.message.tool_calls
    assert (first.type, first.function.name) == ("function", "python")
    assert json.loads(first.function.arguments) == {"code": "print(1)"}
    assert first.id.startswith("call_")
    assert (second.id, second.function.name) == ("call_fixed", "search")
    assert json.loads(second.function.arguments) == {"query": "gem", "k": 3}


def test_reply_overrides(litellm: ModuleType, openai_server: FakeOpenAIServer):
    usage = {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107}
    openai_server.enqueue(Reply("cut", finish_reason="length", usage=usage))
    response = asyncio.run(clients(litellm, openai_server)["openai"]())
    assert response.choices[0].finish_reason == "length"
    assert response.usage.total_tokens == 107


# -- streaming ---------------------------------------------------------------------------------

STREAM = {"stream": True, "stream_options": {"include_usage": True}}


def test_stream_text_litellm(litellm: ModuleType, openai_server: FakeOpenAIServer):
    openai_server.enqueue(Reply("Let me think. The answer is \\boxed{1}."))

    async def main() -> Any:
        stream = await clients(litellm, openai_server)["litellm"](**STREAM)
        chunks = [chunk async for chunk in stream]
        return litellm.stream_chunk_builder(chunks, messages=MESSAGES)

    response = asyncio.run(main())
    assert response.choices[0].message.content == "Let me think. The answer is \\boxed{1}."
    assert response.choices[0].finish_reason == "stop"
    assert response.usage.prompt_tokens == PROMPT_TOKENS
    assert response.usage.completion_tokens == 38 // 4 + 1


def test_stream_tool_calls_litellm(litellm: ModuleType, openai_server: FakeOpenAIServer):
    calls = [ToolCallSpec("python", {"code": "x = 1\nprint(x + 41)"}), ToolCallSpec("done")]
    openai_server.enqueue(Reply("Running code.", tool_calls=calls))

    async def main() -> Any:
        stream = await clients(litellm, openai_server)["litellm"](**STREAM)
        chunks = [chunk async for chunk in stream]
        return litellm.stream_chunk_builder(chunks, messages=MESSAGES)

    message = asyncio.run(main()).choices[0].message
    assert message.content == "Running code."
    first, second = message.tool_calls
    assert first.function.name == "python"
    assert json.loads(first.function.arguments) == {"code": "x = 1\nprint(x + 41)"}
    assert (second.function.name, json.loads(second.function.arguments)) == ("done", {})


def test_stream_openai(litellm: ModuleType, openai_server: FakeOpenAIServer):
    calls = [ToolCallSpec("python", {"code": "print('a fairly long line')"}), ToolCallSpec("done")]
    openai_server.enqueue(Reply("Some text, then tools.", tool_calls=calls))
    chunks = asyncio.run(clients(litellm, openai_server)["openai"](**STREAM))
    text = ""
    names: dict[int, str] = {}
    arguments: dict[int, str] = {}
    for chunk in chunks[:-1]:
        (choice,) = chunk.choices
        text += choice.delta.content or ""
        for call in choice.delta.tool_calls or []:
            names[call.index] = names.get(call.index, "") + (call.function.name or "")
            arguments[call.index] = arguments.get(call.index, "") + call.function.arguments
    assert text == "Some text, then tools."
    assert names == {0: "python", 1: "done"}
    assert json.loads(arguments[0]) == {"code": "print('a fairly long line')"}
    assert chunks[-2].choices[0].finish_reason == "tool_calls"
    assert chunks[-1].choices == [] and chunks[-1].usage.prompt_tokens == PROMPT_TOKENS


def test_stream_without_usage_option_sends_no_usage_chunk(
    litellm: ModuleType, openai_server: FakeOpenAIServer
):
    chunks = asyncio.run(clients(litellm, openai_server)["openai"](stream=True))
    assert all(chunk.choices for chunk in chunks)
    assert all(chunk.usage is None for chunk in chunks)


# -- faults ------------------------------------------------------------------------------------

# fault, litellm exception class name, openai exception class (None: no exception at all).
FAULTS: list[tuple[str, Fault, str | None, type[BaseException] | None]] = [
    ("429", Fault.status(429, retry_after=2), "RateLimitError", openai.RateLimitError),
    ("500", Fault.status(500), "InternalServerError", openai.InternalServerError),
    ("503", Fault.status(503), "ServiceUnavailableError", openai.InternalServerError),
    ("400", Fault.status(400), "BadRequestError", openai.BadRequestError),
    ("401", Fault.status(401), "AuthenticationError", openai.AuthenticationError),
    ("404", Fault.status(404), "NotFoundError", openai.NotFoundError),
    ("hang", Fault.hang(5), "Timeout", openai.APITimeoutError),
    # litellm wraps a body that is not JSON, and a lost connection, as HTTP 500 errors.
    ("malformed", Fault.malformed(), "InternalServerError", json.JSONDecodeError),
    ("drop", Fault.drop(), "InternalServerError", openai.APIConnectionError),
    # Neither client objects to an empty choices list: the caller must check.
    ("no_choices", Fault.no_choices(), None, None),
]


@pytest.mark.parametrize(
    ("fault", "litellm_error", "openai_error"),
    [row[1:] for row in FAULTS],
    ids=[row[0] for row in FAULTS],
)
def test_fault_raises(
    litellm: ModuleType,
    openai_server: FakeOpenAIServer,
    fault: Fault,
    litellm_error: str | None,
    openai_error: type[BaseException] | None,
):
    expected = {
        "litellm": getattr(litellm.exceptions, litellm_error) if litellm_error else None,
        "openai": openai_error,
    }
    for name, call in clients(litellm, openai_server).items():
        openai_server.enqueue(fault)
        start = time.perf_counter()
        if expected[name] is None:
            assert asyncio.run(call(timeout=1)).choices == []
            continue
        with pytest.raises(Exception) as caught:  # the exact type is checked below
            asyncio.run(call(timeout=1))
        elapsed = time.perf_counter() - start
        assert type(caught.value) is expected[name], name
        if fault.kind == "status":
            assert caught.value.status_code == fault.code
            assert caught.value.response.status_code == fault.code
        if fault.kind == "hang":  # fails at the client's timeout, not after the server's 5 s
            assert 0.9 < elapsed < 2.5, name
    assert len(openai_server.requests) == 2


# Streamed, the 200 faults surface while iterating; litellm raises MidStreamFallbackError (500).
STREAM_FAULTS: list[tuple[str, Fault, str, type[BaseException] | None]] = [
    ("malformed", Fault.malformed(), "MidStreamFallbackError", json.JSONDecodeError),
    ("no_choices", Fault.no_choices(), "MidStreamFallbackError", None),
    ("drop", Fault.drop(), "InternalServerError", openai.APIConnectionError),
]


@pytest.mark.parametrize(
    ("fault", "litellm_error", "openai_error"),
    [row[1:] for row in STREAM_FAULTS],
    ids=[row[0] for row in STREAM_FAULTS],
)
def test_stream_fault_raises(
    litellm: ModuleType,
    openai_server: FakeOpenAIServer,
    fault: Fault,
    litellm_error: str,
    openai_error: type[BaseException] | None,
):
    calls = clients(litellm, openai_server)

    async def drain_litellm() -> list[Any]:
        return [chunk async for chunk in await calls["litellm"](stream=True)]

    openai_server.enqueue(fault, fault)
    with pytest.raises(Exception) as caught:  # the exact type is checked below
        asyncio.run(drain_litellm())
    assert type(caught.value) is getattr(litellm.exceptions, litellm_error)
    if openai_error is None:
        assert [chunk.choices for chunk in asyncio.run(calls["openai"](stream=True))] == [[]]
        return
    with pytest.raises(openai_error):
        asyncio.run(calls["openai"](stream=True))


def test_retry_after_is_on_the_exception_response(
    litellm: ModuleType, openai_server: FakeOpenAIServer
):
    calls = clients(litellm, openai_server)
    openai_server.enqueue(Fault.status(429, retry_after=2.5), Fault.status(429, retry_after=3))
    with pytest.raises(litellm.RateLimitError) as from_litellm:
        asyncio.run(calls["litellm"]())
    assert from_litellm.value.response.headers["retry-after"] == "2.5"
    assert from_litellm.value.litellm_response_headers["retry-after"] == "2.5"
    with pytest.raises(openai.RateLimitError) as from_openai:
        asyncio.run(calls["openai"]())
    assert from_openai.value.response.headers["retry-after"] == "3"
    assert from_openai.value.body["code"] == 429


def test_status_fault_with_custom_body(litellm: ModuleType, openai_server: FakeOpenAIServer):
    openai_server.enqueue(Fault.status(400, body={"error": {"message": "context too long"}}))
    with pytest.raises(openai.BadRequestError, match="context too long"):
        asyncio.run(clients(litellm, openai_server)["openai"]())


# -- scripting, latency, scenarios -------------------------------------------------------------


def test_queue_first_then_handler_then_reset(openai_server: FakeOpenAIServer):
    openai_server.handler = lambda request: Reply(f"echo {request['messages'][-1]['content']}")
    openai_server.enqueue(Reply("one"), Reply("two"))
    said = [_post(openai_server, content=str(i))["choices"][0]["message"]["content"] for i in "abc"]
    assert said == ["one", "two", "echo c"]
    assert [r.body["messages"][0]["content"] for r in openai_server.requests] == ["a", "b", "c"]
    openai_server.enqueue(Reply("stale"))
    openai_server.reset()
    assert openai_server.requests == []
    assert _post(openai_server)["choices"][0]["message"]["content"] == "echo hi"


def test_default_handler_answers_boxed_one(openai_server: FakeOpenAIServer):
    assert _post(openai_server)["choices"][0]["message"]["content"] == "\\boxed{1}"


def test_a_raising_handler_answers_500(openai_server: FakeOpenAIServer):
    openai_server.handler = lambda request: 1 / 0  # type: ignore[assignment,return-value]
    with pytest.raises(urllib.error.HTTPError) as caught:
        _post(openai_server)
    assert caught.value.code == 500


def test_concurrent_requests_overlap(litellm: ModuleType):
    with serve(latency=0.5) as server:
        call = clients(litellm, server)["litellm"]

        async def main() -> list[Any]:
            return await asyncio.gather(*(call() for _ in range(32)))

        start = time.perf_counter()
        responses = asyncio.run(main())
        elapsed = time.perf_counter() - start
    assert elapsed < 8, f"32 requests at 0.5 s each took {elapsed:.1f} s: they did not overlap"
    assert {r.choices[0].message.content for r in responses} == {"\\boxed{1}"}
    assert len(server.requests) == 32


def test_tool_loop_scenario_over_five_calls(litellm: ModuleType):
    with serve(tool_loop(tool_calls_per_answer=4)) as server:
        call = clients(litellm, server)["litellm"]
        messages: list[dict[str, Any]] = list(MESSAGES)

        async def episode() -> str:
            while True:
                message = (await call(messages=messages)).choices[0].message
                messages.append(message.model_dump(exclude_none=True))
                if not message.tool_calls:
                    return str(message.content)
                for tool_call in message.tool_calls:
                    assert tool_call.function.name == "python"
                    assert json.loads(tool_call.function.arguments) == {"code": "print(1)"}
                    messages.append({"role": "tool", "tool_call_id": tool_call.id, "content": "1"})

        assert asyncio.run(episode()) == "\\boxed{1}"
        assert len(server.requests) == 5
        # A new user turn starts the count again.
        messages.append({"role": "user", "content": "Again."})
        asyncio.run(episode())
        assert len(server.requests) == 10


def test_models_and_health(openai_server: FakeOpenAIServer):
    with urllib.request.urlopen(f"{openai_server.base_url}/models", timeout=5) as response:
        assert json.load(response)["data"][0]["id"] == "fake"
    health = openai_server.base_url.removesuffix("/v1") + "/health"
    with urllib.request.urlopen(health, timeout=5) as response:
        assert response.status == 200


def test_stop_closes_the_port():
    server = FakeOpenAIServer().start()
    assert server.base_url.startswith("http://127.0.0.1:")
    assert _post(server)["choices"]
    server.stop()
    server.stop()  # idempotent
    with pytest.raises(urllib.error.URLError):
        _post(server)


def test_start_on_a_busy_port_raises():
    with serve() as server, pytest.raises(OSError):
        FakeOpenAIServer(port=server.port).start()


def test_subprocess_prints_ready_and_serves():
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "tests.fixtures.openai_server", "--port", "0"),
            *("--latency", "0.01", "--scenario", "tool_loop", "--tool-calls", "1"),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        word, base_url = process.stdout.readline().split()
        assert word == "READY"
        server = FakeOpenAIServer(port=int(base_url.rsplit(":", 1)[1].split("/")[0]))
        assert server.base_url == base_url
        first = _post(server)["choices"][0]
        assert first["finish_reason"] == "tool_calls"
        assert first["message"]["tool_calls"][0]["function"]["name"] == "python"
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0


def _post(server: FakeOpenAIServer, content: str = "hi") -> dict[str, Any]:
    body = {"model": "fake", "messages": [{"role": "user", "content": content}]}
    request = urllib.request.Request(
        f"{server.base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        result: dict[str, Any] = json.load(response)
    return result
