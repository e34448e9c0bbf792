"""A rollout: the suite it plays and the batch it leaves, around a run.

``gem-eval rollout`` plays its episodes as ``gem-eval run`` does
(:func:`gem_eval.runner.session.play_request`); this module makes the one-task suite an
env id stands for (:func:`rollout_suite`) and, after the run, writes its batch with the
run's own ``gamma`` and estimator (:func:`export_rollout`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gem_eval.errors import UserError

SUITE_FILE = "suite.yaml"
ROLLOUT_KEY = "rollout"
"""``manifest.extra`` key of a rollout's settings (``gamma``, ``estimator``)."""
DEFAULTS = {"gamma": 1.0, "estimator": "rebn"}
"""A rollout's settings when none were given (and those of a run made before they were
kept)."""


@dataclass(frozen=True)
class ExportedBatch:
    """What :func:`export_rollout` wrote: the files, the batch's description
    (``batch.json``'s fields), and the settings it was made with."""

    files: list[Path]
    about: dict[str, Any]
    gamma: float
    estimator: str


def export_rollout(
    results_dir: Path,
    run_id: str,
    given: Mapping[str, Any],
    out: Path,
    formats: Sequence[str],
) -> ExportedBatch:
    """Write the batch of run ``run_id``'s latest records into ``out``, with the settings
    ``given`` (``None``: the run's kept ones).

    Raises:
        UserError: No episode to learn from.
    """
    from gem_eval.rl.batch import build_batch, write_batch
    from gem_eval.store import RunDir

    run = RunDir.open(results_dir, run_id)
    # Given on resume only when equal to the run's or forced; a run made before they
    # were kept has none.
    kept = {**DEFAULTS, **(run.read_manifest().extra.get(ROLLOUT_KEY) or {})}
    used = {k: v if v is not None else kept[k] for k, v in given.items()}
    gamma, estimator = float(used["gamma"]), str(used["estimator"])
    frame, about = build_batch(run.latest_by_key().values(), gamma, estimator)
    files = write_batch(frame, {**about, "run_id": run_id}, out, formats)
    return ExportedBatch(files, about, gamma, estimator)


def rollout_suite(
    target: str,
    out: Path,
    episodes: int | None,
    samples: int | None,
    gamma: float,
    written: list[Path],
) -> tuple[str, int | None]:
    """The suite to play: ``target`` itself, or for an env id a one-task suite written
    into ``out`` (kept there, so that --resume finds it); and the run's --limit.
    ``written`` hears what was made (the file, then ``out`` if it was made for it)."""
    import yaml

    from gem_eval.registration import spec
    from gem_eval.suites.loader import find_suite
    from gem_eval.suites.schema import SuiteError

    try:
        return str(find_suite(target)), samples
    except SuiteError as not_a_suite:
        if ":" not in target:
            raise
        try:
            spec(target)
        except Exception:
            raise not_a_suite from None
    if episodes is not None and samples is not None:
        raise UserError("--episodes and --samples say the same for an env id: give one")
    made_out = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    path = out / SUITE_FILE
    task = {"id": target, "env": target, "samples": episodes or samples or 1, "gamma": gamma}
    text = yaml.safe_dump({"name": f"rollout-{target}", "tasks": [task]})
    if path.exists() and path.read_text() != text:  # an earlier rollout's: its runs read it
        raise UserError(
            f"--out {out} holds another rollout's suite ({path}), which its run resumes "
            "from: give another --out (or --resume that rollout)"
        )
    if not path.exists():
        written.append(path)
        written.extend([out] if made_out else [])
    path.write_text(text)
    return str(path.resolve()), None
