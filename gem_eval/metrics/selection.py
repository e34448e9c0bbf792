"""Which runs a leaderboard shows, and which of their episodes.

A leaderboard row never spans two runs, two scorers or two agents
(:func:`~gem_eval.metrics.summarize` keeps them apart): a row is an agent + model pair's,
as a public leaderboard lists Terminus-2 + gpt-5 apart from Codex CLI + gpt-5. This module
decides which runs stand on the board:

* runs named (``gem-eval leaderboard RUN ...``): exactly those, every agent and model of
  each;
* ``--all-runs``: every run, each its own rows;
* otherwise, for each suite, agent and model, the pair's latest finished run of the whole
  suite as written that grades with the tasks' own scorers: a run of an agent program
  never hides a run of gem-eval's own loop with the same model. A run of part of the suite
  (``--task``, ``--sample``, ``--category``, ``--limit``) or of a variant of it
  (``--seed``, ``--max-turns``) stands only for a pair without such a run; it is marked
  (:meth:`RunSelection.variants`, the board's ``variant`` column) and a note names it.
  A pair without a finished run shows its latest run, and a note says so. A run of
  ``gem-eval tasks check`` (the reference agents, or an agent against the do-nothing
  model) checks the tasks and never stands here; ``--all-runs`` and naming it show it,
  its variant ``tasks check``.

``agent`` (``--agent NAME``) keeps only what that agent played, as ``suite`` keeps one
suite. A run's agents are those that played its episodes, as their records say (the
index's ``played_by``: a run resumed with ``--agent X --force`` has a row per agent),
else its tasks' (``agents``; gem-eval's own loop for a run without them).

"Latest" is when a run's episodes were played: a re-scoring with the own scorers counts
as played when the run its chain of re-scorings began with was, and just after it, so
it stands in for that run only (when that run was the latest). An exploratory
``rescore --scorer X`` never displaces the suite's own scores; ``--scorer X`` asks for
the latest run scored by ``X`` instead.

The input is the index's run rows (:meth:`gem_eval.store.Index.runs`). pandas is imported
where used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from gem_eval.metrics.coverage import count
from gem_eval.records import DEFAULT_AGENT
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
        players: Per run id, the ``(agent, model)`` pairs shown from it (``latest`` may
            take one pair of a run and another pair's newer run).
        scorer: Only episodes graded by this scorer (a name or a label); ``None``: any.
        considered: How many runs the rule chose from (``named``: how many were named).
        unfinished: ``latest``: the runs shown though not finished, as ``(pair, run)``
            (the pair as :func:`player` names it).
        other_scorers: ``latest``: the scorers of runs left out for their scorer.
        parts: ``latest``: the runs of a part or variant of the suite shown because the
            pair has no run of the whole suite as written, as ``(pair, run)``.
        left_out: ``named``: one line per run named but not shown, saying why.
        passed_over: ``latest``: a pair's newest run of the whole suite, unfinished,
            passed over for an earlier finished run, as ``(pair, passed over, shown)``.
        agent: Only episodes this agent played; ``None``: any.
    """

    rule: Rule
    runs: list[Run]
    players: dict[str, set[tuple[str, str]]]
    scorer: str | None = None
    considered: int = 0
    unfinished: list[tuple[str, Run]] = field(default_factory=list)
    other_scorers: set[str] = field(default_factory=set)
    parts: list[tuple[str, Run]] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    passed_over: list[tuple[str, Run, Run]] = field(default_factory=list)
    agent: str | None = None

    @property
    def run_ids(self) -> list[str]:
        """The ids of :attr:`runs`."""
        return [r["run_id"] for r in self.runs]

    @property
    def models(self) -> dict[str, set[str]]:
        """Per run id, the models shown from it."""
        return {run: {model for _, model in pairs} for run, pairs in self.players.items()}

    def keep(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The rows of an episode frame this selection shows, in their order (a frame
        without an ``agent`` column is gem-eval's own loop's)."""
        shown = [(run, *pair) for run, pairs in self.players.items() for pair in pairs]
        agents = frame["agent"] if "agent" in frame.columns else DEFAULT_AGENT
        keys = frame.assign(agent=agents).set_index(["run_id", "agent", "model"]).index
        mask = keys.isin(shown) if shown else [False] * len(frame)
        kept: pd.DataFrame = frame[mask]
        if self.scorer is not None and "scorer" in kept.columns:
            kept = kept[[scored_by(label, self.scorer) for label in kept["scorer"]]]
        return kept

    def variants(self) -> dict[str, str]:
        """Run id -> how it differs from the whole suite as written (``--task 'a*'``,
        ``--seed 7``), for the runs shown that do."""
        return {r["run_id"]: str(r["variant"]) for r in self.runs if r.get("variant")}

    def mark(self, board: pd.DataFrame) -> pd.DataFrame:
        """``board`` (rows of these runs) with a ``variant`` column after ``run_id`` when
        a run shown is of part or a variant of its suite (empty for the others)."""
        variants = self.variants()
        if not variants or "run_id" not in board.columns:
            return board
        marked: pd.DataFrame = board.copy()
        at = list(marked.columns).index("run_id") + 1
        marked.insert(at, "variant", [variants.get(r) for r in marked["run_id"]])
        return marked

    def title(self, by: str) -> str:
        """What the board shows, in one line: the suite and run when there is one, the
        rule, the scorer and the grouping."""
        suites = sorted({str(r.get("suite")) for r in self.runs})
        parts = [f"suite {suites[0]}"] if len(suites) == 1 else []
        if self.rule == "latest":
            agents = {agent for pairs in self.players.values() for agent, _ in pairs}
            who = "model" if agents <= {DEFAULT_AGENT} else "agent + model"
            parts.append(f"each {who}'s latest finished run of the whole suite")
        elif self.rule == "all":
            parts.append(f"every run ({len(self.runs)})")
        else:
            parts.append(f"{count(self.considered, 'run')} named")
        if len(self.runs) == 1:
            parts.append(f"run {self.runs[0]['run_id']}")
        if self.agent is not None:
            parts.append(f"played by {self.agent}")
        if self.scorer is not None:
            parts.append(f"scored by {self.scorer}")
        elif self.rule == "latest":
            parts.append("the tasks' own scorers")
        return ", ".join([*parts, f"by {by}"])

    def warnings(self) -> list[str]:
        """What the board's rows do not say: a run named but not shown; ``latest``: an
        agent + model pair's run shown though not finished, or of part of its suite; runs
        of one suite whose suite hashes differ."""
        lines = list(self.left_out)
        lines += [
            f"{model} has no finished run of {run.get('suite')}: its latest, "
            f"{run['run_id']}, is {run.get('status')}"
            for model, run in self.unfinished
        ]
        lines += [
            f"{model} has no finished run of the whole suite {run.get('suite')} as written: "
            f"its row is run {run['run_id']}'s, played with {run.get('variant')}"
            for model, run in self.parts
        ]
        lines += [
            f"{model}'s latest run of the whole suite {newer.get('suite')}, "
            f"{newer['run_id']}, is {newer.get('status')}: its row is the earlier finished "
            f"run {run['run_id']}'s"
            for model, newer, run in self.passed_over
        ]
        return lines + _hash_warnings(self.runs)

    def hint(self) -> str | None:
        """How many runs were left out, and how to see them: ``latest``, the runs not
        shown; ``all`` with a scorer, those without its scores."""
        left = self.considered - len(self.runs)
        if self.rule == "named" or left <= 0:
            return None
        if self.rule == "all":
            verb = "holds" if left == 1 else "hold"
            return f"{count(left, 'other run')} {verb} no scores by {self.scorer}"
        line = f"{count(left, 'other run')} not shown: --all-runs shows every run"
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
    agent: str | None = None,
) -> RunSelection:
    """The runs a leaderboard shows (see the module docstring).

    Args:
        known: Every run of the index (:meth:`gem_eval.store.Index.runs` rows).
        named: Runs given by id: exactly these are shown.
        all_runs: Show every run.
        suite: Only runs of this suite.
        scorer: Only scores by this scorer: a name (``return``, ``judge``) or a label
            (``judge:openai/gpt-4o-mini``). With the default rule, each agent + model
            pair's latest run that holds such scores.
        agent: Only what this agent played (``terminus-2``, ``gem-eval``).

    Raises:
        ValueError: Both ``named`` and ``all_runs``.
    """
    if named is not None and all_runs:
        raise ValueError("give run ids or all_runs, not both")
    if named is not None:
        return _named(named, suite, scorer, agent)
    pool = [
        r
        for r in known
        if (suite is None or r.get("suite") == suite) and (agent is None or agent in agents_of(r))
    ]
    if all_runs:
        fits = [r for r in pool if scorer is None or _scores_with(r, scorer)]
        players = {r["run_id"]: _players(r, agent) for r in fits}
        return RunSelection("all", _oldest_first(fits), players, scorer, len(pool), agent=agent)

    by_id = {r["run_id"]: r for r in known}
    fits = [
        r
        for r in pool
        if not r.get("tasks_check")
        and (_scores_with(r, scorer) if scorer is not None else is_own_scored(r, by_id))
    ]
    chosen: dict[str, set[tuple[str, str]]] = {}
    unfinished: list[tuple[str, Run]] = []
    parts: list[tuple[str, Run]] = []
    passed_over: list[tuple[str, Run, Run]] = []
    for (_, played_by, model), runs in sorted(_by_suite_and_player(fits, agent).items()):
        run = max(runs, key=lambda r: _preference(r, by_id))
        chosen.setdefault(run["run_id"], set()).add((played_by, model))
        name = player(played_by, model)
        if run.get("status") != "finished":
            unfinished.append((name, run))
        if run.get("variant"):
            parts.append((name, run))
        whole = [r for r in runs if not r.get("variant")]
        newest = max(whole, key=lambda r: _preference(r, by_id)[2:], default=run)
        if newest.get("status") != "finished" and played_at(newest, by_id) > played_at(run, by_id):
            passed_over.append((name, newest, run))
    fit_ids = {r["run_id"] for r in fits}
    shown = [r for r in fits if r["run_id"] in chosen]
    others = {
        scorer_name(label)
        for r in pool
        if r["run_id"] not in fit_ids and not r.get("tasks_check")
        for label in (r.get("scorers") or {}).values()
    }
    return RunSelection(
        "latest",
        _oldest_first(shown),
        chosen,
        scorer,
        len(pool),
        unfinished,
        others,
        parts,
        passed_over=passed_over,
        agent=agent,
    )


def _named(
    named: Sequence[Run], suite: str | None, scorer: str | None, agent: str | None
) -> RunSelection:
    """The runs named, less those of another suite, without the scorer's scores or not
    played by the agent (each named in a line)."""
    unique = list({r["run_id"]: r for r in named}.values())
    shown, left_out = [], []
    for run in unique:
        if suite is not None and run.get("suite") != suite:
            left_out.append(
                f"run {run['run_id']} is of suite {run.get('suite')}, not {suite}: not shown"
            )
        elif scorer is not None and not _scores_with(run, scorer):
            left_out.append(f"run {run['run_id']} holds no scores by {scorer}: not shown")
        elif agent is not None and agent not in agents_of(run):
            left_out.append(
                f"run {run['run_id']} was played by {', '.join(agents_of(run))}, not {agent}: "
                "not shown"
            )
        else:
            shown.append(run)
    players = {r["run_id"]: _players(r, agent) for r in shown}
    return RunSelection(
        "named", _oldest_first(shown), players, scorer, len(unique), left_out=left_out, agent=agent
    )


def agents_of(run: Run) -> list[str]:
    """The agents that played a run's episodes, sorted: the row's ``played_by``, else its
    tasks' ``agents`` (gem-eval's own loop for a run row without either)."""
    played: list[str] = run.get("played_by") or []
    return sorted(set(played or (run.get("agents") or {}).values())) or [DEFAULT_AGENT]


def player(agent: str, model: str) -> str:
    """An agent + model pair as a line names it: the model alone for gem-eval's own loop
    (``openai/gpt-5``), else ``terminus-2 + openai/gpt-5``."""
    return model if agent == DEFAULT_AGENT else f"{agent} + {model}"


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


def _players(run: Run, agent: str | None) -> set[tuple[str, str]]:
    """A run's ``(agent, model)`` pairs (only ``agent``'s, when given)."""
    agents = [a for a in agents_of(run) if agent is None or a == agent]
    return {(a, model) for a in agents for model in run.get("models") or []}


def _by_suite_and_player(
    runs: list[Run], agent: str | None
) -> dict[tuple[str, str, str], list[Run]]:
    """``(suite, agent, model)`` -> the runs that played the pair."""
    groups: dict[tuple[str, str, str], list[Run]] = {}
    for run in runs:
        for pair in _players(run, agent):
            groups.setdefault((str(run.get("suite")), *pair), []).append(run)
    return groups


def played_at(run: Run, by_id: dict[str, Run]) -> float:
    """When ``run``'s episodes were played: for a re-scoring, when the run its chain of
    re-scorings began with started (as far as the chain is indexed, then the play time
    the re-scoring recorded)."""
    current, seen = run, {run["run_id"]}
    while current.get("rescored_from") in by_id and current["rescored_from"] not in seen:
        current = by_id[current["rescored_from"]]
        seen.add(current["run_id"])
    return float(current.get("played_at") or current.get("started_at") or 0.0)


def _preference(run: Run, by_id: dict[str, Run]) -> tuple[bool, bool, float, float, str]:
    """Which of a model's runs stands: finished first, then of the whole suite as written,
    then the latest played; of one play, the latest re-scoring."""
    return (
        run.get("status") == "finished",
        not run.get("variant"),
        played_at(run, by_id),
        run.get("started_at") or 0.0,
        run["run_id"],
    )


def _hash_warnings(runs: list[Run]) -> list[str]:
    """One line per suite whose runs shown evaluated different versions of it."""
    by_suite: dict[str, dict[str, list[str]]] = {}
    for run in runs:
        hashes = by_suite.setdefault(str(run.get("suite")), {})
        hashes.setdefault(str(run.get("suite_hash"))[:12], []).append(run["run_id"])
    return [
        f"the runs shown of {suite} evaluated different versions of it (suite hashes "
        + "; ".join(f"{h}: {_few(ids)}" for h, ids in sorted(hashes.items()))
        + "): their samples or tasks differ"
        for suite, hashes in sorted(by_suite.items())
        if len(hashes) > 1
    ]


def _few(names: list[str], most: int = 3) -> str:
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def _age(run: Run) -> tuple[float, str]:
    return (run.get("started_at") or 0.0, run["run_id"])


def _oldest_first(runs: list[Run]) -> list[Run]:
    return sorted(runs, key=_age)
