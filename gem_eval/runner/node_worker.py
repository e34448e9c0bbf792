"""``NodeWorker``: the Ray actor that plays one node's share of a run.

It owns the node's :class:`~gem_eval.runner.executor.LocalExecutor` (models, sandbox
pools, tool servers) and plays the episodes the driver sends it, many at once on its
event loop. This module imports no Ray: :class:`~gem_eval.runner.ray_executor.RayExecutor`
makes the class an actor when it starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gem_eval.records import EpisodeRecord, EpisodeSpec, ModelSpec, TaskSpec
from gem_eval.runner.executor import LocalExecutor
from gem_eval.runner.provision import Provisioner


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

        self.lines: list[str] = []  # setup lines (images built), handed to the driver
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
        lines, self.lines[:] = list(self.lines), []
        return lines

    async def run(self, run_id: str, spec: EpisodeSpec) -> tuple[EpisodeRecord, dict[str, str]]:
        """Play one episode: its record and, apart, its attachments (a private
        attribute of the record, which need not survive serialisation)."""
        record = await self.executor.run(run_id, spec)
        return record, record.take_files()

    async def describe(self) -> dict[str, Any]:
        return self.executor.describe()

    async def cache_counts(self) -> dict[str, int] | None:
        return self.executor.cache_counts()

    async def aclose(self) -> None:
        try:
            await self.executor.aclose()
        finally:
            if self.cache is not None:
                self.cache.close()
