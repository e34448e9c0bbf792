"""What a report shows, as plain JSON-ready data: the leaderboards, the comparison and gate
of two runs, episode summaries, and each episode's transcript (compressed, read on click).

The leaderboards come from :func:`gem_eval.metrics.summarize` and
:func:`gem_eval.metrics.render.to_text` exactly as ``gem-eval leaderboard --format json``
makes them, so the page and the command never disagree. pandas is imported where used.
"""

from __future__ import annotations

import base64
import gzip
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gem_eval.outcomes import SCORED_OUTCOMES
from gem_eval.returns import returns_to_go
from gem_eval.store.run_dir import RunDir

if TYPE_CHECKING:
    import pandas as pd

    from gem_eval.records import EpisodeRecord
    from gem_eval.store import Index

BY = {"model": ("model",), "task": ("model", "task_id"), "category": ("model", "category")}
"""The leaderboards a report holds, as ``gem-eval leaderboard --by`` groups them."""

SUMMARY_FIELDS = (
    "run_id", "key", "model", "task_id", "category", "sample", "epoch", "outcome", "score",
    "success", "turns", "tokens", "cost_usd", "latency_s", "tool_calls", "error",
)  # fmt: skip
"""The columns of an episode summary row, in order (rows are lists, to keep the page small)."""
MAX_CAST_BYTES = 4 * 1024 * 1024
"""An agent's recording larger than this is left out of the page (its file stays)."""


@dataclass
class ReportData:
    """Everything one report page shows.

    Attributes:
        runs: One manifest summary per run, in the order given (with ``phases``: the
            mean seconds per phase of its episodes that timed them); with two runs, each
            says its ``role``: ``baseline`` (the first) or ``new``. Its ``label`` names it
            in the plots' legends: its role, else ``run <number>``.
        boards: Leaderboard records by grouping (``model``, ``task``, ``category``).
        comparison: The paired comparison of the second run against the first, when two
            runs were given (``None`` otherwise); ``gate`` likewise, the gate's verdict.
        episodes: One row per episode (see :data:`SUMMARY_FIELDS`).
        transcripts: Per episode, in the same order: its transcript as base64 gzip JSON.
    """

    runs: list[dict[str, Any]]
    boards: dict[str, list[dict[str, Any]]]
    comparison: dict[str, Any] | None = None
    gate: dict[str, Any] | None = None
    episodes: list[list[Any]] = field(default_factory=list)
    transcripts: list[str] = field(default_factory=list)
    gamma: float = 1.0

    def page_data(self) -> dict[str, Any]:
        """The data embedded in the page as one JSON blob (transcripts apart)."""
        return {
            "runs": self.runs,
            "boards": self.boards,
            "comparison": self.comparison,
            "gate": self.gate,
            "fields": list(SUMMARY_FIELDS),
            "episodes": self.episodes,
            "gamma": self.gamma,
        }


def build(index: Index, results_dir: Path, run_ids: list[str], gamma: float = 1.0) -> ReportData:
    """Read the runs ``run_ids`` (index rows and run directories) into a :class:`ReportData`.

    Raises:
        UserError: pandas is missing (from the index).
        GemEvalError: A run directory cannot be read.
    """
    from gem_eval.metrics import summarize
    from gem_eval.metrics.render import to_text
    from gem_eval.phases import mean_phases

    frame = index.episodes_frame(run_ids=run_ids)
    known = {run["run_id"]: run for run in index.runs()}
    boards = {}
    if not frame.empty:
        for name, by in BY.items():
            boards[name] = json.loads(to_text(summarize(frame, by=by), "json"))
    data = ReportData(runs=[_run_summary(known[r]) for r in run_ids], boards=boards, gamma=gamma)
    if len(run_ids) == 2:
        data.runs[0]["role"], data.runs[1]["role"] = "baseline", "new"
        _add_comparison(data, index, [known[r] for r in run_ids])
    for number, run in enumerate(data.runs, 1):  # how the plots' legends name it
        run["label"] = run.get("role") or f"run {number}"
    for run_id, run in zip(run_ids, data.runs, strict=True):
        run_dir = RunDir(results_dir / run_id)
        timed: list[dict[str, float]] = []
        for record in run_dir.latest_by_key().values():
            timed += [record.phases] if record.phases else []
            data.episodes.append(_summary(record))
            body = transcript(record, gamma)
            if record.trajectory is not None and record.trajectory.agent_run is not None:
                body["casts"] = agent_casts(run_dir.path, record)
            data.transcripts.append(pack(body))
        run["phases"] = mean_phases(timed)
        run["phases_timed"] = len(timed)
    return data


def agent_casts(run_dir: Path, record: EpisodeRecord) -> dict[str, str]:
    """An agent program's terminal recordings (its ``.cast`` attachments, each up to
    :data:`MAX_CAST_BYTES`), for the page's player: name -> asciicast v2 text."""
    casts = {}
    for name in record.attachments:
        path = run_dir / name
        try:
            if name.endswith(".cast") and path.stat().st_size <= MAX_CAST_BYTES:
                casts[Path(name).name] = path.read_text(encoding="utf-8", errors="replace")
        except OSError:  # removed since: the record lists it, the page does without
            continue
    return casts


def transcript(record: EpisodeRecord, gamma: float) -> dict[str, Any]:
    """One episode as the viewer reads it: the trajectory as stored (tool outputs held once,
    in the messages, as ``output_at``), token traces left out, plus per-turn returns."""
    traj = record.trajectory
    body: dict[str, Any] = traj.model_dump(mode="json") if traj is not None else {}
    for step in body.get("steps", []):
        step.get("output", {}).pop("tokens", None)
    rewards = traj.rewards if traj is not None else []
    body["returns"] = returns_to_go(rewards, gamma)
    body["record"] = record.model_dump(mode="json", exclude={"trajectory"})
    return body


def pack(value: Any) -> str:
    """JSON, gzip, base64: what the page's ``DecompressionStream('gzip')`` unpacks.

    A float that JSON cannot hold (nan, inf: an env's info may carry one) becomes null."""
    try:
        raw = json.dumps(value, separators=(",", ":"), allow_nan=False, default=str)
    except ValueError:
        raw = json.dumps(_json_safe(value), separators=(",", ":"), allow_nan=False, default=str)
    return base64.b64encode(gzip.compress(raw.encode(), compresslevel=6, mtime=0)).decode()


def unpack(text: str) -> Any:
    """The inverse of :func:`pack` (for tests and tools)."""
    return json.loads(gzip.decompress(base64.b64decode(text)))


def _summary(record: EpisodeRecord) -> list[Any]:
    traj = record.trajectory
    calls = sum(len(s.output.tool_calls) for s in traj.steps) if traj is not None else 0
    row = {
        **record.model_dump(mode="json", exclude={"trajectory"}),
        "tokens": record.input_tokens + record.output_tokens,
        "tool_calls": calls,
        "error": traj.error if traj is not None else None,
        "score": record.score if record.outcome in SCORED_OUTCOMES else None,
    }
    return [_finite(row.get(name)) for name in SUMMARY_FIELDS]


def _json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return _finite(value)


def _finite(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _run_summary(run: dict[str, Any]) -> dict[str, Any]:
    keep = (
        "run_id", "suite", "suite_hash", "status", "episodes_planned", "episodes_done",
        "started_at",
    )  # fmt: skip
    return {k: run.get(k) for k in keep} | {"models": run.get("models")}


def _add_comparison(data: ReportData, index: Index, runs: list[dict[str, Any]]) -> None:
    """The paired comparison and gate of the second run against the first (the baseline),
    with ``gem-eval gate``'s default thresholds."""
    from gem_eval.metrics.compare import compare_runs, gate

    base, new = runs
    frames: list[pd.DataFrame] = [index.episodes_frame(run_ids=[r["run_id"]]) for r in runs]
    if frames[0].empty or frames[1].empty:
        return
    same = base.get("suite_hash") == new.get("suite_hash")
    verdict = gate(frames[0], frames[1], same_suite_hash=same)
    reasons = list(verdict.reasons)
    status = verdict.status
    for run, frame in zip(runs, frames):  # as `gem-eval gate`: a partial run is not comparable
        if run.get("status") != "finished" or len(frame) < (run.get("episodes_planned") or 0):
            status = "incomparable"
            reasons.insert(0, f"run {run['run_id']} is {run.get('status')}: finish it first")
    data.gate = {"status": status, "reasons": reasons, "base": base["run_id"]}
    data.gate["new"] = new["run_id"]
    if verdict.comparison is None:  # scored by different scorers: nothing to pair
        return
    cmp = compare_runs(frames[0], frames[1])
    if cmp.n_pairs:
        data.comparison = json.loads(json.dumps(asdict(cmp), default=str), parse_constant=_nan)
        data.comparison["base_run"], data.comparison["new_run"] = base["run_id"], new["run_id"]


def _nan(_: str) -> None:
    return None
