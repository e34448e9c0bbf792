"""inspect_ai logs: a ``.json`` file (the whole ``EvalLog``) or a ``.eval`` file.

Read through the documented log format (inspect_ai ``log/_log.py``), without inspect_ai:

* ``EvalLog``: ``version`` (of the file format), ``status`` (``started``, ``success``,
  ``cancelled``, ``error``), ``eval`` (``task``, ``model``, ``dataset``, ``created``,
  ``packages`` (``inspect_ai``: its version), ``revision`` (``origin``, ``commit``: the
  eval's git checkout) ...), ``stats``, ``results``, ``error`` and ``samples``.
* An ``EvalSample``: ``id`` (int or str), ``epoch`` (from 1), ``input``, ``target``,
  ``messages``, ``output``, ``scores`` (scorer name -> ``{value, answer, explanation}``),
  ``model_usage`` (model -> ``ModelUsage``), ``total_time``, ``started_at``,
  ``completed_at``, ``error``, ``limit``, ``attachments``.
* A ``.eval`` file is a zip: ``header.json`` (the log without samples),
  ``samples/<id>_epoch_<n>.json``, ``summaries.json``, ``reductions.json``; a log still being
  written has ``_journal/start.json`` instead of a header, and logs before that had
  ``start.json`` and ``results.json``. Since 2026 its entries are zstd-compressed, which
  Python's ``zipfile`` reads only from 3.14: before, the ``zstandard`` package decodes them.
  Long strings may be stored once, as ``attachment://<hash>`` pointing into the sample's
  ``attachments``.

Episodes: the task is the log's ``eval.task`` (also the suite), the model ``eval.model``,
the epoch ``epoch - 1``. The score is the first scorer's value as inspect_ai's
``value_to_float`` reads it: ``C`` 1, ``I`` 0, ``P`` 0.5, ``N`` 0, yes/true 1, no/false 0,
numbers as they are (a dict value: its first entry). A sample with an ``error`` is an
``infra_error`` (unscored, never a 0); one that hit a ``limit`` is ``truncated``.

The run's ``extra["imported"]`` says who played it: ``version`` is inspect_ai's,
``log_version`` the file format's, ``origin`` and ``commit`` the eval's code when the log
names them (an inspect_ai log names no host).
"""

from __future__ import annotations

import io
import json
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any

from gem_eval.errors import UserError
from gem_eval.store.importers._common import (
    Episode,
    ImportedRun,
    as_dict,
    digest_files,
    read_json,
    sample_number,
    text_of,
    timestamp,
    tool_call,
)

_ZSTD = 93
"""The zip compression method number of zstandard."""
_ATTACHMENT = "attachment://"
_STATUS = {"success": "finished", "cancelled": "interrupted", "error": "failed"}


def is_log(path: Path) -> bool:
    """Whether ``path`` looks like an inspect_ai log (by suffix; a ``.json`` by its keys)."""
    if path.suffix == ".eval":
        return True
    if path.suffix != ".json":
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return b'"eval"' in head and b'"version"' in head


def read(path: Path) -> ImportedRun:
    """The run of one inspect_ai log.

    Raises:
        UserError: It is not a readable inspect_ai log.
    """
    if path.suffix == ".eval":
        log, samples = _read_eval_zip(path)
    else:
        log = as_dict(read_json(path), str(path))
        samples = log.get("samples") or []
    spec = as_dict(log.get("eval"), f"{path}: eval")
    task, model = spec.get("task"), spec.get("model")
    if not isinstance(task, str) or not isinstance(model, str):
        raise UserError(f"{path}: not an inspect_ai log (eval.task and eval.model missing)")
    stats = log.get("stats") or {}
    started = timestamp(stats.get("started_at"), timestamp(spec.get("created"), 0.0))
    finished = timestamp(stats.get("completed_at"), started)
    hashed: dict[str, Any] = {}
    episodes = []
    for sample in samples:
        sample = as_dict(sample, f"{path}: sample")
        try:
            episodes.append(_episode(sample, task, model, started, hashed))
        except (UserError, TypeError, ValueError) as exc:
            raise UserError(f"{path}: sample {sample.get('id')!r}: {exc}") from None
    if samples and not any(
        isinstance(s, dict) and (s.get("scores") or s.get("error")) for s in samples
    ):
        raise UserError(f"{path}: no sample was scored (a task without a scorer): nothing to rank")
    dataset = spec.get("dataset") or {}
    epochs = (spec.get("config") or {}).get("epochs") or 1
    status = log.get("status")
    error = (log.get("error") or {}).get("message") if status == "error" else None
    return ImportedRun(
        source="inspect_ai",
        path=path,
        version=_program_version(spec),
        suite=task,
        digest=digest_files([path]),
        suite_key=[task, sorted({str(s.get("id")) for s in samples})],
        started_at=started,
        finished_at=finished,
        status=_STATUS.get(str(status), "incomplete"),  # type: ignore[arg-type]
        error=error,
        planned=int(dataset.get("samples") or 0) * int(epochs) or None,
        episodes=episodes,
        details={
            "task": task,
            "eval_id": spec.get("eval_id"),
            "scorer": _first_scorer(samples),
            "log_version": log.get("version"),
            **_origin(spec),
            **({"sample_ids": hashed} if hashed else {}),
        },
    )


def _episode(
    sample: dict[str, Any], task: str, model: str, default_time: float, hashed: dict[str, Any]
) -> Episode:
    sample = _resolve(sample, sample.get("attachments") or {})
    started = timestamp(sample.get("started_at"), default_time)
    total = sample.get("total_time")
    latency = float(total) if isinstance(total, int | float) else 0.0
    finished = timestamp(sample.get("completed_at"), started + latency)
    input_tokens, output_tokens, cost = _usage(sample.get("model_usage") or {})
    scores = sample.get("scores") or {}
    error = sample.get("error")
    score: float | None = None
    if error:
        outcome, message = "infra_error", str((error or {}).get("message") or error)
    elif not scores:
        outcome, message = "infra_error", "the log holds no score for this sample"
    else:
        outcome = "truncated" if sample.get("limit") else "completed"
        message = None
        first = next(iter(scores.values()))
        score = value_to_float(first.get("value") if isinstance(first, dict) else first)
    return Episode(
        model=model,
        task_id=task,
        sample=sample_number(sample.get("id"), hashed),
        epoch=max(int(sample.get("epoch") or 1) - 1, 0),
        outcome=outcome,  # type: ignore[arg-type]
        score=score,
        error=message,
        started_at=started,
        finished_at=finished,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=cost,
        latency_s=latency,
        messages=[_message(m) for m in sample.get("messages") or [] if isinstance(m, dict)],
        initial_observation=_input_text(sample.get("input")),
    )


def value_to_float(value: Any) -> float:
    """A score value as inspect_ai's default ``value_to_float`` reads it.

    Raises:
        UserError: A value it cannot read (inspect_ai warns and counts it 0: an import
            refuses rather than invent a score).
    """
    if isinstance(value, dict) and value:
        value = next(iter(value.values()))
    if isinstance(value, bool | int | float):
        return float(value)
    if isinstance(value, str):
        mapped = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}.get(value)
        if mapped is not None:
            return mapped
        lowered = value.strip().lower()
        if lowered in ("yes", "true"):
            return 1.0
        if lowered in ("no", "false"):
            return 0.0
        try:
            return float(lowered)
        except ValueError:
            pass
    raise UserError(f"cannot read the score value {value!r} as a number")


def _usage(model_usage: dict[str, Any]) -> tuple[int, int, float | None]:
    """Input tokens (``input_tokens`` excludes cache reads and writes), output tokens and
    cost, summed over the models the sample called."""
    inp = out = 0
    cost: float | None = None
    for usage in model_usage.values():
        if not isinstance(usage, dict):
            continue
        inp += sum(
            int(usage.get(k) or 0)
            for k in ("input_tokens", "input_tokens_cache_read", "input_tokens_cache_write")
        )
        out += int(usage.get("output_tokens") or 0)
        if usage.get("total_cost") is not None:
            cost = (cost or 0.0) + float(usage["total_cost"])
    return inp, out, cost


def _message(m: dict[str, Any]) -> dict[str, Any]:
    """An inspect_ai ``ChatMessage`` as an OpenAI-style message."""
    role = str(m.get("role") or "user")
    out: dict[str, Any] = {"role": role, "content": text_of(m.get("content"))}
    if role == "assistant" and m.get("tool_calls"):
        out["tool_calls"] = [
            tool_call(str(c.get("id", "")), str(c.get("function", "")), c.get("arguments", {}))
            for c in m["tool_calls"]
            if isinstance(c, dict)
        ]
    if role == "assistant" and m.get("model"):
        out["model"] = m["model"]
    if role == "tool":
        out["tool_call_id"] = m.get("tool_call_id")
        if m.get("error"):
            out["is_error"] = True
            message = (m["error"] or {}).get("message") if isinstance(m["error"], dict) else None
            if message and not out["content"]:
                out["content"] = str(message)
    return out


def _input_text(value: Any) -> str:
    if isinstance(value, list):
        return "\n\n".join(text_of(m.get("content")) for m in value if isinstance(m, dict))
    return text_of(value)


def _program_version(spec: dict[str, Any]) -> str | None:
    """The inspect_ai that ran the eval (``eval.packages``); the log's own ``version`` is
    its file format's (2), kept apart as ``log_version``."""
    packages = spec.get("packages")
    version = packages.get("inspect_ai") if isinstance(packages, dict) else None
    return str(version) if version else None


def _origin(spec: dict[str, Any]) -> dict[str, Any]:
    """Where the eval's code came from (``eval.revision``: its git remote and commit);
    inspect_ai logs name no host."""
    revision = spec.get("revision")
    if not isinstance(revision, dict):
        return {}
    found = {"origin": revision.get("origin"), "commit": revision.get("commit")}
    return {k: str(v) for k, v in found.items() if v}


def _first_scorer(samples: list[Any]) -> str | None:
    for s in samples:
        if isinstance(s, dict) and s.get("scores"):
            return str(next(iter(s["scores"])))
    return None


def _resolve(value: Any, attachments: dict[str, str]) -> Any:
    """``value`` with every ``attachment://<hash>`` string replaced by its text."""
    if isinstance(value, str):
        if value.startswith(_ATTACHMENT):
            return attachments.get(value[len(_ATTACHMENT) :], value)
        return value
    if isinstance(value, list):
        return [_resolve(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, attachments) for k, v in value.items() if k != "attachments"}
    return value


def _read_eval_zip(path: Path) -> tuple[dict[str, Any], list[Any]]:
    """The header and the samples of a ``.eval`` file."""
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            if "header.json" in names:
                log = _entry(z, path, "header.json")
            elif "_journal/start.json" in names:  # still being written: no results yet
                log = {**_entry(z, path, "_journal/start.json"), "status": "started"}
            elif "start.json" in names:  # the first .eval layout
                log = {**_entry(z, path, "start.json")}
                if "results.json" in names:
                    log.update(_entry(z, path, "results.json"))
            else:
                raise UserError(f"{path}: not an inspect_ai .eval log (no header.json)")
            samples = [
                _entry(z, path, name)
                for name in sorted(names)
                if name.startswith("samples/") and name.endswith(".json")
            ]
    except (zipfile.BadZipFile, OSError) as exc:
        raise UserError(f"{path}: not a readable .eval (zip) file: {exc}") from None
    return as_dict(log, f"{path}: header.json"), samples


def _entry(z: zipfile.ZipFile, path: Path, name: str) -> Any:
    info = z.getinfo(name)
    # Python 3.14's zipfile decodes zstd itself (it then has ZIP_ZSTANDARD).
    manual = info.compress_type == _ZSTD and not hasattr(zipfile, "ZIP_ZSTANDARD")
    data = _zstd_entry(z, info, path) if manual else z.read(info)
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: {name}: not JSON: {exc}") from None


def _zstd_entry(z: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path) -> bytes:
    """A zstd-compressed entry (Python < 3.14's zipfile cannot decode them)."""
    try:
        import zstandard  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        raise UserError(
            f"{path}: its entries are zstd-compressed (inspect_ai 0.3.2xx): "
            "pip install 'gem-eval[inspect]'"
        ) from None
    fp = z.fp
    if fp is None:
        raise UserError(f"{path}: the zip file is closed")
    fp.seek(info.header_offset)
    header = fp.read(30)
    if len(header) != 30 or header[:4] != b"PK\x03\x04":
        raise UserError(f"{path}: {info.filename}: bad local zip header")
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    fp.seek(info.header_offset + 30 + name_len + extra_len)
    raw = fp.read(info.compress_size)
    # Several frames may follow one another (inspect_ai caps each frame's input).
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw), read_across_frames=True)
    data: bytes = reader.read()
    if zlib.crc32(data) != info.CRC:
        raise UserError(f"{path}: {info.filename}: CRC mismatch after zstd decoding")
    return data
