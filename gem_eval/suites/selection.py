"""Which part of a suite to play: ``--task GLOB``, ``--sample IDS``, ``--category NAME``.

A selection narrows a suite's episodes without changing what any of them is: a selected
sample keeps its index, seed and episode key, so a run of part of a suite compares with
a run of all of it on the samples they share (their suite hashes are equal).

* ``--task`` takes shell globs on task ids (``'tb/hello-*'``), repeatable; a task is kept
  when any glob matches it.
* ``--sample`` takes sample indices and ranges (``0,3,10-19``), as the episode keys and
  the results name them.
* ``--category`` takes a task's ``category:``, repeatable.

Each given part must match something: a glob or category that matches no task, or a
selection that leaves no episode, is a one-line error naming what the suite has.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gem_eval.errors import UserError, did_you_mean
from gem_eval.records import TaskSpec


@dataclass(frozen=True)
class Selection:
    """Globs on task ids, sample indices and categories; an empty part selects all."""

    tasks: tuple[str, ...] = ()
    samples: tuple[int, ...] = ()
    categories: tuple[str, ...] = ()

    @classmethod
    def parse(
        cls,
        tasks: Sequence[str] | None = None,
        samples: str | Sequence[int] | None = None,
        categories: Sequence[str] | None = None,
    ) -> Selection:
        """From the command line's values (``samples`` as ``"0,3,10-19"`` or a list)."""
        ids = parse_sample_ids(samples) if isinstance(samples, str) else tuple(samples or ())
        return cls(tuple(tasks or ()), tuple(sorted(set(ids))), tuple(categories or ()))

    def __bool__(self) -> bool:
        return bool(self.tasks or self.samples or self.categories)

    def keeps_task(self, task: TaskSpec) -> bool:
        """Whether ``task`` is selected (by its id and category)."""
        if self.tasks and not any(fnmatch.fnmatchcase(task.id, g) for g in self.tasks):
            return False
        return not self.categories or task.category in self.categories

    def keeps_sample(self, sample: int) -> bool:
        return not self.samples or sample in self.samples

    def check(self, tasks: Iterable[TaskSpec], samples: dict[str, int]) -> None:
        """Raise a one-line :class:`UserError` when a part of the selection matches
        nothing in a suite of ``tasks`` (``samples``: each task's sample count)."""
        tasks = list(tasks)
        ids = [t.id for t in tasks]
        for glob in self.tasks:
            if not any(fnmatch.fnmatchcase(i, glob) for i in ids):
                hint = did_you_mean(glob, ids) or f" The suite's tasks: {_few(ids)}."
                raise UserError(f"--task {glob!r} matches no task of the suite.{hint}")
        known = sorted({t.category for t in tasks if t.category})
        for category in self.categories:
            if category not in known:
                hint = did_you_mean(category, known) or (
                    f" Its categories: {_few(known)}." if known else " Its tasks have none."
                )
                raise UserError(f"--category {category!r} is no category of the suite.{hint}")
        kept = [t for t in tasks if self.keeps_task(t)]
        if not kept:
            raise UserError(f"{self.describe()} together select no task of the suite")
        if self.samples and not any(
            any(s < samples.get(t.id, 0) for s in self.samples) for t in kept
        ):
            most = max(samples.get(t.id, 0) for t in kept)
            raise UserError(
                f"--sample {show_ids(self.samples)}: the selected tasks have samples "
                f"0-{most - 1} only"
            )

    def describe(self) -> str:
        """The selection as its flags, for messages (``--task 'a*' --sample 0-3``)."""
        parts = [f"--task {g!r}" for g in self.tasks]
        parts += [f"--category {c!r}" for c in self.categories]
        if self.samples:
            parts.append(f"--sample {show_ids(self.samples)}")
        return " ".join(parts)


MAX_SAMPLE_IDS = 1_000_000
"""The most sample indices ``--sample`` may name (a run of more is no selection)."""


def parse_sample_ids(text: str) -> tuple[int, ...]:
    """``"0,3,10-12"`` -> ``(0, 3, 10, 11, 12)``.

    Raises:
        UserError: Not a list of non-negative integers and ``a-b`` ranges, or more than
            :data:`MAX_SAMPLE_IDS` of them.
    """
    if not text.strip():
        raise UserError("--sample takes sample indices and ranges like 0,3,10-19; got nothing")
    ids: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        low, dash, high = part.partition("-")
        try:
            first = int(low)
            last = int(high) if dash else first
        except ValueError:
            raise UserError(
                f"--sample takes sample indices and ranges like 0,3,10-19; got {text!r}"
            ) from None
        if first < 0 or last < first:
            raise UserError(f"--sample: {part!r} is no range of sample indices (0, 1, ...)")
        if len(ids) + last - first + 1 > MAX_SAMPLE_IDS:
            raise UserError(
                f"--sample {text}: more than {MAX_SAMPLE_IDS:,} samples; name fewer "
                "(or drop --sample to play them all)"
            )
        ids.extend(range(first, last + 1))
    return tuple(ids)


def show_ids(ids: Sequence[int]) -> str:
    """``(0, 1, 2, 5)`` -> ``0-2,5``."""
    spans: list[list[int]] = []
    for i in sorted(ids):
        if spans and i == spans[-1][1] + 1:
            spans[-1][1] = i
        else:
            spans.append([i, i])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def _few(names: Sequence[str], most: int = 8) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" ... ({len(names)} in all)" if len(names) > most else "")
