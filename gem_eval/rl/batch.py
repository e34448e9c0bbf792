"""A batch of RL experience: the transitions of a run's episodes with their advantages,
written as Parquet and JSONL in a versioned schema.

One row per transition (one turn; see :mod:`gem_eval.rl.transitions`), columns
:data:`COLUMNS`. Which episodes go in: every scored one (see :mod:`gem_eval.outcomes`;
an episode that failed for want of infrastructure is not experience), the last attempt
of each. Advantages are computed once over the whole batch by one estimator of
:mod:`gem_eval.rl.estimators`; GRPO's groups are the episodes of one task and sample
(the same seed, so the same first observation) across epochs.

Files: ``<out>/transitions.parquet`` and/or ``<out>/transitions.jsonl``, and
``<out>/batch.json`` (the schema version, the settings, the counts).
"""

from __future__ import annotations

import importlib.util
import json
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gem_eval.errors import UserError
from gem_eval.records import EpisodeRecord
from gem_eval.rl.estimators import ESTIMATORS, Transitions, advantages
from gem_eval.rl.transitions import transition_rows

if TYPE_CHECKING:
    import pandas as pd

SCHEMA_VERSION = 1
"""The version of the batch's columns (:data:`COLUMNS`); ``batch.json`` carries it."""

FILE_FORMATS = ("parquet", "jsonl")

COLUMNS: dict[str, str] = {
    "run_id": "the run the episode was played in",
    "episode": "the episode's key in its run (model|task|sample|epoch)",
    "group": "GRPO's group: task and sample (episodes of one first observation)",
    "task_id": "the suite's task id",
    "env_id": "the env",
    "model": "the model (policy) that acted",
    "sample": "the sample index (its seed is `seed`)",
    "epoch": "the epoch",
    "seed": "the env's reset seed",
    "outcome": "how the episode ended (gem_eval.outcomes)",
    "score": "the episode's score under the suite's scorer",
    "turn": "the turn's index in the episode, from 0",
    "turns": "the episode's number of turns",
    "prompt": "the chat messages the model was given, as JSON",
    "completion": "the assistant message it wrote (text, native tool calls), as JSON",
    "action": "the text sent to the env (null for a turn of tool calls)",
    "answer": "what answered the turn: the env's observation or the tools' outputs",
    "reward": "the turn's reward r_t",
    "terminated": "the env ended the episode at this turn",
    "truncated": "the episode was cut after this turn (by the env or a limit)",
    "return": "G_t = r_t + gamma * G_{t+1}",
    "episode_return": "G_0 of the episode",
    "advantage": "A_t under the batch's estimator",
    "prompt_token_ids": "the prompt's token ids (null unless the server returned them)",
    "completion_token_ids": "the completion's token ids (null likewise)",
    "logprobs": "the log-probability of each completion token (null likewise)",
}
"""Every column of a batch, in order, with its meaning."""


def build_batch(
    records: Iterable[EpisodeRecord], gamma: float, estimator: str
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The batch of ``records`` (scored, with trajectories) and its description.

    Raises:
        UserError: ``estimator`` is unknown, or no record can be used.
    """
    import pandas as pd

    if estimator not in ESTIMATORS:
        advantages(estimator, Transitions.of([], []))  # raises the one-line error
    rows: list[dict[str, Any]] = []
    skipped: dict[str, int] = {}
    episodes = 0
    for record in records:
        if not record.scored or record.trajectory is None or not record.trajectory.steps:
            skipped[record.outcome] = skipped.get(record.outcome, 0) + 1
            continue
        turns = transition_rows(record.trajectory, gamma)
        head = {
            "run_id": record.run_id,
            "episode": record.key,
            "group": f"{record.task_id}|{record.sample}",
            "task_id": record.task_id,
            "env_id": record.trajectory.env_id,
            "model": record.model,
            "sample": record.sample,
            "epoch": record.epoch,
            "seed": record.seed,
            "outcome": record.outcome,
            "score": record.score,
            "turns": len(turns),
            "episode_return": turns[0]["return"],
        }
        rows += [{**head, **turn} for turn in turns]
        episodes += 1
    if not rows:
        raise UserError(f"no episode to learn from (skipped: {_counts(skipped) or 'none'})")
    order = ["run_id", "task_id", "sample", "epoch", "model", "turn"]
    frame = pd.DataFrame(rows).sort_values(order, kind="stable").reset_index(drop=True)
    batch = Transitions.of(
        frame["return"], frame["episode"], frame["group"], frame["episode_return"]
    )
    frame["advantage"] = advantages(estimator, batch)
    frame = frame[list(COLUMNS)]
    about = {
        "schema_version": SCHEMA_VERSION,
        "gamma": gamma,
        "estimator": estimator,
        "episodes": episodes,
        "transitions": len(frame),
        "skipped": skipped,
        "with_tokens": int(frame["completion_token_ids"].notna().sum()),
        "columns": COLUMNS,
    }
    return frame, about


def write_batch(
    frame: pd.DataFrame, about: dict[str, Any], out: Path, formats: Sequence[str] = FILE_FORMATS
) -> list[Path]:
    """Write the batch into ``out`` (created) in ``formats``; the files written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    if "parquet" in formats:
        _check_parquet()
        path = out / "transitions.parquet"
        frame.to_parquet(path, index=False)
        written.append(path)
    if "jsonl" in formats:
        path = out / "transitions.jsonl"
        with open(path, "w", encoding="utf-8") as f:
            for row in frame.to_dict(orient="records"):
                f.write(json.dumps(_plain(row), ensure_ascii=False) + "\n")
        written.append(path)
    path = out / "batch.json"
    path.write_text(json.dumps({**about, "files": [p.name for p in written]}, indent=2) + "\n")
    return [*written, path]


def read_batch(path: str | Path) -> pd.DataFrame:
    """A batch written by :func:`write_batch`: its directory, or one of its files.

    Raises:
        UserError: The batch's schema version is not this gem-eval's.
    """
    import pandas as pd

    path = Path(path)
    folder = path if path.is_dir() else path.parent
    about = json.loads((folder / "batch.json").read_text())
    if about.get("schema_version") != SCHEMA_VERSION:
        raise UserError(
            f"{folder}: batch schema {about.get('schema_version')}, this gem-eval reads "
            f"{SCHEMA_VERSION}"
        )
    if path.is_dir():
        parquet = folder / "transitions.parquet"
        path = parquet if parquet.exists() else folder / "transitions.jsonl"
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    return pd.read_json(path, lines=True, dtype=False)


def check_formats(formats: Sequence[str]) -> None:
    """Refuse unknown formats, and Parquet without pyarrow, before any episode runs."""
    for name in formats:
        if name not in FILE_FORMATS:
            raise UserError(f"unknown batch format {name!r}: choose {' or '.join(FILE_FORMATS)}")
    if "parquet" in formats:
        _check_parquet()


def _check_parquet() -> None:
    if importlib.util.find_spec("pyarrow") is None:
        raise UserError(
            "Parquet needs pyarrow: pip install 'gem-eval[rl]' (or write --format jsonl)"
        )


def _plain(row: Mapping[Hashable, Any]) -> dict[str, Any]:
    """A row as JSON takes it: numpy values as Python's, NaN as null."""
    out = {}
    for key, value in row.items():
        if hasattr(value, "tolist"):
            value = value.tolist()
        elif hasattr(value, "item"):
            value = value.item()
        if isinstance(value, float) and math.isnan(value):
            value = None
        out[str(key)] = value
    return out


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {name}" for name, n in sorted(counts.items()))
