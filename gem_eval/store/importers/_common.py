"""What every importer shares: the imported run, sample numbers, hashes, times, and
chat messages turned into a gem-eval transcript.

An imported run is an ordinary run of the store (a manifest and an episode log) whose
manifest says where it came from (``extra["imported"]``). Its id is made from the source's
start time, the suite and a hash of the source's bytes, so that importing the same log twice
finds the run already there instead of making a second one.
"""

from __future__ import annotations

import hashlib
import json
import math
import platform
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from gem_eval.errors import UserError
from gem_eval.models.base import Message, ModelOutput, ToolCall, Usage
from gem_eval.outcomes import Outcome, is_scored
from gem_eval.records import EpisodeRecord, ModelSpec, RunManifest, RunStatus, TaskSpec
from gem_eval.store.run_id import slug
from gem_eval.trajectory import Step, ToolEvent, Trajectory

Source = Literal["inspect_ai", "harbor", "lm-eval"]
"""The harnesses gem-eval imports from (``extra["imported"]["source"]``)."""

SOURCES: tuple[Source, ...] = ("inspect_ai", "harbor", "lm-eval")

_HASHED_SAMPLE_BASE = 1 << 48
"""Sample numbers made from string ids lie at or above this (and below 2**49, exact in
a float), so they never meet an integer id of the source."""


@dataclass
class Episode:
    """One imported episode, before it has a run id."""

    model: str
    task_id: str
    sample: int
    epoch: int
    outcome: Outcome
    score: float | None
    started_at: float
    finished_at: float
    error: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    latency_s: float = 0.0
    messages: list[Message] = field(default_factory=list)
    initial_observation: str = ""
    category: str | None = None


@dataclass
class ImportedRun:
    """One run read from another harness's output, ready to be written to the store.

    Attributes:
        source: The harness.
        path: The file or directory it was read from.
        version: The source's format or program version, when it says.
        digest: A hash of the bytes it was read from (the run id's last part).
        suite_key: What makes two imports "the same suite": the task(s) and sample ids.
        planned: Episodes the source meant to play (default: those it recorded).
        details: More facts for ``extra["imported"]`` (the metric chosen, sample ids).
        skipped: What of the source could not be read and was left out, one line each
            naming the file (``extra["imported"]["skipped"]``).
    """

    source: Source
    path: Path
    version: str | None
    suite: str
    digest: str
    suite_key: list[Any]
    started_at: float
    episodes: list[Episode]
    finished_at: float | None = None
    status: RunStatus = "finished"
    error: str | None = None
    planned: int | None = None
    details: dict[str, Any] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        stamp = datetime.fromtimestamp(self.started_at, timezone.utc).strftime("%Y-%m-%dT%H-%M-%S")
        return f"{stamp}-{slug(self.suite)}-{self.digest[:6]}"

    def manifest(self) -> RunManifest:
        """The run's manifest, marked as imported."""
        from gem_eval._version import __version__

        models = list(dict.fromkeys(e.model for e in self.episodes))
        tasks = list(dict.fromkeys(e.task_id for e in self.episodes))
        suite_hash = hashlib.sha256(
            json.dumps([self.source, self.suite_key], sort_keys=True).encode()
        ).hexdigest()
        return RunManifest(
            run_id=self.run_id,
            suite=self.suite,
            suite_hash=suite_hash,
            models=[ModelSpec(name=m) for m in models],
            tasks=[TaskSpec(id=t, env_id=f"imported/{self.source}") for t in tasks],
            episodes_planned=max(self.planned or 0, len(self.episodes)),
            epochs=max((e.epoch for e in self.episodes), default=0) + 1,
            gem_eval_version=__version__,
            host=platform.node(),
            started_at=self.started_at,
            finished_at=self.finished_at,
            status=self.status,
            error=self.error,
            extra={
                "imported": {
                    "source": self.source,
                    "path": str(self.path.resolve()),
                    "version": self.version,
                    "digest": self.digest,
                    **self.details,
                    **({"skipped": self.skipped} if self.skipped else {}),
                }
            },
        )

    def records(self) -> list[EpisodeRecord]:
        """The episodes as records of this run.

        Raises:
            UserError: Two episodes share a model, task, sample and epoch.
        """
        seen: set[str] = set()
        out = []
        for e in self.episodes:
            key = f"{e.model}|{e.task_id}|{e.sample}|{e.epoch}"
            if key in seen:
                raise UserError(f"{self.path}: two episodes of {key!r} (the same sample twice)")
            seen.add(key)
            out.append(_record(self.run_id, key, self.source, e))
        return out


def _record(run_id: str, key: str, source: str, e: Episode) -> EpisodeRecord:
    scored = is_scored(e.outcome)
    score = e.score if scored else None
    success = bool(scored and score is not None and score >= 1.0)
    steps = steps_from_messages(e.messages)
    if steps and score is not None:
        steps[-1].reward = score
        steps[-1].terminated = True
    usage = Usage(input_tokens=e.input_tokens, output_tokens=e.output_tokens, cost_usd=e.cost_usd)
    trajectory = Trajectory(
        env_id=f"imported/{source}",
        model=e.model,
        initial_observation=e.initial_observation,
        messages=e.messages,
        steps=steps,
        outcome=e.outcome,
        error=e.error,
        usage=usage,
        duration_s=e.latency_s,
        success=success,
    )
    return EpisodeRecord(
        run_id=run_id,
        key=key,
        model=e.model,
        task_id=e.task_id,
        category=e.category,
        sample=e.sample,
        epoch=e.epoch,
        outcome=e.outcome,
        score=score,
        success=success,
        turns=len(steps),
        input_tokens=e.input_tokens,
        output_tokens=e.output_tokens,
        cost_usd=e.cost_usd,
        latency_s=e.latency_s,
        started_at=e.started_at,
        finished_at=e.finished_at,
        trajectory=trajectory,
    )


def sample_number(sample_id: Any, hashed: dict[str, Any]) -> int:
    """The episode's ``sample`` for a source's sample id.

    A non-negative integer id is the number itself; any other id (a string) is a stable
    hash of it, the same in every import, so that runs of one task by different models
    pair sample by sample in ``compare``. ``hashed`` collects ``{number: original id}``.
    """
    if isinstance(sample_id, int) and not isinstance(sample_id, bool) and sample_id >= 0:
        return sample_id
    text = str(sample_id)
    number = _HASHED_SAMPLE_BASE + int(hashlib.sha256(text.encode()).hexdigest()[:12], 16)
    hashed[str(number)] = sample_id
    return number


def digest_files(paths: Iterable[Path], base: Path | None = None) -> str:
    """A SHA-256 over the files' bytes (in the order given), and their paths relative to
    ``base`` when given: a copy of the source elsewhere hashes the same."""
    h = hashlib.sha256()
    for path in paths:
        if base is not None:
            h.update(path.relative_to(base).as_posix().encode() + b"\0")
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def timestamp(value: Any, default: float) -> float:
    """Seconds since the epoch from an ISO 8601 string or a number; ``default`` when
    missing or unreadable. A time without a zone is taken as UTC."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return default
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=timezone.utc)
        return parsed.timestamp()
    return default


def read_json(path: Path) -> Any:
    """A JSON file's content.

    Raises:
        UserError: It cannot be read or is not JSON (the message names the file and line).
    """
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not a UTF-8 text file") from None


def skip_line(what: Path, reason: Exception, skipped: str = "skipped") -> str:
    """One line naming what was left out and why, without repeating its path:
    ``skipped jobs/j: config.json:1: not JSON ...``."""
    text, prefix = str(reason), str(what)
    if text.startswith(prefix + "/"):
        text = text[len(prefix) + 1 :]
    elif text.startswith(prefix + ": "):
        text = text[len(prefix) + 2 :]
    return f"{skipped} {what}: {text}"


def as_dict(value: Any, where: str) -> dict[str, Any]:
    """``value`` if it is a JSON object, else a one-line error naming ``where``."""
    if not isinstance(value, dict):
        raise UserError(f"{where}: expected a JSON object, found {type(value).__name__}")
    return value


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, dict) and part.get("type") in ("image", "audio"):
                parts.append(_media(part))
        return "\n".join(parts)
    return json.dumps(content)


def _media(part: dict[str, Any]) -> str:
    """An image or audio part as text: ``(image)``, or ``(audio: PATH)`` when an ATIF
    source names its file (gem-eval's transcripts hold text only)."""
    source = part.get("source")
    path = source.get("path") if isinstance(source, dict) else None
    return f"({part['type']}: {path})" if isinstance(path, str) else f"({part['type']})"


def steps_from_messages(messages: list[Message]) -> list[Step]:
    """One step per assistant message: its text and tool calls, and the tool results
    that answered them (matched by call id)."""
    steps: list[Step] = []
    for index, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        calls = [
            ToolCall(
                id=str(c.get("id", "")),
                name=str((c.get("function") or {}).get("name", "")),
                arguments=str((c.get("function") or {}).get("arguments", "{}")),
            )
            for c in message.get("tool_calls") or []
        ]
        events = []
        for call in calls:
            reply = next(
                (
                    m
                    for m in messages[index + 1 :]
                    if m.get("role") == "tool" and m.get("tool_call_id") == call.id
                ),
                None,
            )
            if reply is not None:
                events.append(
                    ToolEvent(
                        call_id=call.id,
                        name=call.name,
                        arguments=call.arguments,
                        output=str(reply.get("content") or ""),
                        is_error=bool(reply.get("is_error")),
                    )
                )
        output = ModelOutput(
            text=text_of(message.get("content")),
            tool_calls=calls,
            model=str(message.get("model") or ""),
        )
        steps.append(Step(index=len(steps), output=output, tool_events=events))
    return steps


def tool_call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    """An OpenAI-style tool call; ``arguments`` as JSON text."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}
