"""``run_episode``: drive a model through an env, turn by turn, with tools.

reset -> [model -> tool calls -> tool results -> model ...] -> answer -> ``env.step``
-> observation -> model ... until the env ends the episode or a limit does.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from gem_eval.agent import tool_calls
from gem_eval.agent.failures import Stage, describe, formatted_traceback, outcome_of
from gem_eval.agent.limits import Limits
from gem_eval.agent.redact import Redactor
from gem_eval.clock import EpisodeClock, TimeLimitReached
from gem_eval.core import Env
from gem_eval.errors import SandboxError, TamperError
from gem_eval.models.base import GenerateConfig, Message, Model, ModelOutput
from gem_eval.sandbox.base import Sandbox
from gem_eval.tools.base import Tool
from gem_eval.trajectory import Step, ToolEvent, Trajectory

if TYPE_CHECKING:
    from gem_eval.budget import Budget


async def run_episode(
    env: Env,
    model: Model,
    tools: Sequence[Tool] = (),
    limits: Limits | None = None,
    *,
    seed: int | None = None,
    config: GenerateConfig | None = None,
    tool_mode: str = "native",
    system_prompt: str | None = None,
    redactor: Redactor | None = None,
    on_step: Callable[[Trajectory], None] | None = None,
    sandbox: Sandbox | None = None,
    budget: Budget | None = None,
) -> Trajectory:
    """Play one episode of ``env`` with ``model``; return its full record.

    Failures do not raise: they end the episode with an outcome (see
    :mod:`gem_eval.agent.failures`) and the error message, redacted; a bug in gem-eval
    (``harness_error``) keeps its traceback too.

    Args:
        env: The env (reset here with ``seed``).
        model: The model; ``generate`` is called once per turn.
        tools: Tools offered to the model.
        limits: Turn, token, time and cost limits. The time limit counts the episode's
            own time: not the time it queued for a model's connection slot that other
            episodes hold (see :mod:`gem_eval.clock`).
        seed: Passed to ``env.reset``.
        config: Generation settings.
        tool_mode: ``native`` (function calling) or ``text`` (calls written in the reply).
        system_prompt: Optional system message (the text protocol's instructions are
            appended to it in ``text`` mode).
        redactor: Removes secrets from the record (default: a :class:`Redactor` over
            the environment's key variables).
        on_step: Called with the (unredacted) trajectory after the reset and after each
            step, e.g. to show the episode live.
        sandbox: Where tools run (their owner starts and closes it). A sandbox failure
            ends the episode as ``infra_error``.
        budget: The run's budget: checked before each model call (spent: the episode
            ends ``cancelled``), charged with each call's cost.
    """
    if tool_mode not in tool_calls.TOOL_MODES:
        raise ValueError(f"tool_mode must be one of {tool_calls.TOOL_MODES}, not {tool_mode!r}")
    if tool_mode == "native" and tools and not model.supports_tools:
        tool_mode = "text"  # the model cannot call functions: teach it the text protocol
    episode = _Episode(env, model, list(tools), limits or Limits(), config or GenerateConfig())
    episode.on_step, episode.sandbox, episode.budget = on_step, sandbox, budget
    episode.traj.seed, episode.traj.tool_mode = seed, tool_mode
    start = time.monotonic()
    try:
        with episode.clock.running():
            await episode.play(seed, tool_mode, system_prompt)
    except Exception as exc:  # not the model's, the env's or a resource's: gem-eval's bug
        await episode.fail(exc, "loop")
    finally:
        episode.traj.duration_s = time.monotonic() - start
        episode.traj.queued_s = episode.clock.queued_s()
    return (redactor or Redactor()).trajectory(episode.traj)


class _Episode:
    """The state of one episode while it is played."""

    def __init__(
        self, env: Env, model: Model, tools: list[Tool], limits: Limits, config: GenerateConfig
    ) -> None:
        self.env, self.model, self.tools = env, model, tools
        self.limits, self.config = limits, config
        env_id = getattr(env.spec, "id", None) or str(env)
        self.traj = Trajectory(env_id=env_id, model=model.name)
        self.on_step: Callable[[Trajectory], None] | None = None
        self.sandbox: Sandbox | None = None
        self.budget: Budget | None = None
        self.acted = False
        self.clock = EpisodeClock()  # what the time limit counts

    async def _engine_alive(self) -> bool:
        """Whether the sandbox's engine still answers (no sandbox: nothing to blame)."""
        if self.sandbox is None:
            return False
        probe = getattr(self.sandbox, "engine_alive", None)
        if probe is None:
            return False
        try:
            return bool(await probe())
        except Exception:  # cannot tell: not the agent's to pay for
            return False

    def _notify(self) -> None:
        if self.on_step is not None:
            self.on_step(self.traj)

    async def play(self, seed: int | None, mode: str, system_prompt: str | None) -> None:
        traj = self.traj
        try:
            obs, _ = await self.env.areset(seed)
        except Exception as exc:
            await self.fail(exc, "env")
            return
        traj.initial_observation = obs
        system = system_prompt or ""
        if mode == "text" and self.tools:
            system = f"{system}\n\n{tool_calls.text_protocol_prompt(self.tools)}".strip()
        if system:
            traj.messages.append({"role": "system", "content": system})
        traj.messages.append({"role": "user", "content": obs})
        self._notify()
        schemas = [t.schema() for t in self.tools] if mode == "native" and self.tools else None

        while True:
            limit = self.limits.exceeded(len(traj.steps), traj.usage, self.clock.elapsed_s())
            if limit is not None:
                traj.outcome, traj.truncated_by = "truncated", limit
                await self._finish_unanswered()
                return
            output = await self._generate(schemas)
            if output is None:
                if traj.outcome == "truncated":
                    await self._finish_unanswered()
                return
            step = Step(index=len(traj.steps), output=output)
            traj.steps.append(step)
            calls = (
                [tool_calls.from_native(c) for c in output.tool_calls]
                if mode == "native"
                else tool_calls.from_text(output.text, self.tools)
            )
            traj.messages.append(assistant_message(output, mode))
            if calls:
                try:
                    await self._run_tools(step, calls, mode)
                except Exception as exc:  # a sandbox failure, or a bug in a tool's code
                    await self.fail(exc, "loop")
                    return
                self._notify()
                continue
            done = await self._env_step(step, output.text)
            self._notify()
            if done:
                return

    async def _generate(self, schemas: list[dict[str, object]] | None) -> ModelOutput | None:
        """One model call, cut off at the time limit; ``None`` when the episode ended."""
        traj = self.traj
        if self.budget is not None and self.budget.exhausted:
            traj.outcome, traj.error = "cancelled", f"stopped: {self.budget.describe()}"
            return None
        try:
            output = await self.clock.run_until(
                self.model.generate(traj.messages, schemas, self.config), self.limits.max_time_s
            )
        except TimeLimitReached:
            traj.outcome, traj.truncated_by = "truncated", "max_time"
            return None
        except Exception as exc:  # refused, retries ran out, or a bug in the client path
            traj.retries += getattr(exc, "retries", 0)
            await self.fail(exc, "model")
            return None
        traj.usage = traj.usage + output.usage
        traj.retries += output.retries
        if self.budget is not None and not output.replayed:  # a replayed call was paid then
            self.budget.charge(output.usage.cost_usd)
        return output

    async def _run_tools(self, step: Step, calls: list[tool_calls.ParsedCall], mode: str) -> None:
        for call in calls:
            began = time.monotonic()
            before = self.sandbox.started if self.sandbox is not None else 0
            try:
                result = await tool_calls.execute(call, self.tools, self.sandbox)
            finally:  # from the agent's first command that ran, a lost sandbox may be its doing
                if self.sandbox is None or self.sandbox.started > before:
                    self.acted = True
            step.tool_events.append(
                ToolEvent(
                    call_id=call.id,
                    name=call.name,
                    arguments=call.raw,
                    output=result.output,
                    is_error=result.is_error,
                    latency_s=time.monotonic() - began,
                )
            )
            if mode == "native":
                self.traj.messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": result.output}
                )
            else:
                text = tool_calls.text_tool_response(call.name, result)
                self.traj.messages.append({"role": "user", "content": text})

    async def _env_step(self, step: Step, action: str) -> bool:
        """Send the answer to the env; True when the episode is over."""
        try:
            obs, reward, terminated, truncated, info = await self.env.astep(action)
        except Exception as exc:  # grading in a sandbox that failed is infra_error
            await self.fail(exc, "env")
            return True
        step.action, step.observation, step.reward = action, obs, reward
        step.terminated, step.truncated, step.info = terminated, truncated, info
        if terminated or truncated:
            self.traj.outcome = "completed"
            self.traj.success = bool(info.get("success", terminated and reward > 0))
            return True
        self.traj.messages.append({"role": "user", "content": obs})
        return False

    async def _finish_unanswered(self) -> None:
        """A limit stopped the agent: an env that grades its end state regardless
        (a terminal task runs its tests) does so now, on the last step."""
        finish = getattr(self.env.unwrapped, "afinish", None)
        if finish is None:
            return
        try:
            reward, info = await finish()
        except Exception as exc:
            await self.fail(exc, "env")
            return
        self.traj.grade_end(reward, info, truncated=True)
        self._notify()

    async def fail(self, exc: BaseException, stage: Stage) -> None:
        """End the episode with the outcome ``exc`` at ``stage`` means. A sandbox lost
        after the agent's first command ran is charged to the agent (``sandbox_lost``,
        scored 0, never replayed: an agent must not erase a failure by killing its
        sandbox), unless the engine itself is gone (``infra_error``)."""
        outcome = outcome_of(exc, stage)
        lost = outcome == "infra_error" and self.acted and isinstance(exc, SandboxError)
        if lost and await self._engine_alive():
            outcome = "sandbox_lost"
        self.traj.outcome = outcome  # type: ignore[assignment]
        self.traj.error = describe(exc)
        if isinstance(exc, TamperError) and self.traj.steps:  # what the audit found
            step = self.traj.steps[-1]
            step.info = {**step.info, "tampered_paths": exc.paths}
        if outcome == "harness_error":
            self.traj.traceback = formatted_traceback(exc)


def assistant_message(output: ModelOutput, mode: str) -> Message:
    """The assistant message a reply adds to the conversation (its tool calls in
    ``native`` mode)."""
    return output.message(tool_calls=mode == "native")
