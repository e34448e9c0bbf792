"""``play_agent_episode``: one episode of a hosted task played by an :class:`Agent`.

reset (the instruction) -> the agent sets up and runs in the sandbox, calling the model
through its endpoint line (each call a step of the trajectory, as it happens) -> the env
grades the sandbox's end state (its verifier and integrity audit) -> the trajectory.

What is kept apart from the agent's score, as in gem-eval's own loop: a model call that
failed for the machinery's sake (retries ran out: ``infra_error``; a refused key or
unknown model: ``config_error``) ends the episode unscored, whatever the agent did next;
the budget spent mid-episode cancels it; a sandbox lost before the agent's first model
call is ``infra_error``. The spent budget and a call the model client gave up on (its
retries spent on a dead or failing server) stop the agent's play at once: agents retry
a failed call until their own time is up. A context overflow is the model's
(``model_error`` if the agent gives up on it; agents such as Terminus-2 summarise and
go on).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gem_eval import phases
from gem_eval.agent.failures import describe, formatted_traceback, model_call_outcome, outcome_of
from gem_eval.agent.redact import Redactor
from gem_eval.agents.base import Agent, AgentEpisode, AgentError, AgentResult
from gem_eval.agents.model_limits import model_limits
from gem_eval.endpoint import Call, EpisodeLine, ModelEndpoint
from gem_eval.errors import ModelCallError, SandboxError, TamperError
from gem_eval.models.base import GenerateConfig, Message, Model, ModelOutput
from gem_eval.trajectory import Step, Trajectory

if TYPE_CHECKING:
    from gem_eval.budget import Budget
    from gem_eval.core import Env
    from gem_eval.records import TaskSpec
    from gem_eval.sandbox.base import Sandbox

SETUP_ALLOWANCE_S = 900.0
"""Time an agent may take beyond its own limit (its setup, its own shutdown) before
gem-eval stops it: a last guard, the agents keep their own limits."""


async def play_agent_episode(
    env: Env,
    agent: Agent,
    model: Model,
    sandbox: Sandbox,
    endpoint: ModelEndpoint,
    *,
    task: TaskSpec,
    seed: int | None,
    config: GenerateConfig,
    timeout_s: float | None,
    logs_dir: Path,
    sandbox_base_url: str | None = None,
    budget: Budget | None = None,
    redactor: Redactor | None = None,
) -> tuple[Trajectory, AgentResult | None]:
    """Play one episode of ``env`` with ``agent``; its record and the agent's report.

    Failures do not raise: they end the episode with an outcome, as
    :func:`gem_eval.agent.run_episode` does.

    Args:
        env: A hosted env whose sandbox is ``sandbox`` (attached and set up).
        agent: The agent (started).
        model: The run's model for this episode (with the run's wrappers).
        sandbox: The episode's sandbox.
        endpoint: The run's endpoint (started).
        task: The task.
        seed: Passed to ``env.reset``.
        config: The run's generation settings (the agent's own override them).
        timeout_s: The agent's time.
        logs_dir: Where the agent's files go on this machine.
        sandbox_base_url: The endpoint as the sandbox reaches it (``None``: as this
            machine does).
        budget: The run's budget.
        redactor: Removes secrets from the record.
    """
    env_id = getattr(env.spec, "id", None) or str(env)
    traj = Trajectory(env_id=env_id, model=model.name, seed=seed, tool_mode=task.tool_mode)
    traj.agent = agent.name
    line = EpisodeLine(model, config, budget=budget)
    recorder = _Recorder(traj)
    line.on_call = recorder.heard
    start = time.monotonic()
    result: AgentResult | None = None
    limits: dict[str, int] | None = None
    try:
        instruction, _ = await env.areset(seed)
    except Exception as exc:
        _fail(traj, exc, "env")
    else:
        traj.initial_observation = instruction
        traj.messages = [{"role": "user", "content": instruction}]
        limits = await asyncio.to_thread(model_limits, model.name)  # imports litellm once
        token = endpoint.open(line)
        episode = AgentEpisode(
            instruction=instruction,
            sandbox=sandbox,
            model=served_name(model.name),
            host_base_url=endpoint.base_url,
            sandbox_base_url=sandbox_base_url or endpoint.base_url,
            api_key=token,
            task=task,
            timeout_s=timeout_s,
            logs_dir=logs_dir,
            model_limits=limits,
            max_turns=task.agent_max_turns,
        )
        try:
            result = await _run(agent, episode, env, line, recorder)
        except Exception as exc:  # a bug in gem-eval's own code around the agent
            traj.outcome, traj.error = "harness_error", describe(exc)
            traj.traceback = formatted_traceback(exc)
        finally:
            endpoint.close(token)
    traj.duration_s = time.monotonic() - start
    if result is not None:
        clock = phases.current()
        if clock is not None and result.setup_s:
            clock.add("agent_setup", result.setup_s)  # timed by the agent's own side
        traj.agent_run = {
            "setup_s": result.setup_s,
            "run_s": result.run_s,
            "version": result.version,
            "timed_out": result.timed_out,
            "turns": result.turns,
            **result.info,
        }
        if limits is not None:  # what the agent was told of the model's limits
            traj.agent_run["model_limits"] = limits
    clean = redactor or Redactor()
    text = traj.model_dump_json()
    redacted = clean(text)
    return (traj if redacted == text else Trajectory.model_validate_json(redacted)), result


def served_name(model: str) -> str:
    """The name an agent program is given for the run's ``model``: an OpenAI-compatible
    provider's (``openai/<its last part>``), the endpoint serving it whatever it is."""
    return f"openai/{model.split('/')[-1]}"


async def _run(
    agent: Agent, episode: AgentEpisode, env: Env, line: EpisodeLine, recorder: _Recorder
) -> AgentResult | None:
    """Run the agent, then grade what it left, unless the episode must not be scored."""
    traj = recorder.traj
    guard = None if episode.timeout_s is None else episode.timeout_s + SETUP_ALLOWANCE_S
    result: AgentResult | None = None
    agent_error: AgentError | SandboxError | None = None
    try:
        result = await _play(agent, episode, line, guard)
    except (AgentError, SandboxError) as exc:
        agent_error = exc
        result = exc.result if isinstance(exc, AgentError) else None
    if line.stopped is not None and line.failure is None:  # the budget ran out
        traj.outcome, traj.error = "cancelled", f"stopped: {line.stopped}"
        return result
    failed = recorder.failed_call() or line.failure
    if failed is not None:  # the model path failed: infra or configuration, not the agent
        traj.outcome = model_call_outcome(failed)  # type: ignore[assignment]
        traj.error = describe(failed)
        return result
    if isinstance(agent_error, SandboxError):
        _fail(traj, agent_error, "loop")  # infra_error; after the agent acted, its own
        if line.calls > 0 and agent_error is not None:
            traj.outcome = "sandbox_lost"
        return result
    if agent_error is not None:
        if agent_error.infra:  # its helper or packages failed: not the agent's doing
            traj.outcome, traj.error = "infra_error", describe(agent_error)
            return result
        traj.error = describe(agent_error)  # the agent's own failure: graded as it left it
    await _grade(env, traj, result)
    return result


async def _play(
    agent: Agent, episode: AgentEpisode, line: EpisodeLine, guard: float | None
) -> AgentResult | None:
    """The agent's play, within ``guard`` seconds (then: timed out), ended as soon as
    its line stops (the budget is spent, or the model client gave up on a call:
    ``None``). Agents retry a refused call for minutes; nothing they do after the stop
    is scored.

    Raises:
        AgentError, SandboxError: As :meth:`Agent.play`.
    """
    play = asyncio.ensure_future(agent.play(episode))
    stopped = asyncio.Event()
    line.on_stop = stopped.set
    stop = asyncio.ensure_future(stopped.wait())
    try:
        await asyncio.wait({play, stop}, timeout=guard, return_when=asyncio.FIRST_COMPLETED)
    finally:
        line.on_stop = None
        stop.cancel()
        if not play.done():
            play.cancel()
            await asyncio.wait({play})
    if not play.cancelled():
        return play.result()
    return None if line.stopped is not None else AgentResult(timed_out=True)


async def _grade(env: Env, traj: Trajectory, result: AgentResult | None) -> None:
    """The env grades the sandbox as the agent left it, on the last step."""
    try:
        _, reward, _, _, info = await env.astep("")
    except Exception as exc:  # a tampered grader, a lost sandbox, or the env's own error
        _fail(traj, exc, "env")
        return
    traj.grade_end(reward, info)
    if result is not None and result.timed_out:
        traj.outcome, traj.truncated_by = "truncated", "max_time"
    else:
        traj.outcome = "completed"


def _fail(traj: Trajectory, exc: BaseException, stage: Any) -> None:
    traj.outcome = outcome_of(exc, stage)  # type: ignore[assignment]
    traj.error = describe(exc)
    if isinstance(exc, TamperError) and traj.steps:
        traj.steps[-1].info = {**traj.steps[-1].info, "tampered_paths": exc.paths}


class _Recorder:
    """Turns each call heard on the episode's line into a step of the trajectory.

    A step's ``info["request"]`` holds what the agent sent: the messages it added since
    the previous call's request and reply (``from``: that step's index), or all of them
    when the agent rewrote its history (``from``: ``None``; a summarised context), and
    the names of the tools it offered. The trajectory's ``messages`` are the last
    request and its reply: the conversation as the agent last held it.
    """

    def __init__(self, traj: Trajectory) -> None:
        self.traj = traj
        self._last: list[Message] = []
        self._errors: list[ModelCallError] = []

    def heard(self, call: Call) -> None:
        traj = self.traj
        output = call.output or ModelOutput(text="")
        prompt = _delta(self._last, call.messages)
        request: dict[str, Any] = {
            "from": len(traj.steps) - 1 if prompt is not None and traj.steps else None,
            "messages": prompt if prompt is not None else call.messages,
        }
        if call.tools:
            request["tools"] = [t.get("function", {}).get("name") for t in call.tools]
        if call.stream:
            request["stream"] = True
        step = Step(index=len(traj.steps), output=output, info={"request": request})
        if call.error is not None:
            step.info["error"] = describe(call.error)
            if isinstance(call.error, ModelCallError):
                if model_call_outcome(call.error) != "model_error":
                    self._errors.append(call.error)
                traj.retries += call.error.retries
        traj.steps.append(step)
        traj.usage = traj.usage + output.usage
        traj.retries += output.retries
        reply = output.message()
        self._last = [*call.messages, reply]
        traj.messages = list(self._last)

    def failed_call(self) -> ModelCallError | None:
        """The first call that failed for the machinery's or configuration's sake."""
        return self._errors[0] if self._errors else None


def _delta(before: list[Message], now: list[Message]) -> list[Message] | None:
    """The messages ``now`` adds to ``before`` (``None``: ``now`` does not extend it)."""
    if not before or len(now) < len(before) or now[: len(before)] != before:
        return None
    return now[len(before) :]
