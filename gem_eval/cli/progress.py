"""Progress of a run: a live rich display on a terminal, plain lines in CI logs.

Both are sinks of the runner (called with every finished record) with ``start`` and
``stop`` around the run. Both also show the sandboxes the host holds at once
(:meth:`LiveProgress.sandboxes`, a listener of
:class:`~gem_eval.sandbox.capacity.HostCapacity`): live on the overall row, as a plain
line when the limit changes.
"""

from __future__ import annotations

import sys
import time
from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

from gem_eval.cli.streams import write_line
from gem_eval.outcomes import ERROR_OUTCOMES
from gem_eval.records import EpisodeRecord

if TYPE_CHECKING:
    from gem_eval.sandbox.capacity import CapacitySnapshot


class _Tally:
    """Running totals for one task or the whole run."""

    def __init__(self) -> None:
        self.done = 0
        self.scored = 0
        self.passed = 0
        self.tokens = 0
        self.cost = 0.0
        self.errors: Counter[str] = Counter()

    def add(self, record: EpisodeRecord) -> None:
        self.done += 1
        self.tokens += record.input_tokens + record.output_tokens
        self.cost += (record.cost_usd or 0.0) - record.replayed_cost_usd  # paid now
        if record.outcome in ERROR_OUTCOMES:
            self.errors[record.outcome] += 1
        if record.scored:
            self.scored += 1
            self.passed += int(record.success)

    @property
    def pass_rate(self) -> str:
        return f"{self.passed / self.scored:.2f}" if self.scored else "-"

    @property
    def error_text(self) -> str:
        return ", ".join(f"{n} {k}" for k, n in self.errors.items()) or "0"


class LiveProgress:
    """A bar per task and one overall, with pass rate, tokens, cost and errors so far."""

    def __init__(self, console: Console | None = None) -> None:
        self.progress = Progress(
            TextColumn("{task.description}", style="bold"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TextColumn("pass {task.fields[pass_rate]}"),
            TextColumn("{task.fields[tokens]} tok"),
            TextColumn("${task.fields[cost]:.4f}"),
            TextColumn("err {task.fields[errors]}"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self.rows: dict[str, Any] = {}
        self.tallies: dict[str, _Tally] = defaultdict(_Tally)
        self.capacity: CapacitySnapshot | None = None

    def start(self, totals: dict[str, int], done: dict[str, int]) -> None:
        fields: dict[str, Any] = {"pass_rate": "-", "tokens": 0, "cost": 0.0, "errors": "0"}
        self.rows["all"] = self.progress.add_task(
            self._overall(), total=sum(totals.values()), completed=sum(done.values()), **fields
        )
        for task_id, total in totals.items():
            self.rows[task_id] = self.progress.add_task(
                f"  {task_id}", total=total, completed=done.get(task_id, 0), **fields
            )
        self.progress.start()

    def __call__(self, record: EpisodeRecord) -> None:
        for row in ("all", record.task_id):
            tally = self.tallies[row]
            tally.add(record)
            self.progress.update(
                self.rows[row],
                advance=1,
                pass_rate=tally.pass_rate,
                tokens=tally.tokens,
                cost=tally.cost,
                errors=tally.error_text,
            )

    def sandboxes(self, snapshot: CapacitySnapshot) -> None:
        """Show the sandboxes alive and the limit (``sandboxes 3/7 (memory)``) on the
        overall row."""
        self.capacity = snapshot
        if "all" in self.rows:
            self.progress.update(self.rows["all"], description=self._overall())

    def _overall(self) -> str:
        return "all tasks" if self.capacity is None else f"all tasks, {self.capacity}"

    def stop(self) -> None:
        self.progress.stop()


class PlainProgress:
    """One line per ``every`` episodes (and at the end), for CI logs and pipes."""

    def __init__(self, every: int = 25, stream: Any = None) -> None:
        self.every = every
        self.stream = stream or sys.stderr
        self.tally = _Tally()
        self.total = 0
        self.started = time.monotonic()
        self.limit: tuple[int, str] | None = None  # the sandboxes' limit last told
        self.pending: CapacitySnapshot | None = None

    def start(self, totals: dict[str, int], done: dict[str, int]) -> None:
        self.total = sum(totals.values()) - sum(done.values())
        self._line(f"{self.total} episodes to play ({sum(done.values())} already done)")

    def __call__(self, record: EpisodeRecord) -> None:
        self.tally.add(record)
        if self.tally.done % self.every == 0 or self.tally.done == self.total:
            t = self.tally
            elapsed = time.monotonic() - self.started
            eta = elapsed / t.done * (self.total - t.done) if t.done else 0.0
            self._line(
                f"{t.done}/{self.total} done, pass {t.pass_rate}, {t.tokens} tokens, "
                f"${t.cost:.4f}, errors {t.error_text}, eta {eta:.0f}s"
            )
            if self.pending is not None:
                self._sandboxes_line(self.pending)

    def sandboxes(self, snapshot: CapacitySnapshot) -> None:
        """A line when the sandboxes' limit changes (not for each start): at once the
        first time and when another limit binds; a limit that moves (free memory does)
        with the next progress line, so it cannot flood a log."""
        limit = (snapshot.limit, snapshot.reason)
        if limit == self.limit:
            self.pending = None
        elif self.limit is None or snapshot.reason != self.limit[1]:
            self._sandboxes_line(snapshot)
        else:
            self.pending = snapshot

    def _sandboxes_line(self, snapshot: CapacitySnapshot) -> None:
        self.limit, self.pending = (snapshot.limit, snapshot.reason), None
        why = snapshot.reason
        if snapshot.reason == "memory" and snapshot.available is not None:
            why = f"memory: {_gib(snapshot.available)} free, {_gib(snapshot.reserve)} kept back"
        self._line(f"sandboxes: at most {snapshot.limit} at once ({why})")

    def stop(self) -> None:
        pass

    def _line(self, text: str) -> None:
        # A reader that left (`| head`) must not fail the run: the line goes nowhere.
        write_line(self.stream, f"[gem-eval] {text}")


def _gib(size: int) -> str:
    return f"{size / 2**30:.1f} GiB"
