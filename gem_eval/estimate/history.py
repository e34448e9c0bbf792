"""What earlier runs of a suite spent per agent, model and task, read from the results index.

An agent program spends other tokens and time than another on the same task and model
(Qwen Code several times Terminus-2's): history is kept per agent. An episode's agent is
the one its record says played it (the index's ``agent``); an episode of a run made
before runs had agents was played by gem-eval's own loop."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gem_eval.outcomes import is_scored
from gem_eval.records import DEFAULT_AGENT
from gem_eval.store import INDEX_FILE, Index

Key = tuple[str, str, str]
"""(agent, model name, task id)."""


@dataclass
class History:
    """Sums over earlier scored episodes of one agent and model on one task.

    Attributes:
        run_ids: The runs they come from, oldest first.
        same_hash: All of them come from runs of this run's suite hash.
        paid: Episodes of runs that took no reply from the response cache: only they
            say what time and money an episode takes (a cached reply keeps its tokens
            but costs nothing and takes no time).
        latency_s: Over the ``paid`` episodes.
        cost_usd: Recorded over the ``paid`` episodes; ``None`` when any recorded none
            (an unpriced model), so that a partial sum is never taken for the whole.
    """

    episodes: int = 0
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    paid: int = 0
    latency_s: float = 0.0
    cost_usd: float | None = 0.0
    run_ids: list[str] = field(default_factory=list)
    same_hash: bool = False

    def add(self, row: dict[str, Any], *, cached: bool) -> None:
        self.episodes += 1
        self.turns += row["turns"] or 0
        self.input_tokens += row["input_tokens"] or 0
        self.output_tokens += row["output_tokens"] or 0
        if row["run_id"] not in self.run_ids:
            self.run_ids.append(row["run_id"])
        if cached:
            return
        self.paid += 1
        self.latency_s += row["latency_s"] or 0.0
        cost = row["cost_usd"]
        self.cost_usd = None if cost is None or self.cost_usd is None else self.cost_usd + cost


def read_history(
    results_dir: Path, suite: str | None, suite_hash: str | None, wanted: set[Key]
) -> dict[Key, History]:
    """Earlier scored episodes of ``suite`` for each (agent, model, task) in ``wanted``.

    Episodes of runs whose suite hash is ``suite_hash`` are used alone when there are
    any for a key (they played the same samples); otherwise those of every run of the
    suite. Without ``suite_hash`` every run counts as of the same hash. Unscored
    episodes (infrastructure failures, cancelled ones) say nothing about what a played
    episode costs and are left out. No index, no history: the index is not created here.

    Raises:
        sqlite3.Error: The index cannot be read.
    """
    path = results_dir / INDEX_FILE
    if not path.is_file():
        return {}
    with Index(path) as index:
        runs = [r for r in index.runs() if suite is None or r["suite"] == suite]
        rows = index.episodes(run_ids=[r["run_id"] for r in runs]) if runs else []
    started = {r["run_id"]: (r["started_at"] or 0.0, r["run_id"]) for r in runs}
    same = {r["run_id"] for r in runs if suite_hash in (None, r["suite_hash"])}
    rows.sort(key=lambda row: started[row["run_id"]])
    cached = {
        run_id for run_id in {row["run_id"] for row in rows} if _hit_cache(results_dir, run_id)
    }
    matching: dict[Key, History] = {}
    other: dict[Key, History] = {}
    for row in rows:
        key = (row["agent"] or DEFAULT_AGENT, row["model"], row["task_id"])
        if key not in wanted or not is_scored(row["outcome"]):
            continue
        into = matching if row["run_id"] in same else other
        into.setdefault(key, History(same_hash=into is matching)).add(
            row, cached=row["run_id"] in cached
        )
    return {**other, **matching}


def _hit_cache(results_dir: Path, run_id: str) -> bool:
    """Whether the run took any reply from the response cache (its manifest counts
    them); a run whose manifest cannot be read counts as cached: its costs are not
    trusted, its tokens still are."""
    from gem_eval.errors import GemEvalError
    from gem_eval.store import RunDir

    try:
        manifest = RunDir(results_dir / run_id).read_manifest()
    except (GemEvalError, OSError):
        return True
    return bool((manifest.extra.get("cache") or {}).get("hits"))
