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

from gem_eval.budget import Budget, Forecast
from gem_eval.outcomes import OUTCOMES
from gem_eval.records import EpisodeRecord, EpisodeSpec, RunStatus
from gem_eval.runner.executor import Executor
from gem_eval.runner.scoring import cancelled_record, harness_record

Sink = Callable[[EpisodeRecord], None]

EXIT_OK = 0
EXIT_HARNESS_ERROR = 1
EXIT_CONFIG_ERROR = 2
EXIT_INCOMPLETE = 3
EXIT_BUDGET = 4
EXIT_INTERRUPTED = 130
"""Exit codes of ``gem-eval run``: 0 when every episode was scored; 3 when some were not
(infrastructure or env errors after retries, or cancelled: recorded, and ``--resume``
plays them again); 4 when ``--max-cost`` stopped the run; 130 on Ctrl-C or SIGTERM
(resumable); 2 when the run is set up wrong (a bad suite or option, or a configuration
error of a model: a refused key, an unknown model, an unreachable server: the run stops
at the first); 1 when gem-eval itself failed (a ``harness_error``, a full disk)."""

_EXIT_CODES = {"config": EXIT_CONFIG_ERROR, "harness": EXIT_HARNESS_ERROR}


@dataclass
class RunSummary:
    """How a run went.

    Attributes:
        status: The run's status (as in its manifest).
        outcomes: Episodes recorded in this session, by outcome.
        first_errors: The first error message of each outcome that has one.
        stopped_by: Why the runner stopped scheduling early (an episode's configuration
            error), or ``None``.
        gave_up: Episodes recorded on their last attempt in a capped outcome: no
            ``--resume`` plays them again.
        cost_usd: What the run has cost, earlier sessions included.
        cache: This session's response-cache ``hits`` and ``misses`` (``--cache``;
            ``None``: no cache).
        judged: Episodes a judge graded in this session.
        judge_failed: Episodes whose judge failed (``judge_error``) in this session.
        judge_cost_usd: What their judge calls cost (part of ``cost_usd``: the budget
            counts every call; shown apart from the judged models').
        given_up_before: Episodes given up in earlier sessions (their last attempt ended
            unscored: ``--max-attempts``) that this session did not play: the run is
            ``incomplete`` while there are any.
        held_back: Why the runner stopped starting episodes before the budget was spent
            (the next one's expected cost would not fit), or ``None``.
        replayed_calls: Model calls of episodes cut mid-way before, replayed from their
            records in this session (paid for then: not part of ``cost_usd`` again).
        replayed_cost_usd: What those calls cost when they were made.
    """

    status: RunStatus
    outcomes: Counter[str] = field(default_factory=Counter)
    first_errors: dict[str, str] = field(default_factory=dict)
    stopped_by: str | None = None
    gave_up: int = 0
    cost_usd: float = 0.0
    skipped: int = 0
    cache: dict[str, int] | None = None
    judged: int = 0
    judge_failed: int = 0
    judge_cost_usd: float = 0.0
    given_up_before: int = 0
    held_back: str | None = None
    replayed_calls: int = 0
    replayed_cost_usd: float = 0.0

    @property
    def exit_code(self) -> int:
        if self.status == "interrupted":
            return EXIT_INTERRUPTED
        classes = {OUTCOMES[o].exit_class for o, n in self.outcomes.items() if n}
        for exit_class in ("config", "harness"):
            if exit_class in classes:
                return _EXIT_CODES[exit_class]
        if self.status == "budget_exhausted":  # its cut episodes are cancelled: say why
            return EXIT_BUDGET
        if "incomplete" in classes or self.status == "incomplete":
            return EXIT_INCOMPLETE
        return EXIT_OK

    def failure(self) -> str | None:
        """One line on why the run failed, or ``None``."""
        if self.stopped_by is not None:
            return self.stopped_by
        harness = self.outcomes["harness_error"]
        if harness:
            first = self.first_errors.get("harness_error", "")
            return f"{harness} harness_error (a bug in gem-eval); first: {first}"
        return None

    def settle(self) -> None:
        """Set the final status from what was recorded (after a run that was not
        interrupted): ``failed`` when a configuration error stopped it or gem-eval
        failed, ``incomplete`` when episodes remain to be played again, else as it is."""
        classes = {OUTCOMES[o].exit_class for o, n in self.outcomes.items() if n}
        if self.stopped_by is not None or "harness" in classes:
            self.status = "failed"
        elif ("incomplete" in classes or self.given_up_before) and self.status == "finished":
            self.status = "incomplete"


class Runner:
    """Plays episodes, at most ``concurrency`` at once.

    Args:
        run_id: The run the records belong to.
        executor: Plays one episode.
        sinks: Called with every record, in the order episodes finish.
        concurrency: Episodes in flight (each model also limits its own connections).
        max_cost_usd: The run's budget (:mod:`gem_eval.budget`): an episode starts only
            when its expected cost fits beside those in flight, and no model call starts
            once the run has cost this much.
        spent_usd: What the run cost before (a resumed run), counted against the budget.
        seen_costs: ``(model, task_id, cost_usd)`` of the run's episodes that ran to
            their end in earlier sessions: what the next ones are expected to cost.

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
        seen_costs: Sequence[tuple[str, str, float]] = (),
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.run_id, self.executor, self.sinks = run_id, executor, list(sinks)
        self.concurrency, self.max_cost_usd = concurrency, max_cost_usd
        self.summary = RunSummary(status="running", cost_usd=spent_usd)
        self.budget = Budget(max_cost_usd, spent_usd)
        executor.use_budget(self.budget)  # model calls check it: no new call once spent
        self.forecast = Forecast(seen_costs)
        self._reserved: dict[str, float] = {}  # episode key -> its expected cost
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
                if self._sink_error is not None or self.summary.stopped_by is not None:
                    break
                if self._over_budget() or not await self._admit(spec, in_flight):
                    slots.release()
                    if self._sink_error is None and self.summary.stopped_by is None:
                        self.summary.status = "budget_exhausted"
                    break
                task = asyncio.create_task(self.executor.run(self.run_id, spec))
                in_flight[task] = (spec, time.time())
                task.add_done_callback(lambda t: self._finished(t, in_flight, slots))
            while in_flight and self._sink_error is None:
                if self.summary.stopped_by is not None:
                    await self._cancel(in_flight)
                    break
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
        self.summary.settle()
        return self.summary

    def _finished(
        self,
        task: asyncio.Task[EpisodeRecord],
        in_flight: dict[asyncio.Task[EpisodeRecord], tuple[EpisodeSpec, float]],
        slots: asyncio.Semaphore,
    ) -> None:
        spec, started = in_flight.pop(task)
        self._reserved.pop(spec.key, None)
        slots.release()
        if task.cancelled():  # Ctrl-C: what the episode paid for is kept when known
            kept = self.executor.interrupted(self.run_id, spec, started)
            self._emit(kept or cancelled_record(self.run_id, spec, started))
            return
        exc = task.exception()
        if exc is not None:  # the executor raised: a bug in gem-eval, not the model's doing
            self._emit(harness_record(self.run_id, spec, started, exc))
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
        summary = self.summary
        if record.scored:  # it ran to its end: what such an episode costs
            self.forecast.add(record.model, record.task_id, record.total_cost_usd)
        summary.outcomes[record.outcome] += 1
        summary.gave_up += record.gave_up
        # Calls replayed from an earlier attempt were counted in its record.
        summary.cost_usd += (record.cost_usd or 0.0) - record.replayed_cost_usd
        summary.replayed_calls += record.replayed_calls
        summary.replayed_cost_usd += record.replayed_cost_usd
        if record.judge is not None:
            judge_cost = record.judge.usage.cost_usd or 0.0
            if record.judge.score is not None:
                summary.judged += 1
            else:
                summary.judge_failed += 1
            summary.judge_cost_usd += judge_cost
            summary.cost_usd += judge_cost
        error = record.trajectory.error if record.trajectory is not None else None
        if record.outcome == "judge_error" and record.judge is not None:  # the judge's, apart
            error = f"judge {record.judge.model!r}: {record.judge.error}"
        if error and record.outcome not in summary.first_errors:
            summary.first_errors[record.outcome] = error
        if OUTCOMES[record.outcome].stops_run and summary.stopped_by is None:
            summary.stopped_by = f"model {record.model!r}: {error or record.outcome}"

    async def _admit(
        self,
        spec: EpisodeSpec,
        in_flight: dict[asyncio.Task[EpisodeRecord], tuple[EpisodeSpec, float]],
    ) -> bool:
        """Wait until ``spec``'s expected cost fits in the budget beside what the
        episodes in flight are expected to cost; False when it cannot (not even alone),
        or when the run stops meanwhile. With no expectation yet (no episode of its
        model ran to its end), it starts when no episode of its model is in flight."""
        cap = self.max_cost_usd
        if cap is None:
            return True
        model, task_id = spec.model.name, spec.task.id
        while True:
            expected = self.forecast.expected(model, task_id)
            if expected is not None and spec.paid_replies is not None:  # replayed, not paid
                expected = max(0.0, expected - spec.paid_replies.cost_usd)
            if expected is None:
                if all(s.model.name != model for s, _ in in_flight.values()):
                    return True
            else:
                committed = self.summary.cost_usd + sum(self._reserved.values())
                if committed + expected <= cap:
                    self._reserved[spec.key] = expected
                    return True
                if not in_flight:
                    left = max(0.0, cap - self.summary.cost_usd)
                    self.summary.held_back = (
                        f"the next episode ({model} on {task_id}) is expected to cost "
                        f"${expected:.6f}, more than the ${left:.6f} left"
                    )
                    return False
            await asyncio.wait(list(in_flight), return_when=asyncio.FIRST_COMPLETED)
            if self._sink_error is not None or self.summary.stopped_by is not None:
                return False
            if self._over_budget():
                return False

    def _over_budget(self) -> bool:
        """Spent, by the calls' meter or by the records (an executor whose calls do not
        share the meter)."""
        cap = self.max_cost_usd
        return self.budget.exhausted or (cap is not None and self.summary.cost_usd >= cap)
