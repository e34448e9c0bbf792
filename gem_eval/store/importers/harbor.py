"""Harbor job directories: ``<job>/<trial>/result.json`` and the trial's ATIF trajectory.

Harbor (harbor-framework) writes one directory per job: ``config.json`` (the
``JobConfig``: ``job_name``, ``agents``, ``datasets`` ...), ``result.json`` (the job's
totals) and one directory per trial, named ``<task>__<id>``, holding

* ``result.json``, a ``TrialResult``: ``task_name``, ``trial_name``, ``source`` (the
  dataset), ``task_checksum``, ``config`` (the ``TrialConfig``: ``agent.model_name`` ...),
  ``agent_info`` (``name``, ``version``, ``model_info {name, provider}``),
  ``agent_result`` (``n_input_tokens`` including cached ones, ``n_cache_tokens``,
  ``n_output_tokens``, ``cost_usd``), ``verifier_result`` (``rewards``: name -> number),
  ``exception_info`` (``exception_type``, ``exception_message`` ...), ``started_at``,
  ``finished_at``;
* ``agent/trajectory.json``, the agent's run in ATIF (read with
  :mod:`gem_eval.export.atif_schema`).

A job is told from a trial by what its ``result.json`` holds (a ``JobResult`` has
``n_total_trials``, ``stats``, ``trial_results``; a ``TrialResult`` has ``task_name`` and
``trial_name``), not by its name: Harbor names jobs ``<date>__<time>`` by default. Jobs
are found at any depth under the folder imported.

Episodes: one per trial. The suite is the trials' dataset (``source``), else the job's
name; the task is ``task_name``; trials of one model and task are its epochs, in the order
they started. The score is ``rewards["reward"]`` (else the only reward). A trial with
rewards and no exception is scored, and so is one whose agent timed out (``truncated``);
a trial with any other exception (the environment, the agent's process, the verifier) is
an ``infra_error``, never a 0, even when the verifier gave a reward after it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from gem_eval.errors import UserError
from gem_eval.store.importers._common import (
    Episode,
    ImportedRun,
    as_dict,
    digest_files,
    read_json,
    text_of,
    timestamp,
    tool_call,
)

_TIMEOUTS = ("AgentTimeoutError", "AgentExecutionTimeoutError")
"""Exceptions after which the verifier grades what the agent left: the trial is scored."""


def is_job(path: Path) -> bool:
    """Whether ``path`` is a Harbor job directory: a trial directory is right under it."""
    return path.is_dir() and any(_is_trial(d) for d in path.iterdir())


def find_jobs(path: Path, _seen: set[Path] | None = None) -> list[Path]:
    """``path`` if it is a job, else the jobs anywhere under it (a ``jobs/`` folder, or a
    folder holding one). A job's own subdirectories and hidden folders are not searched;
    a folder reached twice through a symlink is searched once."""
    seen = set() if _seen is None else _seen
    if not path.is_dir() or path.resolve() in seen:
        return []
    seen.add(path.resolve())
    if is_job(path):
        return [path]
    jobs: list[Path] = []
    for sub in sorted(d for d in path.iterdir() if d.is_dir() and not d.name.startswith(".")):
        jobs += find_jobs(sub, seen)
    return jobs


def read(job: Path) -> ImportedRun:
    """The run of one Harbor job directory.

    Raises:
        UserError: A trial's ``result.json`` is not a readable ``TrialResult``.
    """
    trials = []
    for trial_dir in sorted(d for d in job.iterdir() if _is_trial(d)):
        where = trial_dir / "result.json"
        result = as_dict(read_json(where), str(where))
        if not isinstance(result.get("task_name"), str):
            raise UserError(f"{where}: not a Harbor trial result (no task_name)")
        trials.append((trial_dir, result))
    config_path = job / "config.json"
    config = read_json(config_path) if config_path.is_file() else {}
    agents = {_agent(r) for _, r in trials}
    several_agents = len(agents) > 1
    started = min((timestamp(r.get("started_at"), 0.0) for _, r in trials), default=0.0)
    episodes: list[Episode] = []
    epochs: dict[tuple[str, str], int] = defaultdict(int)
    order = sorted(trials, key=lambda t: (timestamp(t[1].get("started_at"), 0.0), t[0].name))
    for trial_dir, result in order:
        episode = _episode(trial_dir, result, several_agents, started)
        episode.epoch = epochs[(episode.model, episode.task_id)]
        epochs[(episode.model, episode.task_id)] += 1
        episodes.append(episode)
    sources = {r.get("source") for _, r in trials if r.get("source")}
    suite = str(sources.pop()) if len(sources) == 1 else str(config.get("job_name") or job.name)
    checksums = sorted({(r["task_name"], r.get("task_checksum") or "") for _, r in trials})
    files = [job / "config.json"] if config_path.is_file() else []
    for trial_dir, _ in trials:
        files.append(trial_dir / "result.json")
        trajectory = trial_dir / "agent" / "trajectory.json"
        if trajectory.is_file():
            files.append(trajectory)
    return ImportedRun(
        source="harbor",
        path=job,
        version=_version(trials),
        suite=suite,
        digest=digest_files(files, base=job),
        suite_key=[suite, checksums],
        started_at=started,
        finished_at=max((e.finished_at for e in episodes), default=started),
        episodes=episodes,
        details={
            "job_name": config.get("job_name") or job.name,
            "agents": sorted(f"{a}:{m}" for a, m in agents),
        },
    )


def _is_trial(path: Path) -> bool:
    """A trial directory: its ``result.json`` is a ``TrialResult`` (``task_name``,
    ``trial_name``), not a job's ``JobResult`` (``n_total_trials``, ``stats``,
    ``trial_results``).

    Told by the content, not the name: Harbor names trials ``<task>__<id>`` but its jobs
    ``<date>__<time>`` by default, so a folder of jobs looks like a job of trials by name.
    An unreadable ``result.json`` in a ``<task>__<id>`` directory counts as a trial, so
    that :func:`read` names the broken file instead of the job being skipped.
    """
    result = path / "result.json"
    if not (path.is_dir() and result.is_file()):
        return False
    try:
        doc = json.loads(result.read_bytes())
    except (OSError, ValueError):
        return "__" in path.name
    if not isinstance(doc, dict) or _JOB_KEYS & doc.keys():
        return False
    return bool(_TRIAL_KEYS & doc.keys())


_TRIAL_KEYS = {"task_name", "trial_name"}
_JOB_KEYS = {"n_total_trials", "stats", "trial_results"}


def _agent(result: dict[str, Any]) -> tuple[str, str]:
    """The agent's name and its model's (``provider/name`` as Harbor's config gives it)."""
    info = result.get("agent_info") or {}
    agent = str(info.get("name") or "agent")
    model = ((result.get("config") or {}).get("agent") or {}).get("model_name")
    if not model:
        model_info = info.get("model_info") or {}
        name, provider = model_info.get("name"), model_info.get("provider")
        model = f"{provider}/{name}" if provider and name else name
    return agent, str(model or agent)


def _episode(
    trial_dir: Path, result: dict[str, Any], several_agents: bool, default_time: float
) -> Episode:
    agent, model = _agent(result)
    started = timestamp(result.get("started_at"), default_time)
    finished = timestamp(result.get("finished_at"), started)
    usage = result.get("agent_result") or {}
    rewards = (result.get("verifier_result") or {}).get("rewards") or {}
    exception = result.get("exception_info") or {}
    score = _reward(rewards, trial_dir)
    failure = f"{exception.get('exception_type')}: {exception.get('exception_message')}"
    if score is not None and not exception:
        outcome, error = "completed", None
    elif score is not None and exception.get("exception_type") in _TIMEOUTS:
        outcome, error = "truncated", failure  # the agent ran out of time: graded as it stood
    else:
        # Any other exception (the agent's process, the environment, the verifier) is not
        # the model's doing: a reward the verifier gave after it is not counted as one.
        outcome = "infra_error"
        error = failure if exception else "the trial has no verifier reward"
        if exception and score is not None:
            error += f" (the verifier's reward {score:g} after it is not counted)"
        score = None
    messages = _messages(trial_dir / "agent" / "trajectory.json")
    return Episode(
        model=f"{agent}/{model}" if several_agents else model,
        task_id=str(result["task_name"]),
        sample=0,
        epoch=0,
        outcome=outcome,  # type: ignore[arg-type]
        score=score,
        error=error,
        started_at=started,
        finished_at=finished,
        input_tokens=int(usage.get("n_input_tokens") or 0),
        output_tokens=int(usage.get("n_output_tokens") or 0),
        cost_usd=usage.get("cost_usd"),
        latency_s=max(finished - started, 0.0),
        messages=messages,
        initial_observation=next((m["content"] for m in messages if m["role"] == "user"), ""),
    )


def _reward(rewards: dict[str, Any], trial_dir: Path) -> float | None:
    if not rewards:
        return None
    value = rewards.get("reward", next(iter(rewards.values())) if len(rewards) == 1 else None)
    if value is None:
        raise UserError(
            f"{trial_dir / 'result.json'}: several rewards and none named 'reward': "
            f"{', '.join(rewards)}"
        )
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UserError(f"{trial_dir / 'result.json'}: reward {value!r} is not a number")
    return float(value)


def _messages(path: Path) -> list[dict[str, Any]]:
    """An ATIF trajectory as OpenAI-style messages (none when the file is missing)."""
    from pydantic import ValidationError

    from gem_eval.export.atif_schema import Trajectory

    if not path.is_file():
        return []
    try:
        doc = Trajectory.model_validate(read_json(path))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise UserError(f"{path}: not an ATIF trajectory: {where}: {first['msg']}") from None
    messages: list[dict[str, Any]] = []
    for step in doc.steps:
        if step.source != "agent":
            messages.append({"role": step.source, "content": text_of(_dump(step.message))})
            continue
        message: dict[str, Any] = {"role": "assistant", "content": text_of(_dump(step.message))}
        if step.tool_calls:
            message["tool_calls"] = [
                tool_call(c.tool_call_id, c.function_name, c.arguments) for c in step.tool_calls
            ]
        if step.model_name:
            message["model"] = step.model_name
        messages.append(message)
        for obs in step.observation.results if step.observation else []:
            content = text_of(_dump(obs.content))
            if obs.source_call_id is not None:
                messages.append(
                    {"role": "tool", "tool_call_id": obs.source_call_id, "content": content}
                )
            else:  # the environment's answer to an action that is no tool call
                messages.append({"role": "user", "content": content})
    return messages


def _dump(content: Any) -> Any:
    if isinstance(content, list):
        return [part.model_dump() for part in content]
    return content


def _version(trials: list[tuple[Path, dict[str, Any]]]) -> str | None:
    for trial_dir, _ in trials:
        trajectory = trial_dir / "agent" / "trajectory.json"
        if trajectory.is_file():
            version = read_json(trajectory).get("schema_version")
            return str(version) if version else None
    return None
