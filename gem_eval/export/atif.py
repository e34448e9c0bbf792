"""gem-eval episodes as ATIF documents (Harbor's Agent Trajectory Interchange Format).

One episode is one document (:mod:`gem_eval.export.atif_schema`, ATIF-v1.7):

* the messages before the model's first reply become ``system`` and ``user`` steps (the
  system prompt, with the text protocol's instructions in ``text`` mode, and the env's
  first observation);
* every model call becomes one ``agent`` step (``llm_call_count`` 1): its text, its tool
  calls (native ones, and those written in the text protocol), their results as
  observation results naming the call (``source_call_id``), and its usage as
  ``metrics``. When the answer went to the env, the env's reply is an observation
  result without ``source_call_id`` (an action that is not a tool call, as the RFC puts
  it). A step a limit added without a model call (to grade the end state) has
  ``llm_call_count`` 0;
* gem-eval's own facts sit in ``extra``: the episode's (run, key, env, task, seed,
  sample, outcome, score, error ...) at the root, each step's reward and end flags on
  its step, each result's error flag on the result.

Tool call ids are unique in a document: a repeated one (the text protocol numbers calls
per reply: ``call_0``) gets ``#<step_id>`` appended, on the call and on its result.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gem_eval.errors import StoreWriteError
from gem_eval.export.atif_schema import ATIF_VERSION, Trajectory

if TYPE_CHECKING:
    from gem_eval.records import EpisodeRecord, RunManifest
    from gem_eval.trajectory import Step, ToolEvent
    from gem_eval.trajectory import Trajectory as Episode

AGENT_NAME = "gem-eval"
NOTES = (
    "Exported by gem-eval: one agent step per model call; a result without "
    "source_call_id is the env's reply to the answer; outcome, score and rewards are in "
    "extra."
)


def write_run(manifest: RunManifest, records: Sequence[EpisodeRecord], out: Path) -> list[Path]:
    """Write one ATIF document per record to ``out``, named after the episode's key.

    Raises:
        StoreWriteError: A file cannot be written.
    """
    from gem_eval.store.run_dir import episode_slug

    files = []
    for record in records:
        path = out / f"{episode_slug(record.key)}.json"
        text = to_atif(record, manifest).to_json()
        try:
            path.write_text(text + "\n", encoding="utf-8")
        except OSError as exc:
            raise StoreWriteError(path, exc) from exc
        files.append(path)
    return files


def to_atif(record: EpisodeRecord, manifest: RunManifest | None = None) -> Trajectory:
    """The ATIF document of one episode (validated: a broken one raises).

    Args:
        record: The episode.
        manifest: Its run's manifest (for the suite and gem-eval's version).
    """
    from gem_eval._version import __version__

    episode = record.trajectory
    steps = _steps(episode) if episode is not None else []
    if not steps:  # the episode ended before its first observation (a failed reset)
        steps = [{"source": "system", "message": "", "extra": {"empty_episode": True}}]
    for number, step in enumerate(steps, start=1):
        step["step_id"] = number
    _unique_call_ids(steps)
    agent: dict[str, Any] = {
        "name": AGENT_NAME,
        "version": manifest.gem_eval_version if manifest else __version__,
        "model_name": record.model,
    }
    if episode is not None:
        agent["extra"] = {"tool_mode": episode.tool_mode}
        definitions = _tool_definitions(episode)
        if definitions:
            agent["tool_definitions"] = definitions
    document = {
        "schema_version": ATIF_VERSION,
        "session_id": f"{record.run_id}/{record.key}",
        "agent": agent,
        "steps": steps,
        "notes": NOTES,
        "final_metrics": _final_metrics(record, episode, len(steps)),
        "extra": _episode_facts(record, episode, manifest),
    }
    return Trajectory.model_validate(document)


def _steps(episode: Episode) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    for message in episode.messages:  # what the model read before its first reply
        if message.get("role") == "assistant":
            break
        source = "system" if message.get("role") == "system" else "user"
        steps.append({"source": source, "message": _text(message.get("content"))})
    calls_made = sum(m.get("role") == "assistant" for m in episode.messages)
    schemas = _text_protocol_schemas(episode)
    for step in episode.steps:
        steps.append(_agent_step(step, episode, schemas, model_call=step.index < calls_made))
    return steps


def _agent_step(
    step: Step, episode: Episode, schemas: dict[str, dict[str, Any]], *, model_call: bool
) -> dict[str, Any]:
    output = step.output
    atif: dict[str, Any] = {"source": "agent", "message": output.text}
    if output.model and output.model != episode.model:
        atif["model_name"] = output.model
    atif["llm_call_count"] = 1 if model_call else 0
    calls = [_tool_call(event, episode.tool_mode, schemas) for event in step.tool_events]
    ran = {event.call_id for event in step.tool_events}
    for unrun in output.tool_calls:  # asked for, never run (the episode ended first)
        if episode.tool_mode == "native" and unrun.id not in ran:
            call = _arguments_of(unrun.arguments, None)
            calls.append({"tool_call_id": unrun.id, "function_name": unrun.name, **call})
    if calls:
        atif["tool_calls"] = calls
    results = [
        {
            "source_call_id": event.call_id,
            "content": event.output,
            "extra": {"is_error": event.is_error, "latency_s": event.latency_s},
        }
        for event in step.tool_events
    ]
    if step.action is not None and step.observation is not None:
        results.append({"content": step.observation, "extra": {"env_step": True}})
    if results:
        atif["observation"] = {"results": results}
    if model_call:
        usage = output.usage
        atif["metrics"] = {
            "prompt_tokens": usage.input_tokens,
            "completion_tokens": usage.output_tokens,
            "cached_tokens": usage.cached_tokens,
            "cost_usd": usage.cost_usd,
            "extra": {"latency_s": output.latency_s, "retries": output.retries},
        }
    extra: dict[str, Any] = {"reward": step.reward}
    if step.action is not None:
        extra |= {"terminated": step.terminated, "truncated": step.truncated}
    if output.finish_reason:
        extra["finish_reason"] = output.finish_reason
    if step.info:
        extra["info"] = step.info
    atif["extra"] = extra
    return atif


def _tool_call(event: ToolEvent, mode: str, schemas: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """An ATIF tool call from a recorded one: ``arguments`` must be an object, so the
    raw text the model wrote is read the way the agent loop read it."""
    call = {"tool_call_id": event.call_id, "function_name": event.name}
    if mode == "native":
        return call | _arguments_of(event.arguments, None)
    try:
        body = json.loads(event.arguments)
    except (json.JSONDecodeError, RecursionError):
        body = None
    if isinstance(body, dict) and body.get("name") == event.name:  # <tool_call>{json}
        return call | _arguments_of(body.get("arguments", {}), event.arguments)
    # <tag>body</tag>: the body fills the tool's one argument
    parameter = _sole_parameter(schemas.get(event.name))
    if parameter is None:
        return call | {"arguments": {}, "extra": {"raw_arguments": event.arguments}}
    return call | {"arguments": {parameter: event.arguments}}


def _arguments_of(value: Any, raw: str | None) -> dict[str, Any]:
    """``{"arguments": ...}``, keeping text that is no JSON object in ``extra``."""
    if isinstance(value, str):
        raw = value if raw is None else raw
        try:
            value = json.loads(value or "{}")
        except (json.JSONDecodeError, RecursionError):
            value = None
    if isinstance(value, dict):
        return {"arguments": value}
    return {"arguments": {}, "extra": {"raw_arguments": raw}}


def _text_protocol_schemas(episode: Episode) -> dict[str, dict[str, Any]]:
    """The function schemas the text protocol's instructions list in the system prompt
    (one JSON object per line, see ``agent.tool_calls.text_protocol_prompt``)."""
    if episode.tool_mode != "text" or not episode.messages:
        return {}
    first = episode.messages[0]
    if first.get("role") != "system":
        return {}
    schemas = {}
    for line in _text(first.get("content")).splitlines():
        if not line.startswith("{"):
            continue
        try:
            schema = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(schema, dict) and isinstance(schema.get("name"), str):
            schemas[schema["name"]] = schema
    return schemas


def _tool_definitions(episode: Episode) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": schema}
        for schema in _text_protocol_schemas(episode).values()
    ]


def _sole_parameter(schema: dict[str, Any] | None) -> str | None:
    parameters = (schema or {}).get("parameters") or {}
    required = parameters.get("required") or []
    properties = list(parameters.get("properties") or {})
    if len(required) == 1:
        return str(required[0])
    return properties[0] if len(properties) == 1 else None


def _unique_call_ids(steps: list[dict[str, Any]]) -> None:
    seen: set[str] = set()
    for step in steps:
        renamed = {}
        for call in step.get("tool_calls", []):
            original = call["tool_call_id"]
            if original in seen:
                call["tool_call_id"] = f"{original}#{step['step_id']}"
                renamed[original] = call["tool_call_id"]
            seen.add(call["tool_call_id"])
        for result in (step.get("observation") or {}).get("results", []):
            if result.get("source_call_id") in renamed:
                result["source_call_id"] = renamed[result["source_call_id"]]


def _final_metrics(record: EpisodeRecord, episode: Episode | None, steps: int) -> dict[str, Any]:
    return {
        "total_prompt_tokens": record.input_tokens,
        "total_completion_tokens": record.output_tokens,
        "total_cached_tokens": episode.usage.cached_tokens if episode else None,
        "total_cost_usd": record.cost_usd,
        "total_steps": steps,
        "extra": {"latency_s": record.latency_s, "retries": record.retries},
    }


def _episode_facts(
    record: EpisodeRecord, episode: Episode | None, manifest: RunManifest | None
) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "run_id": record.run_id,
        "suite": manifest.suite if manifest else None,
        "key": record.key,
        "env_id": episode.env_id if episode else None,
        "task_id": record.task_id,
        "category": record.category,
        "sample": record.sample,
        "epoch": record.epoch,
        "seed": record.seed,
        "attempt": record.attempt,
        "outcome": record.outcome,
        "score": record.score,
        "success": record.success,
        "turns": record.turns,
        "started_at": _iso(record.started_at),
        "finished_at": _iso(record.finished_at),
    }
    if episode is not None:
        facts["truncated_by"] = episode.truncated_by
        facts["error"] = episode.error
    if record.attachments:
        facts["attachments"] = record.attachments
    return facts


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, tz=timezone.utc).isoformat()


def _text(content: Any) -> str:
    """A message's text (the text parts of a multimodal one)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)
