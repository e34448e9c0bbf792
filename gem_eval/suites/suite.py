"""A loaded suite: its resolved tasks, and their expansion into a run's episodes.

Expansion. :meth:`Suite.episodes` yields, for each model, task, sample and epoch, one
:class:`~gem_eval.records.EpisodeSpec` with ``seed = base + sample``, ``base`` being the
run's seed, else the suite's ``defaults.seed``, else 0. Every model and every epoch plays
the same samples: epochs are repeated attempts at one sample (for pass@k), not new ones.
A game task has ``samples`` samples (default 1); a dataset task one per row, capped by
``samples`` when set; ``limit`` caps both.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gem_eval.datasets import Row
from gem_eval.records import EpisodeSpec, ModelSpec, TaskSpec
from gem_eval.suites.schema import SuiteError, TaskFields, describe, format_loc
from gem_eval.suites.selection import Selection

_MERGED_KEYS = ("limits", "generation", "args", "sandbox")
_AGENT_KEYS = {"agent", "agent_max_turns"}
"""Who plays a task, left out of what its samples are (:meth:`Suite.digest`)."""
MAX_EPISODES = 1_000_000
"""The most episodes one run may hold: more is a typo (``--epochs 10000000``) that would
take minutes and gigabytes to plan, not a run."""


def merge_layers(layers: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Task keys from several places, lowest first: ``limits``, ``generation``, ``args``
    and ``sandbox`` merge key by key, ``tags`` accumulate, any other key replaces (as
    ``sandbox: null`` does: no sandbox of the layers below)."""
    out: dict[str, Any] = {}
    for values in layers:
        for key, value in values.items():
            if key in _MERGED_KEYS and isinstance(out.get(key), dict) and isinstance(value, dict):
                out[key] = {**out[key], **value}
            elif key == "tags" and key in out:
                out[key] = list(dict.fromkeys([*out[key], *value]))
            else:
                out[key] = value
    return out


@dataclass(frozen=True)
class Origin:
    """Where a task's key was written, for messages: ``path:line: field``.

    Attributes:
        path: The file, as shown (the suite, or a task file it names).
        line: The 1-based line.
        field: The key's place in that file, e.g. ``tasks[1].args.max_number``.
    """

    path: str
    line: int
    field: str


@dataclass(frozen=True)
class SuiteTask:
    """One resolved task of a suite.

    Attributes:
        spec: The task as episodes carry it.
        samples: How many samples (for a dataset task, rows) it has.
        epochs: Attempts per sample.
        rows: A dataset task's ``sample_kwargs``, one per sample; ``None`` otherwise.
        source: ``file:line`` of the task item, for messages.
        origins: Where its ``env``, ``args``, ``dataset`` and ``generation`` (and each
            of their keys: ``"args.size"``, ``"dataset.fields.question"``) were written.
        dataset: The registry dataset it comes from, pinned (name, version, registry,
            each repository's URL and commit: :meth:`FetchedDataset.pin`), if any.
    """

    spec: TaskSpec
    samples: int
    epochs: int
    rows: list[Row] | None = None
    source: str = ""
    origins: dict[str, Origin] = field(default_factory=dict)
    dataset: dict[str, Any] | None = None

    def origin(self, *key: str) -> Origin | None:
        """Where ``key`` (e.g. ``"args", "size"``) was written, else its nearest
        enclosing key; ``None`` when not known."""
        for n in range(len(key), 0, -1):
            found = self.origins.get(".".join(key[:n]))
            if found is not None:
                return found
        return None


@dataclass
class Suite:
    """A loaded suite: resolved tasks, ready to expand into episodes."""

    name: str
    tasks: list[SuiteTask]
    description: str = ""
    path: Path | None = None
    seed: int | None = None
    defaults: dict[str, Any] = field(default_factory=dict)
    cache: bool = False
    """``cache: true``: its runs use the response cache (as ``--cache``)."""
    models: list[ModelSpec] = field(default_factory=list)
    """``models:``: what a run plays when no ``--model`` is given."""

    @property
    def datasets(self) -> list[dict[str, Any]]:
        """The registry datasets its tasks come from (each task's ``dataset``), once each;
        a run's manifest keeps them (``extra.datasets``)."""
        out: list[dict[str, Any]] = []
        for task in self.tasks:
            if task.dataset is not None and task.dataset not in out:
                out.append(task.dataset)
        return out

    def task_specs(
        self, overrides: dict[str, Any] | None = None, select: Selection | None = None
    ) -> list[TaskSpec]:
        """The tasks' specs with ``overrides`` (task keys, as in the YAML) on top; only
        those ``select`` keeps, when given."""
        specs = [spec for spec, _, _, _ in self._plan(overrides)]
        return [s for s in specs if select is None or select.keeps_task(s)]

    def episodes(
        self,
        models: list[ModelSpec],
        *,
        limit: int | None = None,
        epochs: int | None = None,
        seed: int | None = None,
        overrides: dict[str, Any] | None = None,
        select: Selection | None = None,
    ) -> list[EpisodeSpec]:
        """Every episode of a run of this suite, models outermost.

        Args:
            models: The models; each plays the same samples with the same seeds.
            limit: At most this many samples per task.
            epochs: Attempts per sample, instead of each task's ``epochs``.
            seed: The base seed, instead of the suite's ``defaults.seed`` (or 0).
            overrides: Task keys as in the YAML (``{"limits": {"max_turns": 5}}``),
                applied on top of every task.
            select: Only these tasks and samples (see :mod:`gem_eval.suites.selection`);
                a kept sample keeps its index, seed and key.

        Raises:
            SuiteError: Two models share a name, ``limit`` or ``epochs`` is below 1,
                ``overrides`` does not validate, or more than :data:`MAX_EPISODES`.
            UserError: A part of ``select`` matches nothing.
        """
        names = [m.name for m in models]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise SuiteError(f"model {twice[0]!r} is given twice; episode keys would clash")
        base = self._base_seed(seed)
        plan = self._plan(overrides, limit, epochs)
        if select:
            select.check([p[0] for p in plan], {p[0].id: p[1] for p in plan})
            plan = [p for p in plan if select.keeps_task(p[0])]
        kept = {
            task.id: [s for s in select.samples if s < samples]
            if select and select.samples
            else range(samples)
            for task, samples, _, _ in plan
        }
        # Counted, not measured: len() of a range past sys.maxsize overflows.
        count = {i: k.stop if isinstance(k, range) else len(k) for i, k in kept.items()}
        total = len(models) * sum(count[task.id] * n for task, _, n, _ in plan)
        if total > MAX_EPISODES:
            raise SuiteError(
                f"the run would play {total:,} episodes, more than {MAX_EPISODES:,}: fewer "
                "samples (--limit, --sample), epochs (--epochs) or models, or several runs"
            )
        out: list[EpisodeSpec] = []
        for model in models:
            for task, _, task_epochs, rows in plan:
                for sample in kept[task.id]:
                    kwargs = dict(rows[sample]) if rows else {}
                    for epoch in range(task_epochs):
                        key = EpisodeSpec.make_key(model.name, task.id, sample, epoch)
                        out.append(
                            EpisodeSpec(
                                key=key,
                                task=task,
                                model=model,
                                sample=sample,
                                epoch=epoch,
                                seed=base + sample,
                                sample_kwargs=kwargs,
                            )
                        )
        return out

    def episode_count(
        self, *, models: int = 1, limit: int | None = None, epochs: int | None = None
    ) -> int:
        """How many episodes :meth:`episodes` would yield for ``models`` models."""
        return models * sum(n * e for _, n, e, _ in self._plan(None, limit, epochs))

    def digest(self, *, seed: int | None = None, overrides: dict[str, Any] | None = None) -> str:
        """A sha256 of what each sample is: the task specs, the base seed, dataset rows.

        Sample and epoch counts (and ``limit``) are left out: they change how many samples
        run, not what they are, so such runs stay comparable on the samples they share.
        """
        content = {
            "seed": self._base_seed(seed),
            "tasks": [
                {"spec": spec.model_dump(mode="json", exclude=_AGENT_KEYS), "rows": task.rows}
                for (spec, _, _, _), task in zip(self._plan(overrides), self.tasks)
            ],
        }
        text = json.dumps(content, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    @property
    def hash(self) -> str:
        """:meth:`digest` of the suite as written (no run seed, no overrides)."""
        return self.digest()

    def _base_seed(self, seed: int | None) -> int:
        return seed if seed is not None else self.seed if self.seed is not None else 0

    def _plan(
        self, overrides: dict[str, Any] | None, limit: int | None = None, epochs: int | None = None
    ) -> list[tuple[TaskSpec, int, int, list[Row] | None]]:
        """``(spec, samples, epochs, rows)`` per task, after overrides and caps."""
        if (limit is not None and limit < 1) or (epochs is not None and epochs < 1):
            raise SuiteError("limit and epochs must be at least 1")
        top = _check_overrides(overrides) if overrides else {}
        plan = []
        for task in self.tasks:
            samples = top.get("samples", task.samples)
            if task.rows is not None:
                samples = min(samples, len(task.rows)) if "samples" in top else task.samples
            if limit is not None:
                samples = min(samples, limit)
            task_epochs = epochs or top.get("epochs", task.epochs)
            spec = task.spec
            rest = {k: v for k, v in top.items() if k not in ("samples", "epochs")}
            if rest:  # the keys set, not defaults: a hosted task's sandbox policy is those
                spec = TaskSpec.model_validate(
                    merge_layers([task.spec.model_dump(exclude_unset=True), rest])
                )
            plan.append((spec, samples, task_epochs, task.rows))
        return plan


def _check_overrides(overrides: dict[str, Any]) -> dict[str, Any]:
    try:
        return TaskFields.model_validate(overrides).model_dump(exclude_unset=True)
    except ValidationError as exc:
        loc, message = describe(exc, TaskFields)
        raise SuiteError(message, field=format_loc(("overrides", *loc))) from None
