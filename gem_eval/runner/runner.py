"""The runner: plays a run's episodes with bounded concurrency, a budget, and clean stops.

It takes plain :class:`~gem_eval.records.EpisodeSpec` s, hands them to an
:class:`~gem_eval.runner.executor.Executor`, and passes every finished
:class:`~gem_eval.records.EpisodeRecord` to its sinks (the results store, the progress
display) as soon as it finishes.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gem_eval.records import RERUN_ON_RESUME, EpisodeRecord, EpisodeSpec, RunStatus
from gem_eval.runner.executor import Executor
from gem_eval.runner.scoring import cancelled_record, failed_record

Sink = Callable[[EpisodeRecord], None]

EXIT_OK = 0
EXIT_INFRA_ERRORS = 3
EXIT_BUDGET = 4
EXIT_INTERRUPTED = 130
"""Exit codes of ``gem-eval run``: 0 when every episode was scored; 3 when some were not
(infrastructure or env errors after retries, or cancelled: recorded, and ``--resume``
plays them again); 4 when ``--max-cost`` stopped the run; 130 on Ctrl-C or SIGTERM
(resumable). 1 and 2 are gem-eval's and the user's errors."""


@dataclass
class RunSummary:
    """How a run went."""

    status: RunStatus
    outcomes: Counter[str] = field(default_factory=Counter)
    cost_usd: float = 0.0
    skipped: int = 0

    @property
    def exit_code(self) -> int:
        if self.status == "interrupted":
            return EXIT_INTERRUPTED
        if any(self.outcomes[o] for o in RERUN_ON_RESUME):
            return EXIT_INFRA_ERRORS
        if self.status == "budget_exhausted":
            return EXIT_BUDGET
        return EXIT_OK


class Runner:
    """Plays episodes, at most ``concurrency`` at once.

    Args:
        run_id: The run the records belong to.
        executor: Plays one episode.
        sinks: Called with every record, in the order episodes finish.
        concurrency: Episodes in flight (each model also limits its own connections).
        max_cost_usd: Stop scheduling once the run has cost this much.
        spent_usd: What the run cost before (a resumed run), counted against the budget.

    A sink that fails (a full disk) stops the run: the episodes in flight are cancelled
    and the error is raised, since a run that cannot record is not a run.
    """

    def __init__(
        self,
        run_id: str,
        executor: Executor,
        sinks: Sequence[Sink] = (),
        *,
        concurrency: int = 64,
        max_cost_usd: float | None = None,
        spent_usd: float = 0.0,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.run_id, self.executor, self.sinks = run_id, executor, list(sinks)
        self.concurrency, self.max_cost_usd = concurrency, max_cost_usd
        self.summary = RunSummary(status="running", cost_usd=spent_usd)
        self._sink_error: BaseException | None = None

    async def run(self, specs: Sequence[EpisodeSpec]) -> RunSummary:
        """Play ``specs``; return the summary. Cancelling this coroutine (Ctrl-C) cancels
        the episodes in flight, records them as ``cancelled`` and marks the run
        ``interrupted``."""
        slots = asyncio.Semaphore(self.concurrency)
        in_flight: dict[asyncio.Task[EpisodeRecord], tuple[EpisodeSpec, float]] = {}
        try:
            for spec in specs:
                await slots.acquire()
                if self._sink_error is not None:
                    break
                if self._over_budget():
                    slots.release()
                    self.summary.status = "budget_exhausted"
                    break
                task = asyncio.create_task(self.executor.run(self.run_id, spec))
                in_flight[task] = (spec, time.time())
                task.add_done_callback(lambda t: self._finished(t, in_flight, slots))
            while in_flight and self._sink_error is None:
                await asyncio.wait(list(in_flight), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            await self._cancel(in_flight)
            self.summary.status = "interrupted"
            return self.summary
        if self._sink_error is not None:
            await self._cancel(in_flight)
            self.summary.status = "failed"
            raise self._sink_error
        if self.summary.status == "running":
            self.summary.status = "finished"
        return self.summary

    def _finished(
        self,
        task: asyncio.Task[EpisodeRecord],
        in_flight: dict[asyncio.Task[EpisodeRecord], tuple[EpisodeSpec, float]],
        slots: asyncio.Semaphore,
    ) -> None:
        spec, started = in_flight.pop(task)
        slots.release()
        if task.cancelled():
            self._emit(cancelled_record(self.run_id, spec, started))
            return
        exc = task.exception()
        if exc is not None:  # the executor itself failed: an infrastructure error
            self._emit(failed_record(self.run_id, spec, started, exc))
            return
        self._emit(task.result())

    async def _cancel(
        self, in_flight: dict[asyncio.Task[EpisodeRecord], tuple[EpisodeSpec, float]]
    ) -> None:
        tasks = list(in_flight)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _emit(self, record: EpisodeRecord) -> None:
        if self._sink_error is not None:
            return  # the run is stopping: nothing more is recorded or counted
        try:
            for sink in self.sinks:
                sink(record)
        except Exception as exc:  # raised by run(), not lost in a done-callback
            self._sink_error = exc
            return
        self.summary.outcomes[record.outcome] += 1
        self.summary.cost_usd += record.cost_usd or 0.0

    def _over_budget(self) -> bool:
        return self.max_cost_usd is not None and self.summary.cost_usd >= self.max_cost_usd
