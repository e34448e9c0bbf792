"""``NodeWorker``: the Ray actor that plays one node's share of a run.

It owns the node's :class:`~gem_eval.runner.executor.LocalExecutor` (models, sandbox
pools, tool servers) and plays the episodes the driver sends it, many at once on its
event loop. This module imports no Ray: :class:`~gem_eval.runner.ray_executor.RayExecutor`
makes the class an actor when it starts.

A node whose Docker engine went away is lost to the run as a dead node is: an episode
that fails for want of the engine raises :class:`EngineLostError` instead of returning
its ``infra_error`` record, and the driver plays it again on another node. What the
node's sandbox code warns of (the engine away, containers left to remove) is kept and
handed to the driver with the setup lines, so a node's cleanup command is not lost in
its own log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from gem_eval.errors import GemEvalError
from gem_eval.records import EpisodeRecord, EpisodeSpec, ModelSpec, TaskSpec
from gem_eval.runner.executor import LocalExecutor
from gem_eval.runner.provision import Provisioner

SETTLE_S = 2.0
"""Seconds before a live engine is asked again whether it is going (see ``_engine_lost``)."""


class EngineLostError(GemEvalError):
    """This node's Docker engine is unreachable: the episode is to be played elsewhere."""


class _Lines(logging.Handler):
    """Keeps the warnings of a logger as lines for the driver."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


class NodeWorker:
    """One node's executor, driven from the run's driver.

    Args:
        model_factory: Builds each model (its spec carries this node's connection share).
        provisioner_args: The run's :class:`Provisioner` settings.
        cache: Use the response cache (``--cache``): this node's own, under its
            ``GEM_EVAL_CACHE`` (a cache root on a shared file system serves every node).
    """

    def __init__(
        self,
        model_factory: Callable[[ModelSpec], Any],
        provisioner_args: dict[str, Any],
        cache: bool = False,
    ) -> None:
        from gem_eval.models.response_cache import ResponseCache

        self.lines: list[str] = []  # setup lines, sandbox warnings: handed to the driver
        self._handler = _Lines(self.lines)
        logging.getLogger("gem_eval.sandbox").addHandler(self._handler)
        provisioner = Provisioner(**provisioner_args, log=self.lines.append)
        self.cache = ResponseCache() if cache else None
        self.executor = LocalExecutor(model_factory, provisioner, cache=self.cache)

    async def check(self, tasks: list[TaskSpec]) -> None:
        """This node's tools and engines can serve the tasks (else ``UserError``)."""
        self.executor.check(tasks)

    async def start(self, models: list[ModelSpec]) -> None:
        """Start this node's model clients."""
        await self.executor.start(models)

    async def prepare(self, tasks: list[TaskSpec]) -> list[str]:
        """Build the tasks' images on this node (cached by content); the lines said."""
        await self.executor.prepare(tasks)
        return self._said()

    async def run(self, run_id: str, spec: EpisodeSpec) -> tuple[EpisodeRecord, dict[str, str]]:
        """Play one episode: its record and, apart, its attachments (a private
        attribute of the record, which need not survive serialisation).

        Raises:
            EngineLostError: The episode could not be played because this node's Docker
                engine is away (it is not the episode's fault, nor the model's).
        """
        from gem_eval.sandbox import engine

        outages = engine.outages()
        record = await self.executor.run(run_id, spec)
        if record.outcome == "infra_error" and await _engine_lost(outages):
            raise EngineLostError(engine.UNREACHABLE)
        return record, record.take_files()

    async def describe(self) -> dict[str, Any]:
        return self.executor.describe()

    async def cache_counts(self) -> dict[str, int] | None:
        return self.executor.cache_counts()

    async def aclose(self) -> list[str]:
        """Release the node's models and sandboxes (its containers of the run removed,
        or a warning naming the cleanup command); the lines said since :meth:`prepare`."""
        try:
            await self.executor.aclose()
        finally:
            if self.cache is not None:
                self.cache.close()
            logging.getLogger("gem_eval.sandbox").removeHandler(self._handler)
        return self._said()

    def _said(self) -> list[str]:
        lines, self.lines[:] = list(self.lines), []
        return lines


async def _engine_lost(outages: int) -> bool:
    """Whether this node's Docker engine went away since it had seen ``outages``
    outages, or is away now. An engine shutting down still answers for a moment after
    it killed the episode's container, so a live answer is asked again after
    :data:`SETTLE_S` (a delay only an episode that already failed pays)."""
    import asyncio

    from gem_eval.sandbox import docker_client, engine

    if not docker_client.in_use():
        return False
    for attempt in range(2):
        if engine.outages() > outages or engine.is_down() or not await engine.probe():
            return True
        if attempt == 0:
            await asyncio.sleep(SETTLE_S)
    return False
