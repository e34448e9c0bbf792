"""The HTTP models against a real OpenAI-compatible server on loopback.

Every test runs through both backends: litellm (any provider, the way a user's vLLM
server is driven) and the direct openai client (the fast path).
"""

from __future__ import annotations

import asyncio
import gc
import socket
import warnings
from typing import Any

import pytest

from gem_eval import make
from gem_eval.agent import Limits, run_episode
from gem_eval.errors import MissingAPIKeyError, ModelCallError, UserError
from gem_eval.models import GenerateConfig, RetryPolicy, get_model
from gem_eval.models.chat_api import ChatAPIModel
from gem_eval.models.retry import Failure, classify
from gem_eval.trajectory import Trajectory
from tests.agent.test_loop import Add
from tests.fixtures.openai_server import FakeOpenAIServer, Fault, Reply, ToolCallSpec

# game:GuessTheNumber-v0-easy with seed 0 hides 7.
EASY, SEED = "game:GuessTheNumber-v0-easy", 0
FAST_RETRY = RetryPolicy(max_retries=3, timeout_s=1.0, initial_wait_s=0.01, max_wait_s=0.05)


@pytest.fixture(params=["litellm", "openai"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def model_for(server: FakeOpenAIServer, backend: str, **kwargs: Any) -> ChatAPIModel:
    options: dict[str, Any] = {"retry": FAST_RETRY} | kwargs
    model = get_model(
        "openai/fake",
        base_url=server.base_url,
        api_key="sk-test-key-0123456789abcdef",
        backend=backend,
        **options,
    )
    assert isinstance(model, ChatAPIModel)
    return model


def play(model: ChatAPIModel, **kwargs: Any) -> Trajectory:
    async def main() -> Trajectory:
        async with model:
            return await run_episode(make(EASY), model, seed=SEED, **kwargs)

    return asyncio.run(main())


def test_native_tool_calls_over_http(openai_server: FakeOpenAIServer, backend: str) -> None:
    openai_server.enqueue(
        Reply(tool_calls=[ToolCallSpec("add", {"a": 3, "b": 4}, id="c1")]),
        Reply("\\boxed{5}"),
        Reply("\\boxed{7}"),
    )
    traj = play(model_for(openai_server, backend), tools=[Add()])
    assert traj.outcome == "completed" and traj.success
    assert traj.steps[0].tool_events[0].output == "7"
    assert traj.usage.input_tokens > 0 and traj.usage.output_tokens > 0
    bodies = [r.body for r in openai_server.requests]
    assert bodies[0]["tools"][0]["function"]["name"] == "add"
    sent = bodies[1]["messages"]
    assert sent[-2]["tool_calls"][0]["id"] == "c1"
    assert sent[-1] == {"role": "tool", "tool_call_id": "c1", "content": "7"}
    assert "too low" in bodies[2]["messages"][-1]["content"]


def test_text_protocol_over_http(openai_server: FakeOpenAIServer, backend: str) -> None:
    openai_server.enqueue(
        Reply('<tool_call>{"name": "add", "arguments": {"a": 3, "b": 4}}</tool_call>'),
        Reply("\\boxed{7}"),
    )
    traj = play(model_for(openai_server, backend), tools=[Add()], tool_mode="text")
    assert traj.success and traj.steps[0].tool_events[0].output == "7"
    first = openai_server.requests[0].body
    assert "tools" not in first and "<tool_call>" in first["messages"][0]["content"]
    assert openai_server.requests[1].body["messages"][-1]["content"].startswith("<tool_response")


def test_generation_settings_pass_through(openai_server: FakeOpenAIServer, backend: str) -> None:
    config = GenerateConfig(temperature=0.3, top_p=0.9, max_tokens=17, seed=5, stop=["\n\n"])
    openai_server.enqueue(Reply("\\boxed{7}"))
    play(model_for(openai_server, backend), config=config)
    body = openai_server.requests[0].body
    assert (body["temperature"], body["top_p"], body["max_tokens"], body["seed"]) == (
        0.3,
        0.9,
        17,
        5,
    )
    assert body["stop"] == ["\n\n"] and body["model"] == "fake"


@pytest.mark.parametrize(
    "fault",
    [
        Fault.status(429, retry_after=0.01),
        Fault.status(500),
        Fault.status(503),
        Fault.hang(3),
        Fault.malformed(),
        Fault.no_choices(),
        Fault.drop(),
    ],
    ids=["429", "500", "503", "timeout", "malformed", "no_choices", "drop"],
)
def test_transient_faults_are_retried(
    openai_server: FakeOpenAIServer, backend: str, fault: Fault
) -> None:
    openai_server.enqueue(Reply("\\boxed{5}"), fault, Reply("\\boxed{7}"))
    traj = play(model_for(openai_server, backend))
    assert traj.outcome == "completed" and traj.success
    assert traj.retries == 1 and traj.steps[1].output.retries == 1
    assert traj.steps[0].output.retries == 0
    # The retry repeated only the failed call: the first answer was sent once.
    assert len(openai_server.requests) == 3
    assert len(traj.rewards) == 2


@pytest.mark.parametrize(
    ("code", "name"),
    [(400, "BadRequestError"), (401, "AuthenticationError"), (404, "NotFoundError")],
)
def test_refusals_are_not_retried(
    openai_server: FakeOpenAIServer, backend: str, code: int, name: str
) -> None:
    openai_server.enqueue(Fault.status(code))
    traj = play(model_for(openai_server, backend))
    # A refused key, an unknown model, a rejected request: the configuration's fault,
    # never scored as the model's answer.
    assert traj.outcome == "config_error" and traj.retries == 0 and not traj.scored
    assert len(openai_server.requests) == 1
    assert (traj.error or "").startswith(f"{code} {name}")


def test_a_context_overflow_is_the_models_and_scored(
    openai_server: FakeOpenAIServer, backend: str
) -> None:
    """vLLM's and OpenAI's answer when the conversation outgrew the window."""
    message = (
        "This model's maximum context length is 8192 tokens. However, you requested "
        "9000 tokens. Please reduce the length of the messages."
    )
    body = {"error": {"message": message, "type": "invalid_request_error", "code": None}}
    openai_server.enqueue(Fault.status(400, body=body))
    traj = play(model_for(openai_server, backend))
    assert traj.outcome == "model_error" and traj.scored and traj.retries == 0


def test_persistent_failure_is_an_infra_error(
    openai_server: FakeOpenAIServer, backend: str
) -> None:
    openai_server.enqueue(Reply("\\boxed{5}"), *[Fault.status(503)] * 4)
    traj = play(model_for(openai_server, backend))
    assert traj.outcome == "infra_error" and not traj.scored
    assert traj.retries == FAST_RETRY.max_retries
    assert len(traj.rewards) == 1  # the completed step is kept
    assert len(openai_server.requests) == 1 + FAST_RETRY.max_retries + 1


def test_retry_after_is_honoured(openai_server: FakeOpenAIServer, backend: str) -> None:
    openai_server.enqueue(Fault.status(429, retry_after=0.6), Reply("\\boxed{7}"))
    slow = RetryPolicy(max_retries=2, timeout_s=2.0, initial_wait_s=0.0, max_wait_s=5.0)
    traj = play(model_for(openai_server, backend, retry=slow))
    assert traj.success and traj.retries == 1
    assert traj.steps[0].output.latency_s >= 0.6  # waited as told, not the 0 s backoff


def test_hung_server_hits_the_time_limit(openai_server: FakeOpenAIServer, backend: str) -> None:
    openai_server.latency = 5.0
    patient = RetryPolicy(max_retries=0, timeout_s=30.0)
    traj = play(model_for(openai_server, backend, retry=patient), limits=Limits(max_time_s=0.5))
    assert (traj.outcome, traj.truncated_by) == ("truncated", "max_time")
    assert traj.duration_s < 3


def test_secrets_are_redacted_from_errors(openai_server: FakeOpenAIServer, backend: str) -> None:
    key = "sk-test-key-0123456789abcdef"
    body = {"error": {"message": f"Incorrect API key provided: {key}", "type": "auth"}}
    openai_server.enqueue(Fault.status(401, body=body))
    traj = play(model_for(openai_server, backend))
    assert openai_server.requests[0].authorization == f"Bearer {key}"
    assert traj.outcome == "config_error"
    assert key not in traj.model_dump_json() and "[REDACTED]" in (traj.error or "")


def test_connection_limit_shrinks_on_429s(openai_server: FakeOpenAIServer, backend: str) -> None:
    model = model_for(
        openai_server,
        backend,
        concurrency=20,
        retry=RetryPolicy(max_retries=5, timeout_s=2.0, initial_wait_s=0.01, max_wait_s=0.05),
    )
    openai_server.enqueue(*[Fault.status(429)] * 20)  # the first 20 calls are refused

    async def main() -> list[Any]:
        calls = [model.generate([{"role": "user", "content": "hi"}]) for _ in range(20)]
        return await asyncio.gather(*calls)

    outputs = asyncio.run(main())
    assert all(o.text for o in outputs)
    # Cut by the burst of 429s, once (it regains its size within seconds: not asserted here).
    assert model.limit.cuts == 1 and model.limit.epoch == 1


def test_missing_api_key_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = get_model("openai/gpt-4o")
    with pytest.raises(MissingAPIKeyError, match="OPENAI_API_KEY"):
        asyncio.run(model.start())


def test_direct_backend_needs_a_base_url() -> None:
    with pytest.raises(UserError, match="model-base-url"):
        get_model("hosted_vllm/qwen", backend="openai")
    with pytest.raises(UserError, match="unknown model backend"):
        get_model("openai/x", backend="grpc")


def test_the_limit_never_grows_past_its_maximum(openai_server: FakeOpenAIServer) -> None:
    model = get_model(
        "openai/fake",
        base_url=openai_server.base_url,
        backend="openai",
        concurrency=4,
        max_concurrency=4,
    )
    assert isinstance(model, ChatAPIModel)

    async def main() -> None:
        calls = [model.generate([{"role": "user", "content": "hi"}]) for _ in range(12)]
        await asyncio.gather(*calls)
        await model.aclose()

    asyncio.run(main())  # 12 successes would raise an unbounded limit of 4 to 5
    assert (model.limit.limit, model.limit.maximum, model.limit.in_flight) == (4, 4, 0)


# -- the direct backend's own HTTP path ------------------------------------------------------


def direct(server: FakeOpenAIServer, **kwargs: Any) -> ChatAPIModel:
    return model_for(server, "openai", **kwargs)


def generate_once(
    model: ChatAPIModel, config: GenerateConfig | None = None, *, close: bool = True
) -> Any:
    """One call (then ``aclose`` unless told not to); the output, or the ModelCallError."""

    async def main() -> Any:
        try:
            return await model.generate([{"role": "user", "content": "hi"}], config=config)
        except ModelCallError as exc:
            return exc
        finally:
            if close:
                await model.aclose()

    return asyncio.run(main())


def test_direct_backend_sends_other_settings_as_top_level_fields(
    openai_server: FakeOpenAIServer,
) -> None:
    # vLLM and SGLang read top_k, min_p ... beside the OpenAI fields, as extra_body did.
    config = GenerateConfig(temperature=0.5, extra={"top_k": 20, "chat_template_kwargs": {}})
    openai_server.enqueue(Reply("ok"))
    output = generate_once(direct(openai_server), config)
    body = openai_server.requests[0].body
    assert output.text == "ok"
    assert (body["top_k"], body["chat_template_kwargs"], body["temperature"]) == (20, {}, 0.5)
    assert "extra_body" not in body and "tools" not in body


@pytest.mark.parametrize(
    ("code", "name", "transient"),
    [
        (403, "PermissionDeniedError", False),
        (409, "ConflictError", True),
        (422, "UnprocessableEntityError", False),
        (418, "APIStatusError", False),
        (502, "InternalServerError", True),
    ],
)
def test_direct_backend_status_errors(
    openai_server: FakeOpenAIServer, code: int, name: str, transient: bool
) -> None:
    openai_server.enqueue(Fault.status(code))
    retry = RetryPolicy(max_retries=0, timeout_s=1.0)
    error = generate_once(direct(openai_server, retry=retry))
    assert isinstance(error, ModelCallError)
    assert (error.status, error.transient) == (code, transient)
    assert str(error).startswith(f"{name}: Error code: {code} - fake server fault")


def test_direct_backend_reads_retry_after_from_a_429(openai_server: FakeOpenAIServer) -> None:
    openai_server.enqueue(Fault.status(429, retry_after=7))
    error = generate_once(direct(openai_server, retry=RetryPolicy(max_retries=0)))
    assert isinstance(error, ModelCallError) and error.__cause__ is not None
    failure = classify(error.__cause__)
    assert failure == Failure(True, 429, 7.0, rate_limited=True)


def test_a_refused_connection_is_transient_and_named(backend: str) -> None:
    with socket.socket() as sock:  # a port nobody listens on once this is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = get_model(
        "openai/fake", base_url=f"http://127.0.0.1:{port}/v1", backend=backend, retry=FAST_RETRY
    )
    assert isinstance(model, ChatAPIModel)
    error = generate_once(model)
    assert isinstance(error, ModelCallError)
    assert (error.status, error.transient, error.retries) == (None, True, FAST_RETRY.max_retries)
    # Not litellm's "500 InternalServerError ... Connection error.": no server answered.
    assert str(error).startswith("connection refused: ") and str(port) in str(error)


def test_a_dropped_connection_is_named(openai_server: FakeOpenAIServer, backend: str) -> None:
    openai_server.handler = lambda body: Fault.drop()
    error = generate_once(model_for(openai_server, backend, retry=RetryPolicy(max_retries=0)))
    assert isinstance(error, ModelCallError)
    assert (error.status, error.transient) == (None, True)
    assert str(error).startswith("connection closed by the server")


@pytest.mark.parametrize(
    ("body", "calls"),
    [
        # Arguments sent as an object and a missing id are mended, as the SDK path did.
        (
            {"tool_calls": [{"function": {"name": "add", "arguments": {"a": 1}}}]},
            [("call_0", "add", '{"a": 1}')],
        ),
        (
            {
                "tool_calls": [
                    {"id": "c9", "function": {"name": "add", "arguments": '{"a": 1}'}},
                ]
            },
            [("c9", "add", '{"a": 1}')],
        ),
    ],
)
def test_direct_backend_reads_tool_calls(
    openai_server: FakeOpenAIServer, body: dict[str, Any], calls: list[tuple[str, str, str]]
) -> None:
    message = {"role": "assistant", "content": None, **body}
    reply = {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}
    openai_server.enqueue(Fault.status(200, body=reply))
    output = generate_once(direct(openai_server))
    assert [(c.id, c.name, c.arguments) for c in output.tool_calls] == calls
    assert (output.text, output.finish_reason, output.usage.input_tokens) == ("", "tool_calls", 0)


@pytest.mark.parametrize(
    "reply",
    [
        {"choices": [{"index": 0}]},
        {"choices": [{"message": {"role": "assistant", "tool_calls": ["not a call"]}}]},
        {"choices": "none"},
        ["not", "an", "object"],
    ],
    ids=["no_message", "bad_tool_call", "choices_not_a_list", "not_an_object"],
)
def test_direct_backend_retries_malformed_completions(
    openai_server: FakeOpenAIServer, reply: Any
) -> None:
    openai_server.enqueue(Fault.status(200, body=reply), Reply("fine"))
    output = generate_once(direct(openai_server))
    assert (output.text, output.retries) == ("fine", 1)


def test_direct_backend_outlives_its_event_loop(openai_server: FakeOpenAIServer) -> None:
    # A model made once and used from several asyncio.run calls (a notebook, a test) gets a
    # new connection pool on each loop, and the pool of a finished loop is closed, not leaked.
    model = direct(openai_server)
    gc.collect()  # earlier tests' garbage is not this test's
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert generate_once(model, close=False).text and generate_once(model, close=False).text
        asyncio.run(model.aclose())
        gc.collect()
    assert len(openai_server.requests) == 2
    leaked = [w for w in caught if "Unclosed client session" in str(w.message)]
    assert not leaked


def test_litellm_prices_known_models_and_not_local_ones(openai_server: FakeOpenAIServer) -> None:
    from gem_eval.models.litellm_model import import_litellm

    priced = get_model(
        "openai/gpt-4o", base_url=openai_server.base_url, backend="litellm", retry=FAST_RETRY
    )
    local = get_model(
        "openai/fake", base_url=openai_server.base_url, backend="litellm", retry=FAST_RETRY
    )
    assert isinstance(priced, ChatAPIModel) and isinstance(local, ChatAPIModel)
    output = generate_once(priced)
    usage = output.usage
    prompt, completion = import_litellm().cost_per_token(
        model="gpt-4o", prompt_tokens=usage.input_tokens, completion_tokens=usage.output_tokens
    )
    assert usage.cost_usd is not None and usage.cost_usd == pytest.approx(prompt + completion)
    assert generate_once(local).usage.cost_usd is None


def test_direct_backend_honours_a_proxy_from_the_environment(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As httpx did for the SDK: HTTP_PROXY set means every call goes through it (here a
    # port nobody listens on, so the call cannot reach the server directly).
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
    error = generate_once(direct(openai_server, retry=RetryPolicy(max_retries=0)))
    assert isinstance(error, ModelCallError) and error.transient
    assert openai_server.requests == []
