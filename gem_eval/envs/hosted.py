"""``HostedEnv``: an env that brings the resources its episodes run in.

A terminal task names its own image, CPU, memory and network, its agent's time limit and
its tools; an MCP task names the service its tools talk to. Such an env tells the
executor what each episode needs (:meth:`HostedEnv.resources`), gets the started sandbox
(``attach_sandbox``), prepares it before the tools open (:meth:`HostedEnv.asetup`), and
grades the state it ends in: when the agent says it is done (``step``) and when a limit
stops the agent (:meth:`HostedEnv.afinish`). :meth:`HostedEnv.asolve` applies the
task's reference solution, which is what ``--model oracle`` does instead of acting.

The order of one episode under ``gem-eval run``::

    make -> resources() -> sandbox started -> attach_sandbox -> asetup -> tools open
    -> reset -> [model, tools]* -> step(answer) | afinish() -> tools released -> sandbox removed
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gem_eval.core import ResetResult, StepResult
from gem_eval.envs.sandboxed import SandboxedEnv
from gem_eval.phases import remainder
from gem_eval.records import SandboxSpec, ToolSpec
from gem_eval.sandbox.base import Sandbox


@dataclass
class EpisodeResources:
    """What one episode of a hosted env runs in.

    Attributes:
        sandbox: The sandbox (image or build context, limits, user, workdir). Of the
            suite's ``sandbox:`` settings, the run-wide ones (``max_sandboxes``,
            ``output_limit``, ``image_map``) apply as they are, and the limits, network
            and user may only tighten it (:mod:`gem_eval.sandbox.policy`).
        tools: Tools the episode gets besides the task's ``tools:`` (an MCP service's
            server, say).
        max_time_s: The agent's time limit, used when the task sets none.
        service: What the run manifest records about the service behind the tools
            (``{"filesystem": {"package": "...@2026.8.31"}}``).
        needs_network: The task cannot work without the network (it says so): a run
            that turns the network off refuses it before the first episode.
    """

    sandbox: SandboxSpec
    tools: list[ToolSpec] = field(default_factory=list)
    max_time_s: float | None = None
    service: dict[str, Any] = field(default_factory=dict)
    needs_network: bool = False


@dataclass(frozen=True)
class ExpandedTask:
    """One task of a directory of tasks that a suite item names: a hosted env's
    ``expand(args)`` classmethod returns these, and the suite loader makes each a task
    (id ``<item id>/<name>``)."""

    name: str
    args: dict[str, Any]
    category: str | None
    tags: list[str]


class HostedEnv(SandboxedEnv):
    """Base of envs whose episodes need a sandbox of their own (see the module docstring).

    Subclasses implement :meth:`resources`, :meth:`agrade` and usually :meth:`asetup`
    and :meth:`asolve`; ``reset`` returns the instruction. The agent acts only through
    tools; its final text reply ends the episode and triggers grading.
    """

    _done: bool = False

    @classmethod
    def expand(cls, args: dict[str, Any]) -> list[ExpandedTask] | None:
        """The tasks of a suite item whose ``path`` is a directory of tasks (``None``
        when it is one task: the item stays as it is)."""
        if not args.get("path"):
            return None
        found = cls.task_dirs(Path(str(args["path"])))
        if found is None:
            return None
        return [cls.expanded(task_dir, {**args, "path": str(task_dir)}) for task_dir in found]

    @classmethod
    def task_dirs(cls, root: Path) -> list[Path] | None:
        """The task directories under ``root``; ``None`` when ``root`` is one task."""
        return None

    @classmethod
    def expanded(cls, task_dir: Path, args: dict[str, Any]) -> ExpandedTask:
        """The suite task for ``task_dir`` (``args`` already point at it)."""
        raise NotImplementedError

    @abstractmethod
    def resources(self) -> EpisodeResources:
        """The episode's sandbox, tools and time limit (may build an image: blocking)."""

    async def asetup(self, sandbox: Sandbox) -> None:
        """Prepare the started sandbox (initial state, services) before tools open.
        Slow work may go on in the background while the tools open: :meth:`aready`
        waits for it."""

    async def aready(self) -> None:
        """Wait until the setup begun in :meth:`asetup` is done (``reset`` does)."""

    @abstractmethod
    async def agrade(self) -> tuple[float, dict[str, Any]]:
        """Grade the sandbox's final state: ``(reward, info)``; ``info["success"]``
        says whether the task was solved."""

    async def asolve(self) -> str:
        """Apply the task's reference solution in the sandbox; return its output."""
        raise NotImplementedError(f"{type(self).__name__} has no reference solution")

    @abstractmethod
    def instruction(self) -> str:
        """The task as the agent reads it."""

    async def sandbox(self) -> Sandbox:
        """The attached sandbox; used on its own (no harness), the env starts the one
        :meth:`resources` asks for, prepares it, and removes it in ``close``."""
        if self._sandbox is None:
            from gem_eval.sandbox.factory import make_sandbox, resolve_image

            spec = resolve_image(self.resources().sandbox)
            sandbox = make_sandbox(spec)
            await sandbox.start()
            self._sandbox, self._owns_sandbox = sandbox, True
            await self.asetup(sandbox)
            await self.aready()
        return self._sandbox

    def turn_limit(self) -> int:
        """One step: the final reply. The agent's tool calls in between are no steps."""
        return 1

    def reset(self, seed: int | None = None) -> ResetResult:
        super().reset(seed)
        self._done = False
        return self.instruction(), {}

    async def areset(self, seed: int | None = None) -> ResetResult:
        await self.aready()
        return self.reset(seed)

    def step(self, action: str) -> StepResult:
        import asyncio

        return asyncio.run(self.astep(action))

    async def astep(self, action: str) -> StepResult:
        if self._done:
            raise RuntimeError("the episode is over: call reset()")
        reward, info = await self.afinish()
        return "", reward, True, False, info

    async def afinish(self) -> tuple[float, dict[str, Any]]:
        """End the episode (an answer, or a limit stopped the agent) and grade it once."""
        self._done = True
        with remainder("verifier"):
            reward, info = await self.agrade()
        info.setdefault("success", reward >= 1.0)
        return reward, info
