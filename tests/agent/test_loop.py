"""The agent loop driven by a scripted model (no HTTP: see test_models_http.py for that)."""

from __future__ import annotations

import asyncio
import json
from typing import Any, ClassVar

import pytest

from gem_eval import make
from gem_eval.agent import Limits, Redactor, run_episode
from gem_eval.errors import ModelCallError
from gem_eval.models import GenerateConfig, Message, ModelOutput, ScriptedModel, Usage, tool_call
from gem_eval.models.base import Model, ToolSchema
from gem_eval.sandbox import Sandbox
from gem_eval.tools import Tool, ToolResult
from tests.fakes import FakeEnv

# game:GuessTheNumber-v0-easy with seed 0 hides 7.
EASY, SEED = "game:GuessTheNumber-v0-easy", 0


class Add(Tool):
    name = "add"
    description = "Add two integers."
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }

    async def call(self, args: dict[str, Any], sandbox: Sandbox | None = None) -> ToolResult:
        return ToolResult(output=str(args["a"] + args["b"]))


class Calc(Tool):
    """Called in the text protocol as ``<calc>3+4</calc>``."""

    name = "calc"
    description = "Add numbers written as a+b."
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"expression": {"type": "string"}},
        "required": ["expression"],
    }
    text_tag = "calc"
    text_argument = "expression"

    async def call(self, args: dict[str, Any], sandbox: Sandbox | None = None) -> ToolResult:
        return ToolResult(output=str(sum(int(x) for x in args["expression"].split("+"))))


def output(text: str = "", calls: list[Any] | None = None, tokens: int = 10) -> ModelOutput:
    usage = Usage(input_tokens=tokens, output_tokens=tokens, cost_usd=0.001)
    return ModelOutput(text=text, tool_calls=calls or [], usage=usage)


def run(env_id: str, model: Model, **kwargs: Any) -> Any:
    return asyncio.run(run_episode(make(env_id), model, seed=SEED, **kwargs))


def test_native_multi_turn_episode_with_a_tool_call() -> None:
    model = ScriptedModel(
        [
            output(calls=[tool_call("add", {"a": 3, "b": 4}, id="c1")]),
            output("I think \\boxed{5}"),
            output("\\boxed{8}"),
            output("\\boxed{7}"),
        ]
    )
    traj = run(EASY, model, tools=[Add()])
    assert traj.outcome == "completed" and traj.success
    assert [s.tool_events[0].output for s in traj.steps if s.tool_events] == ["7"]
    assert traj.rewards[0] == 0.0  # the tool turn earns nothing; three guesses follow
    assert len(traj.rewards) == 4 and traj.total_return == pytest.approx(1.0)
    assert traj.usage.input_tokens == 40 and traj.usage.cost_usd == pytest.approx(0.004)
    roles = [m["role"] for m in traj.messages]
    assert roles == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert traj.messages[1]["tool_calls"][0]["function"] == {
        "name": "add",
        "arguments": '{"a": 3, "b": 4}',
    }
    assert traj.messages[2] == {"role": "tool", "tool_call_id": "c1", "content": "7"}
    # The second model call saw the tool result, the third saw the env's feedback.
    assert model.calls[1][-1]["role"] == "tool"
    assert "too low" in model.calls[2][-1]["content"]


def test_text_protocol_calls_and_responses() -> None:
    model = ScriptedModel(
        [
            '<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>',
            "<calc>3+4</calc>",
            "\\boxed{7}",
        ]
    )
    traj = run(EASY, model, tools=[Add(), Calc()], tool_mode="text", system_prompt="Play well.")
    assert traj.success
    system = traj.messages[0]["content"]
    assert system.startswith("Play well.") and "<tool_call>" in system and '"name": "add"' in system
    assert "<calc>...</calc>" in system
    responses = [m["content"] for m in traj.messages if m["content"].startswith("<tool_response")]
    assert responses == [
        '<tool_response name="add">\n3\n</tool_response>',
        '<tool_response name="calc">\n7\n</tool_response>',
    ]
    assert all("tool_calls" not in m for m in traj.messages)


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (tool_call("add", "{not json"), "not valid JSON"),
        (tool_call("mul", {"a": 1}), "unknown tool 'mul' (tools: add)"),
        (tool_call("add", {"a": 1}), "missing required argument(s): b"),
        (tool_call("add", {"a": "1", "b": 2}), "argument 'a' must be of type integer"),
        (tool_call("add", {"a": True, "b": 2}), "argument 'a' must be of type integer"),
        (tool_call("add", "[1, 2]"), "arguments must be a JSON object"),
    ],
)
def test_malformed_native_calls_go_back_to_the_model(call: Any, error: str) -> None:
    model = ScriptedModel([output(calls=[call]), "\\boxed{7}"])
    traj = run(EASY, model, tools=[Add()])
    event = traj.steps[0].tool_events[0]
    assert event.is_error and error in event.output
    assert traj.outcome == "completed" and traj.success  # the episode went on


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("<tool_call>{oops}</tool_call>", "valid JSON"),
        ('<tool_call>{"arguments": {}}</tool_call>', 'needs a "name"'),
        ('<tool_call>{"name": "add", "arguments": "[1"}</tool_call>', "must be a JSON object"),
    ],
)
def test_malformed_text_calls_go_back_to_the_model(text: str, error: str) -> None:
    traj = run(EASY, ScriptedModel([text, "\\boxed{7}"]), tools=[Add()], tool_mode="text")
    assert error in traj.steps[0].tool_events[0].output
    assert traj.success


class Crashing(Add):
    async def call(self, args: dict[str, Any], sandbox: Sandbox | None = None) -> ToolResult:
        raise ZeroDivisionError("division by zero")


def test_a_tool_that_raises_is_an_error_result() -> None:
    traj = run(
        EASY,
        ScriptedModel([output(calls=[tool_call("add", {"a": 1, "b": 1})]), "\\boxed{7}"]),
        tools=[Crashing()],
    )
    assert (
        traj.steps[0].tool_events[0].output
        == "Error: the tool failed: ZeroDivisionError: division by zero"
    )
    assert traj.success


def test_max_turns_truncates() -> None:
    traj = run("game:GuessTheNumber-v0", ScriptedModel(["no idea"]), limits=Limits(max_turns=3))
    assert (traj.outcome, traj.truncated_by, len(traj.steps)) == ("truncated", "max_turns", 3)
    assert traj.rewards == pytest.approx([-0.1] * 3)
    assert traj.scored


def test_token_and_cost_limits_truncate() -> None:
    many = ScriptedModel([output("hmm", tokens=30)])
    traj = run("game:GuessTheNumber-v0", many, limits=Limits(max_tokens=100))
    assert (traj.truncated_by, len(traj.steps)) == ("max_tokens", 2)  # 60, 120 tokens
    traj = run("game:GuessTheNumber-v0", many, limits=Limits(max_cost_usd=0.0025))
    assert (traj.truncated_by, len(traj.steps)) == ("max_cost", 3)


class Slow(Model):
    name = "slow"

    async def generate(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        config: GenerateConfig | None = None,
    ) -> ModelOutput:
        await asyncio.sleep(30)
        return ModelOutput(text="late")


def test_time_limit_cuts_a_call_in_flight() -> None:
    traj = run(EASY, Slow(), limits=Limits(max_time_s=0.2))
    assert (traj.outcome, traj.truncated_by, traj.steps) == ("truncated", "max_time", [])
    assert traj.duration_s < 5


@pytest.mark.parametrize(
    ("exc", "outcome"),
    [
        (ModelCallError("rate limited", status=429, transient=True, retries=6), "infra_error"),
        # The model's own doing: scored.
        (
            ModelCallError(
                "BadRequestError: This model's maximum context length is 8192 tokens",
                status=400,
                transient=False,
            ),
            "model_error",
        ),
        (
            ModelCallError("ContentPolicyViolationError: flagged", status=400, transient=False),
            "model_error",
        ),
        # The configuration's: never scored.
        (ModelCallError("bad request: unknown field", status=400, transient=False), "config_error"),
        (
            ModelCallError("AuthenticationError: bad key", status=401, transient=False),
            "config_error",
        ),
        (
            ModelCallError("NotFoundError: no such model", status=404, transient=False),
            "config_error",
        ),
        # A bug in the client path: gem-eval's, never scored.
        (RuntimeError("client bug"), "harness_error"),
    ],
)
def test_model_failures_end_the_episode_with_their_class(exc: Exception, outcome: str) -> None:
    model = ScriptedModel(["\\boxed{5}", exc])
    traj = run(EASY, model)
    assert traj.outcome == outcome
    assert traj.error is not None and str(exc) in traj.error
    assert len(traj.rewards) == 1  # the step that succeeded is kept
    assert traj.scored == (outcome == "model_error")
    if isinstance(exc, ModelCallError):
        assert traj.retries == exc.retries
    assert (traj.traceback is not None) == (outcome == "harness_error")
    if outcome == "config_error":
        assert "--api-key-env" in traj.error or "check" in traj.error  # says what to fix


def test_a_tool_with_the_wrong_signature_is_a_harness_error() -> None:
    """A tool whose ``call`` cannot take (arguments, sandbox) is gem-eval's bug: it must
    not reach the model as an ordinary tool error (and be scored as the model's)."""

    class OldStyle(Tool):
        name = "calc"
        description = "d"
        parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}

        async def call(self, args: dict[str, Any]) -> ToolResult:  # type: ignore[override]
            return ToolResult(output="1")

    model = ScriptedModel([output(calls=[tool_call("calc", {})]), "\\boxed{5}"])
    traj = asyncio.run(run_episode(make(EASY), model, [OldStyle()], seed=0))
    assert traj.outcome == "harness_error" and not traj.scored
    assert traj.traceback is not None and "TypeError" in traj.traceback


def test_env_failure_is_an_env_error() -> None:
    env = FakeEnv(fail_at=2)
    traj = asyncio.run(run_episode(env, ScriptedModel(["go"]), seed=0))
    assert traj.outcome == "env_error" and "boom at step 2" in (traj.error or "")
    assert not traj.scored


def test_secrets_never_reach_the_trajectory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_PROVIDER_API_KEY", "hunter2-secret-value")
    leaky = "my key is sk-abcdefghijklmnopqrstuvwx and hunter2-secret-value \\boxed{7}"
    traj = run(EASY, ScriptedModel([leaky]))
    text = traj.model_dump_json()
    assert "sk-abcdefghijklmnopqrstuvwx" not in text and "hunter2-secret-value" not in text
    assert "[REDACTED]" in traj.steps[0].output.text
    assert traj.success  # redaction happens on the record, after the env saw the answer
    err = ModelCallError("401 for key sk-zzzzzzzzzzzzzzzzzzzzzzzz", status=401, transient=False)
    traj = run(EASY, ScriptedModel([err]))
    assert "sk-zzzz" not in (traj.error or "") and "[REDACTED]" in (traj.error or "")


def test_redactor_keeps_short_values_and_ordinary_text() -> None:
    redact = Redactor(values=["abc"], environ={"X_TOKEN": "tok-1234567890", "HOME": "/root"})
    assert redact("abc tok-1234567890 /root") == "abc [REDACTED] /root"


def test_trajectory_round_trips_through_json() -> None:
    traj = run(
        EASY,
        ScriptedModel([output(calls=[tool_call("add", {"a": 1, "b": 1})]), "\\boxed{7}"]),
        tools=[Add()],
    )
    again = type(traj).model_validate_json(traj.model_dump_json())
    assert again == traj and json.loads(traj.model_dump_json())["schema_version"] == 2


@pytest.mark.parametrize("mode", ["native", "text"])
def test_a_tool_output_is_stored_once(mode: str) -> None:
    """The output is in the message the model read; the event points at it on disk."""
    big = "x" * 5000 + "end"

    class Big(Tool):
        name = "big"
        description = "d"
        parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}
        text_tag = "big"
        text_argument = "q"

        async def call(self, args: dict[str, Any], sandbox: Sandbox | None = None) -> ToolResult:
            return ToolResult(output=big)

    first = output(calls=[tool_call("big", {})]) if mode == "native" else "<big>go</big>"
    traj = asyncio.run(
        run_episode(
            make(EASY),
            ScriptedModel([first, first, "\\boxed{7}"]),
            [Big()],
            seed=0,
            tool_mode=mode,
        )
    )
    events = [e for s in traj.steps for e in s.tool_events]
    assert [e.output for e in events] == [big, big]
    text = traj.model_dump_json()
    assert text.count(big) == 2  # once per call: in its message only
    again = type(traj).model_validate_json(text)
    assert again == traj


def test_a_version_1_trajectory_still_loads() -> None:
    """Records written before outputs were stored once keep loading as they were."""
    traj = run(
        EASY,
        ScriptedModel([output(calls=[tool_call("add", {"a": 1, "b": 1})]), "\\boxed{7}"]),
        tools=[Add()],
    )
    old = traj.model_dump(mode="json", round_trip=False)
    for step in old["steps"]:
        for event in step["tool_events"]:
            index, start, end = event.pop("output_at")
            event["output"] = old["messages"][index]["content"][start:end]
    old["schema_version"] = 1
    again = type(traj).model_validate(old)
    assert again.steps[0].tool_events[0].output == "2" and again.messages == traj.messages


class _Box:
    """Stands in for a sandbox whose engine is up or down (only what the loop asks)."""

    started = 0

    def __init__(self, engine_up: bool) -> None:
        self.engine_up = engine_up

    async def engine_alive(self) -> bool:
        return self.engine_up


class Killer(Tool):
    """The agent's command runs (the sandbox counts it as started) and kills its
    sandbox; with ``ran=False`` the sandbox fails before the command could start (a
    paused container, an engine that stalls)."""

    name = "bash"
    description = "d"
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}

    def __init__(self, ran: bool = True) -> None:
        self.ran = ran

    async def call(self, args: dict[str, Any], sandbox: Sandbox | None = None) -> ToolResult:
        from gem_eval.errors import SandboxError

        if self.ran and sandbox is not None:
            sandbox.started += 1
        raise SandboxError("the container is gone")


@pytest.mark.parametrize(("engine_up", "outcome"), [(True, "sandbox_lost"), (False, "infra_error")])
def test_a_sandbox_lost_after_the_agent_acted_is_charged_to_it(
    engine_up: bool, outcome: str
) -> None:
    """An agent must not erase a failure by killing its sandbox; a dead engine is not the
    agent's doing."""
    from gem_eval.records import EpisodeSpec, ModelSpec, TaskSpec
    from gem_eval.runner.scoring import to_record

    model = ScriptedModel([output(calls=[tool_call("bash", {})]), "\\boxed{7}"])
    traj = asyncio.run(
        run_episode(make(EASY), model, [Killer()], seed=0, sandbox=_Box(engine_up))  # type: ignore[arg-type]
    )
    assert traj.outcome == outcome
    spec = EpisodeSpec(
        key="k", task=TaskSpec(id="t", env_id=EASY), model=ModelSpec(name="m"),
        sample=0, epoch=0, seed=0,
    )  # fmt: skip
    record = to_record("r", spec, traj, 0.0)
    if outcome == "sandbox_lost":
        assert record.scored and record.score == 0.0 and not record.success
    else:
        assert not record.scored and record.score is None


def test_a_sandbox_lost_before_the_agent_acted_is_an_infra_error() -> None:
    class BrokenReset(FakeEnv):
        def reset(self, seed: int | None = None) -> Any:
            from gem_eval.errors import SandboxError

            raise SandboxError("setup failed")

    traj = asyncio.run(
        run_episode(BrokenReset(), ScriptedModel(["go"]), [Killer()], sandbox=_Box(True))  # type: ignore[arg-type]
    )
    assert traj.outcome == "infra_error" and not traj.scored


def test_a_sandbox_that_fails_before_the_agents_first_command_ran_is_infra() -> None:
    """The agent has not acted until one of its commands began to run: a sandbox lost
    before that (its first session never came up) is not its doing, engine up or not."""
    model = ScriptedModel([output(calls=[tool_call("bash", {})]), "\\boxed{7}"])
    box = _Box(engine_up=True)
    traj = asyncio.run(
        run_episode(make(EASY), model, [Killer(ran=False)], seed=0, sandbox=box)  # type: ignore[arg-type]
    )
    assert traj.outcome == "infra_error" and box.started == 0
