"""Executors play :class:`~gem_eval.records.EpisodeSpec` s and return records.

The runner hands an executor plain data (a spec) and gets plain data back (a record), so
an executor that ships episodes to other processes or machines (Ray) can replace the
local one without touching the agent loop or the runner.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
from abc import ABC, abstractmethod
from typing import Any

from gem_eval.agent import Limits, Redactor, run_episode
from gem_eval.agents.programs import AgentPrograms, plays_itself
from gem_eval.budget import Budget
from gem_eval.envs.hosted import HostedEnv
from gem_eval.errors import GemEvalError, UserError
from gem_eval.models.base import GenerateConfig, Model
from gem_eval.models.paid_replies import ReplayingModel
from gem_eval.models.response_cache import CachedModel, ResponseCache, cacheable
from gem_eval.phases import clocked, phase, remainder
from gem_eval.records import EpisodeRecord, EpisodeSpec, ModelSpec, TaskSpec
from gem_eval.registration import make
from gem_eval.runner.judging import Judges, reference_answer
from gem_eval.runner.provision import Provisioner
from gem_eval.runner.scoring import failed_record, to_record
from gem_eval.sandbox.base import Sandbox
from gem_eval.trajectory import Trajectory


def generate_config(task_settings: dict[str, Any], model_args: dict[str, Any]) -> GenerateConfig:
    """The task's generation settings with the model's ``-M key=value`` arguments on top;
    keys that are not settings pass through to the provider (``extra``).

    Raises:
        UserError: A setting of the wrong type or out of range (every one, on one line).
    """
    from gem_eval.models.generation import check_generation

    wrong = check_generation(task_settings, "generation") + check_generation(model_args, "-M")
    if wrong:
        raise UserError("; ".join(wrong))
    merged = {**task_settings, **model_args}
    extra = {**task_settings.get("extra", {}), **model_args.get("extra", {})}
    known = {k: v for k, v in merged.items() if k in GenerateConfig.model_fields and k != "extra"}
    extra |= {k: v for k, v in merged.items() if k not in known and k != "extra"}
    return GenerateConfig(**known, extra=extra)


class Executor(ABC):
    """Plays episodes. ``start``/``aclose`` bracket a run."""

    @abstractmethod
    async def run(self, run_id: str, spec: EpisodeSpec) -> EpisodeRecord:
        """Play one episode and return its record (failures become outcomes, not raises)."""

    async def start(self, models: list[ModelSpec]) -> None:  # noqa: B027 - optional hook
        """Prepare shared resources (start models) before the first episode."""

    def check(self, tasks: list[TaskSpec]) -> None:  # noqa: B027 - optional hook
        """Raise :class:`UserError` before the run for tools or sandboxes that cannot
        work as the tasks ask."""

    async def prepare(self, tasks: list[TaskSpec]) -> None:  # noqa: B027 - optional hook
        """Before the first episode, after :meth:`check`: make what the tasks share
        (their images, built once). Raise :class:`UserError` for a task that cannot
        run (a broken Dockerfile, a sandbox policy it cannot work under)."""

    def describe(self) -> dict[str, Any]:
        """Resources used (sandbox kinds and images, tool servers, each task's sandbox
        policy), for the manifest."""
        return {}

    def cache_counts(self) -> dict[str, int] | None:
        """The response cache's ``{"hits": n, "misses": m}`` so far (``None``: no cache)."""
        return None

    def use_budget(self, budget: Budget) -> None:  # noqa: B027 - optional hook
        """The run's budget, for executors whose episodes' model calls can check and
        charge it (see :mod:`gem_eval.budget`); others are held to it per episode."""

    def interrupted(self, run_id: str, spec: EpisodeSpec, started: float) -> EpisodeRecord | None:
        """The ``cancelled`` record of an episode whose :meth:`run` was cancelled
        (Ctrl-C), holding the calls it had made (paid for: counted, and replayed by
        ``--resume``); ``None``: nothing of it is known here."""
        return None

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release shared resources."""


class LocalExecutor(Executor):
    """Plays episodes in this process on the asyncio loop.

    Args:
        model_factory: Builds a :class:`Model` from a :class:`ModelSpec` (one instance per
            model is shared by all its episodes, so its connection limit is shared). A
            model with :attr:`~gem_eval.models.base.Model.max_episodes` plays at most that
            many episodes at once; the others wait their turn before they start.
        provisioner: Gives episodes their tools and sandboxes (default: a new one).
        cache: Serve model replies from this response cache, and store new ones
            (``--cache``); the caller opens and closes it. Reference agents are not cached.
    """

    def __init__(
        self,
        model_factory: Any,
        provisioner: Provisioner | None = None,
        cache: ResponseCache | None = None,
    ) -> None:
        self.model_factory = model_factory
        self.provisioner = provisioner or Provisioner()
        self.cache = cache
        self.models: dict[str, Model] = {}
        self._episode_slots: dict[str, asyncio.Semaphore] = {}  # by model name
        self.redactor: Redactor | None = None
        self.budget: Budget | None = None
        self.tasks: list[TaskSpec] = []
        self.judges = Judges(model_factory)  # the judge models of scorer: judge tasks
        self.programs = AgentPrograms()  # --agent: programs that call the model over HTTP
        # Each episode in gem-eval's loop: its trajectory, and its steps and messages as
        # of its last whole step (what a cancelled episode keeps: see interrupted()).
        self._progress: dict[str, tuple[Trajectory, int, int]] = {}

    async def start(self, models: list[ModelSpec]) -> None:
        from gem_eval.models.chat_api import ChatAPIModel

        for spec in models:
            if spec.name not in self.models:
                model = self.model_factory(spec)
                self.models[spec.name] = model  # closed by aclose, even if start fails
                if model.max_episodes is not None:
                    self._episode_slots[spec.name] = asyncio.Semaphore(model.max_episodes)
                refuse = getattr(model, "check_tasks", None)  # the oracle: tasks it cannot play
                if refuse is not None:
                    refuse(self.tasks)
                await model.start()
                if isinstance(model, ChatAPIModel) and model.api_base is not None:
                    await self._check_server(model)
        await self.judges.start(self.tasks, check=self._check_server)
        await self.programs.start(self.tasks)
        # One redactor for the run: the environment's secrets and every model's key
        # (read from a variable whose name need not look secret).
        keys = [m.api_key for m in self.models.values() if isinstance(m, ChatAPIModel)]
        self.redactor = Redactor(values=[k for k in keys if k] + self.judges.api_keys())

    async def _check_server(self, model: Any) -> None:
        """Stop the run before any episode when a model's server cannot be reached or
        refuses the key; with the response cache, say so and go on: a re-run served from
        the cache needs no server (a reply it lacks then fails its episode)."""
        from gem_eval.errors import ModelConfigError
        from gem_eval.models.preflight import check_server

        try:
            await check_server(model.name, model.api_base, model.api_key)
        except ModelConfigError as exc:
            if self.cache is None:
                raise
            logging.getLogger("gem_eval.models").warning(
                "%s; going on with the response cache (a reply it lacks fails its episode)",
                exc,
            )

    async def run(self, run_id: str, spec: EpisodeSpec) -> EpisodeRecord:
        slots = self._episode_slots.get(spec.model.name)
        if slots is None:
            return await self._play(run_id, spec)
        async with slots:
            return await self._play(run_id, spec)

    async def _play(self, run_id: str, spec: EpisodeSpec) -> EpisodeRecord:
        with clocked() as clock:
            record = await self._clocked(run_id, spec)
        if clock.seconds():
            record.phases = clock.seconds()
        return record

    async def _clocked(self, run_id: str, spec: EpisodeSpec) -> EpisodeRecord:
        started = time.time()
        model = self.models[spec.model.name]
        task = spec.task
        try:
            # An agent program sends its own settings (Terminus-2 none, as under Harbor):
            # the suite's, meant for gem-eval's loop, would change its requests; -M applies.
            settings = {} if plays_itself(task) else task.generation
            config = generate_config(settings, spec.model.args)
            env = await asyncio.to_thread(make, task.env_id, **spec.env_kwargs())
        except UserError as exc:  # the env refused its arguments, or a setting is wrong:
            # the run is set up wrong, every episode would fail alike (never replayed)
            return failed_record(run_id, spec, started, exc, outcome="config_error")
        except Exception as exc:  # the env failed to build: an env error, not the model's
            return failed_record(run_id, spec, started, exc, outcome="env_error")
        bind = getattr(model, "for_episode", None)  # the oracle acts on this episode's env
        if bind is not None:
            model = bind(env)
        if self.cache is not None and cacheable(model):
            # Epoch and seed in the key: each sampled epoch keeps its own replies.
            salt = {"epoch": spec.epoch, "seed": spec.seed}
            model = CachedModel(model, self.cache, salt=salt, backend=spec.model.backend)
        if spec.paid_replies is not None and cacheable(model):
            # An episode cut mid-way goes on from the calls it paid for (never the cache's).
            model = ReplayingModel(model, spec.paid_replies)
        hosted = env.unwrapped if isinstance(env.unwrapped, HostedEnv) else None
        limits = task.limits.model_dump()
        try:
            resources = await asyncio.to_thread(hosted.resources) if hosted else None
            if resources is not None and limits["max_time_s"] is None:
                limits["max_time_s"] = resources.max_time_s
            agent_plays = plays_itself(task)
            if agent_plays:  # the agent acts in the sandbox itself: no tools are opened
                task = task.model_copy(update={"tools": []})
                if resources is not None:  # and reaches the endpoint from in there
                    box = resources.sandbox.model_copy(update={"agent_program": True})
                    resources = dataclasses.replace(resources, tools=[], sandbox=box)
            async with self.provisioner.episode(
                task, resources, setup=functools.partial(_prepare, env.unwrapped)
            ) as (tools, sandbox):
                if agent_plays and sandbox is not None:
                    with remainder("agent"):
                        trajectory, files = await self.programs.play(
                            env,
                            task,
                            model,
                            sandbox,
                            seed=spec.seed,
                            config=config,
                            timeout_s=limits["max_time_s"],
                            budget=self.budget,
                            redactor=self.redactor,
                        )
                else:

                    def whole_step(traj: Trajectory) -> None:
                        self._progress[spec.key] = (traj, len(traj.steps), len(traj.messages))

                    with remainder("agent"):
                        trajectory = await run_episode(
                            env,
                            model,
                            tools,
                            Limits(**limits),
                            seed=spec.seed,
                            config=config,
                            tool_mode=task.tool_mode,
                            system_prompt=task.system_prompt,
                            on_step=whole_step,
                            sandbox=sandbox,
                            redactor=self.redactor,
                            budget=self.budget,
                        )
                    self._progress.pop(spec.key, None)
                    files = _attachments(tools, self.redactor)
        except GemEvalError as exc:  # no sandbox or tool server: not the model's fault
            return failed_record(run_id, spec, started, exc, outcome="infra_error")
        finally:
            env.close()
        record = to_record(run_id, spec, trajectory, started)
        if task.scorer == "judge":
            with phase("judge"):
                record = await self.judges.judge(
                    spec,
                    record,
                    reference_answer(env),
                    cache=self.cache,
                    redact=self.redactor,
                    budget=self.budget,
                )
        record.attach(files)
        return record

    def use_budget(self, budget: Budget) -> None:
        self.budget = budget

    def interrupted(self, run_id: str, spec: EpisodeSpec, started: float) -> EpisodeRecord | None:
        progress = self._progress.pop(spec.key, None)
        if progress is None:
            return None
        live, steps, messages = progress
        if not steps:  # no call was answered in a whole step: nothing to keep
            return None
        trajectory = live.model_copy(
            update={
                "steps": live.steps[:steps],
                "messages": live.messages[:messages],
                "outcome": "cancelled",
                "error": "stopped: the run was interrupted",
            }
        )
        return to_record(
            run_id, spec, (self.redactor or Redactor()).trajectory(trajectory), started
        )

    def check(self, tasks: list[TaskSpec]) -> None:
        self.programs.check(tasks)
        self.provisioner.check(tasks)
        self.tasks = tasks  # start() asks each model whether it can play them

    async def prepare(self, tasks: list[TaskSpec]) -> None:
        await self.provisioner.prepare(tasks)

    def describe(self) -> dict[str, Any]:
        described = self.provisioner.describe()
        agents = self.programs.describe()
        return {**described, "agents": agents} if agents else described

    def cache_counts(self) -> dict[str, int] | None:
        # A miss is a model call made (stored when it succeeded); a judge's lookups count too.
        return self.cache.counts() if self.cache is not None else None

    async def aclose(self) -> None:
        try:
            await self.provisioner.aclose()
        finally:
            for model in self.models.values():
                await model.aclose()
            self.models.clear()
            self._episode_slots.clear()
            try:
                await self.judges.aclose()
            finally:
                await self.programs.aclose()


async def _prepare(env: Any, sandbox: Sandbox) -> None:
    """Hand the episode's sandbox to an env that grades (or runs) in it, before tools open."""
    if getattr(env, "needs_sandbox", False):
        env.attach_sandbox(sandbox)
    if isinstance(env, HostedEnv):
        await env.asetup(sandbox)


def _attachments(tools: list[Any], redactor: Redactor | None) -> dict[str, str]:
    """The files the episode's tools made, read before they are released and redacted
    like the transcript; a second file of one name gets its tool's name in front."""
    files: dict[str, str] = {}
    for tool in tools:
        for name, text in tool.attachments().items():
            files[f"{tool.name}-{name}" if name in files else name] = (
                redactor(text) if redactor else text
            )
    return files
