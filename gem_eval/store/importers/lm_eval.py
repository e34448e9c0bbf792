"""lm-evaluation-harness output: ``results_<date>.json`` and its ``samples_<task>_<date>.jsonl``.

``lm_eval --output_path OUT --log_samples`` writes, under ``OUT/<model_name_sanitized>/``,

* ``results_<date>.json`` (lm_eval ``result_schema.EvalResults``): ``results`` (task ->
  ``{"<metric>,<filter>": value, "alias": ...}``), ``configs`` (task -> its YAML config,
  with ``metric_list``), ``versions``, ``n-samples`` (task -> ``{original, effective}``),
  ``config`` (``model``, ``model_args`` ...), ``model_name``, ``date`` (a Unix time),
  ``lm_eval_version``, ``git_hash`` (the commit of the directory it ran in), ``task_hashes``;
* one ``samples_<task>_<date>.jsonl`` per task, one line per document and filter
  (``SampleResult``): ``doc_id``, ``doc``, ``target``, ``arguments``
  (``{"gen_args_0": {"arg_0": prompt, "arg_1": ...}}``), ``resps``, ``filtered_resps``,
  ``filter``, ``metrics`` (names), ``doc_hash``, ``prompt_hash``, ``target_hash``, and each
  metric's value under its name.

One results file is one run (one model). Each task is a task of the run, each ``doc_id``
a sample (epoch 0). The score is the task's primary metric: the first of its config's
``metric_list`` (else the first the samples name), under the first filter the results
list for it; the choice is kept in ``extra["imported"]["metrics"]``. A metric whose
per-sample value is not a number (a corpus metric such as BLEU) cannot score a sample:
the import refuses it. lm-eval records no failures per sample: every line is scored.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from gem_eval.errors import UserError
from gem_eval.store.importers._common import (
    Episode,
    ImportedRun,
    as_dict,
    digest_files,
    read_json,
    timestamp,
)

_RESULTS = re.compile(r"results_(?P<date>.+)\.json")


def is_results(path: Path) -> bool:
    """Whether ``path`` is an lm-eval results file (or samples file)."""
    return bool(_RESULTS.fullmatch(path.name)) or (
        path.name.startswith("samples_") and path.suffix == ".jsonl"
    )


def find_results(path: Path) -> list[Path]:
    """The results files ``path`` names: itself, the one a samples file belongs to, or
    every one under a directory."""
    if path.is_dir():
        return sorted(p for p in path.rglob("results_*.json") if _RESULTS.fullmatch(p.name))
    if path.name.startswith("samples_") and path.suffix == ".jsonl":
        siblings = list(path.parent.glob("*_*.json"))
        match = [p for p in siblings if path.stem.endswith("_" + _date(p))]
        if not match:
            raise UserError(
                f"{path}: no results_<date>.json beside it with the same date "
                "(it names the model and the metrics)"
            )
        return match
    return [path]


def read(results_path: Path) -> ImportedRun:
    """The run of one results file and its samples files.

    Raises:
        UserError: A file is not what lm-eval writes, or a metric is not per-sample.
    """
    results = as_dict(read_json(results_path), str(results_path))
    if not isinstance(results.get("results"), dict):
        raise UserError(f"{results_path}: not an lm-eval results file (no 'results')")
    config = results.get("config") or {}
    model = str(results.get("model_name") or config.get("model") or "unknown")
    date = _date(results_path)
    started = timestamp(results.get("date"), results_path.stat().st_mtime)
    files = [results_path]
    episodes: list[Episode] = []
    chosen: dict[str, str] = {}
    doc_keys: list[tuple[str, int, str]] = []
    for samples_path in sorted(results_path.parent.glob(f"samples_*_{date}.jsonl")):
        task = samples_path.name[len("samples_") : -len(f"_{date}.jsonl")]
        files.append(samples_path)
        rows = list(_rows(samples_path))
        metric, filter_ = _primary(results, task, rows, samples_path)
        chosen[task] = f"{metric},{filter_}"
        for lineno, row in rows:
            if row.get("filter", "none") != filter_:
                continue
            episodes.append(_episode(row, model, task, metric, started, f"{samples_path}:{lineno}"))
            doc_keys.append((task, int(row["doc_id"]), str(row.get("doc_hash") or "")))
    if not episodes:
        raise UserError(
            f"{results_path}: no samples_<task>_{date}.jsonl beside it (run lm_eval with "
            "--log_samples to record samples)"
        )
    suite = _suite(results.get("group_subtasks") or {}, sorted(chosen))
    parents = {
        task: group
        for group, members in (results.get("group_subtasks") or {}).items()
        for task in members or []
    }
    for episode in episodes:
        episode.category = parents.get(episode.task_id)
    seconds = _float(results.get("total_evaluation_time_seconds"))
    return ImportedRun(
        source="lm-eval",
        path=results_path,
        version=results.get("lm_eval_version"),
        suite=suite,
        digest=digest_files(files, base=results_path.parent),
        suite_key=sorted(doc_keys),
        started_at=started,
        finished_at=started + seconds if seconds is not None else None,
        episodes=episodes,
        details={
            "metrics": chosen,
            "model_args": config.get("model_args"),
            **({"commit": str(results["git_hash"])} if results.get("git_hash") else {}),
        },
    )


def _suite(groups: dict[str, list[str]], tasks: list[str]) -> str:
    """The group the run evaluated (``mmlu``), else its one task, else its tasks joined."""
    members = {t for subtasks in groups.values() for t in subtasks or []}
    top = sorted({g for g in groups if g not in members} | {t for t in tasks if t not in members})
    return top[0] if len(top) == 1 else "+".join(top)


def _date(results_path: Path) -> str:
    """The date stamp lm-eval put in the name: ``results_<date>.json``, or
    ``<name>_<date>.json`` when ``--output_path`` named a ``.json`` file."""
    stem, sep, date = results_path.stem.rpartition("_")
    if not sep or not stem or not date:
        raise UserError(f"{results_path}: an lm-eval results file is named results_<date>.json")
    return date


def _rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    rows = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read: {exc}") from None
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(f"{path}:{lineno}: not JSON: {exc.msg}") from None
        if not isinstance(row, dict) or not isinstance(row.get("doc_id"), int):
            raise UserError(f"{path}:{lineno}: not an lm-eval sample (no integer doc_id)")
        rows.append((lineno, row))
    return rows


def _primary(
    results: dict[str, Any], task: str, rows: list[tuple[int, dict[str, Any]]], path: Path
) -> tuple[str, str]:
    """The task's primary metric and the filter it is read under."""
    metric_list = ((results.get("configs") or {}).get(task) or {}).get("metric_list") or []
    names = [m["metric"] for m in metric_list if isinstance(m, dict) and "metric" in m]
    for _, row in rows[:1]:
        names += [n for n in row.get("metrics") or [] if n not in names]
    if not names:
        raise UserError(f"{path}: the samples name no metric")
    metric = str(names[0])
    keys = [k for k in (results["results"].get(task) or {}) if k.startswith(metric + ",")]
    filters = [k.split(",", 1)[1] for k in keys]
    filter_ = filters[0] if filters else str(rows[0][1].get("filter", "none")) if rows else "none"
    return metric, filter_


def _episode(
    row: dict[str, Any], model: str, task: str, metric: str, when: float, where: str
) -> Episode:
    value = row.get(metric)
    if isinstance(value, bool):
        value = float(value)
    if not isinstance(value, int | float):
        raise UserError(
            f"{where}: metric {metric!r} is not a per-sample number ({value!r}): "
            "a corpus metric cannot score single samples"
        )
    prompt, answer = _exchange(row)
    messages = [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]
    return Episode(
        model=model,
        task_id=task,
        sample=int(row["doc_id"]),
        epoch=0,
        outcome="completed",
        score=float(value),
        started_at=when,
        finished_at=when,
        messages=messages,
        initial_observation=prompt,
    )


def _exchange(row: dict[str, Any]) -> tuple[str, str]:
    """The prompt and the model's answer: the generated text, or for a multiple-choice
    task the continuation it gave the highest log-likelihood."""
    arguments = row.get("arguments") or {}
    requests = list(arguments.values()) if isinstance(arguments, dict) else list(arguments)

    def arg(request: Any, i: int) -> Any:
        if isinstance(request, dict):
            return request.get(f"arg_{i}")
        return request[i] if isinstance(request, list | tuple) and len(request) > i else None

    prompt = str(arg(requests[0], 0) or "") if requests else ""
    filtered = row.get("filtered_resps") or []
    if filtered and all(isinstance(r, list | tuple) and r for r in filtered):
        scores = [_float(r[0]) for r in filtered]
        if all(s is not None for s in scores) and len(requests) == len(filtered):
            best = max(range(len(scores)), key=lambda i: scores[i] or 0.0)
            return prompt, str(arg(requests[best], 1) or "")
    if filtered and isinstance(filtered[0], str):
        return prompt, filtered[0]
    return prompt, json.dumps(filtered)


def _float(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None
