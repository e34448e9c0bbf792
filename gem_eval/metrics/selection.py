"""Which runs a leaderboard shows, and which of their episodes.

A leaderboard row never spans two runs or two scorers (:func:`~gem_eval.metrics.summarize`
keeps them apart); this module decides which runs stand on the board:

* runs named (``gem-eval leaderboard RUN ...``): exactly those, every model of each;
* ``--all-runs``: every run, each its own rows;
* otherwise, for each suite and model, the model's latest finished run of the suite that
  grades with the tasks' own scorers. A re-scoring with the own scorers is such a run, and
  newer than its original: it stands in for it. An exploratory ``rescore --scorer X`` is
  not, so it never displaces the suite's own scores; ``--scorer X`` asks for the latest
  run scored by ``X`` instead. A model without a finished run shows its latest run, and
  a note says so.

The input is the index's run rows (:meth:`gem_eval.store.Index.runs`). pandas is imported
where used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from gem_eval.store.scorers import scorer_name

if TYPE_CHECKING:
    import pandas as pd

Rule = Literal["latest", "all", "named"]
Run = dict[str, Any]


@dataclass(frozen=True)
class RunSelection:
    """The runs a leaderboard shows.

    Attributes:
        rule: ``named`` (runs given), ``all`` (``--all-runs``) or ``latest`` (the default).
        runs: The runs shown, oldest first.
        models: Per run id, the models shown from it (``latest`` may take one model of a
            run and another model's newer run).
        scorer: Only episodes graded by this scorer (a name or a label); ``None``: any.
        considered: How many runs the rule chose from.
        unfinished: ``latest``: the runs shown though not finished, as ``(model, run)``.
        other_scorers: ``latest``: the scorers of runs left out for their scorer.
    """

    rule: Rule
    runs: list[Run]
    models: dict[str, set[str]]
    scorer: str | None = None
    considered: int = 0
    unfinished: list[tuple[str, Run]] = field(default_factory=list)
    other_scorers: set[str] = field(default_factory=set)

    @property
    def run_ids(self) -> list[str]:
        """The ids of :attr:`runs`."""
        return [r["run_id"] for r in self.runs]

    def keep(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The rows of an episode frame this selection shows, in their order."""
        pairs = [(run, model) for run, models in self.models.items() for model in models]
        keys = frame.set_index(["run_id", "model"]).index
        mask = keys.isin(pairs) if pairs else [False] * len(frame)
        kept: pd.DataFrame = frame[mask]
        if self.scorer is not None and "scorer" in kept.columns:
            kept = kept[[scored_by(label, self.scorer) for label in kept["scorer"]]]
        return kept

    def title(self, by: str) -> str:
        """What the board shows, in one line: the suite and run when there is one, the
        rule, the scorer and the grouping."""
        suites = sorted({str(r.get("suite")) for r in self.runs})
        parts = [f"suite {suites[0]}"] if len(suites) == 1 else []
        if self.rule == "latest":
            parts.append("each model's latest finished run")
        elif self.rule == "all":
            parts.append(f"every run ({len(self.runs)})")
        else:
            parts.append(f"{len(self.runs)} run(s) named")
        if len(self.runs) == 1:
            parts.append(f"run {self.runs[0]['run_id']}")
        if self.scorer is not None:
            parts.append(f"scored by {self.scorer}")
        elif self.rule == "latest":
            parts.append("the tasks' own scorers")
        return ", ".join([*parts, f"by {by}"])

    def warnings(self) -> list[str]:
        """One line per run shown though not finished (``latest``: the model has none)."""
        return [
            f"{model} has no finished run of {run.get('suite')}: its latest, "
            f"{run['run_id']}, is {run.get('status')}"
            for model, run in self.unfinished
        ]

    def hint(self) -> str | None:
        """``latest``: how many runs were left out, and how to see them."""
        left = self.considered - len(self.runs)
        if self.rule != "latest" or left <= 0:
            return None
        line = f"{left} other run(s) not shown: --all-runs shows every run"
        if self.other_scorers:
            names = "|".join(sorted(self.other_scorers))
            line += f", --scorer {names} the latest scored so"
        return line


def select_runs(
    known: Sequence[Run],
    *,
    named: Sequence[Run] | None = None,
    all_runs: bool = False,
    suite: str | None = None,
    scorer: str | None = None,
) -> RunSelection:
    """The runs a leaderboard shows (see the module docstring).

    Args:
        known: Every run of the index (:meth:`gem_eval.store.Index.runs` rows).
        named: Runs given by id: exactly these are shown.
        all_runs: Show every run.
        suite: Only runs of this suite.
        scorer: Only scores by this scorer: a name (``return``, ``judge``) or a label
            (``judge:openai/gpt-4o-mini``). With the default rule, each model's latest
            run that holds such scores.

    Raises:
        ValueError: Both ``named`` and ``all_runs``.
    """
    if named is not None and all_runs:
        raise ValueError("give run ids or all_runs, not both")
    pool = list(named) if named is not None else list(known)
    pool = list({r["run_id"]: r for r in pool if suite is None or r.get("suite") == suite}.values())
    if named is not None or all_runs:
        rule: Rule = "named" if named is not None else "all"
        if scorer is not None:
            pool = [r for r in pool if _scores_with(r, scorer)]
        models = {r["run_id"]: set(r.get("models") or []) for r in pool}
        return RunSelection(rule, _oldest_first(pool), models, scorer, len(pool))

    by_id = {r["run_id"]: r for r in known}
    fits = [
        r
        for r in pool
        if (_scores_with(r, scorer) if scorer is not None else is_own_scored(r, by_id))
    ]
    chosen: dict[str, set[str]] = {}
    unfinished: list[tuple[str, Run]] = []
    for (_, model), runs in sorted(_by_suite_and_model(fits).items()):
        finished = [r for r in runs if r.get("status") == "finished"]
        run = max(finished or runs, key=_age)
        chosen.setdefault(run["run_id"], set()).add(model)
        if not finished:
            unfinished.append((model, run))
    fit_ids = {r["run_id"] for r in fits}
    shown = [r for r in fits if r["run_id"] in chosen]
    others = {
        scorer_name(label)
        for r in pool
        if r["run_id"] not in fit_ids
        for label in (r.get("scorers") or {}).values()
    }
    return RunSelection(
        "latest", _oldest_first(shown), chosen, scorer, len(pool), unfinished, others
    )


def is_own_scored(run: Run, by_id: dict[str, Run]) -> bool:
    """Whether ``run`` grades each task with the task's own scorer: a run played (or
    imported) is; a re-scoring is when its scorers are those of the run its chain of
    re-scorings began with. When that run is no longer indexed, when none of the chain's
    re-scorings asked for a scorer."""
    current, seen, asked = run, {run["run_id"]}, False
    while current.get("rescored_from"):
        asked = asked or bool(current.get("rescore_scorer"))
        parent = by_id.get(current["rescored_from"])
        if parent is None or parent["run_id"] in seen:
            return not asked
        seen.add(parent["run_id"])
        current = parent
    own: dict[str, str] = current.get("scorers") or {}
    return all(own.get(task, label) == label for task, label in (run.get("scorers") or {}).items())


def scored_by(label: str | None, scorer: str) -> bool:
    """Whether the scorer ``label`` is ``scorer`` (a name, or a whole label)."""
    return label is not None and (label == scorer or scorer_name(label) == scorer)


def _scores_with(run: Run, scorer: str) -> bool:
    return any(scored_by(label, scorer) for label in (run.get("scorers") or {}).values())


def _by_suite_and_model(runs: list[Run]) -> dict[tuple[str, str], list[Run]]:
    groups: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        for model in run.get("models") or []:
            groups.setdefault((str(run.get("suite")), model), []).append(run)
    return groups


def _age(run: Run) -> tuple[float, str]:
    return (run.get("started_at") or 0.0, run["run_id"])


def _oldest_first(runs: list[Run]) -> list[Run]:
    return sorted(runs, key=_age)
