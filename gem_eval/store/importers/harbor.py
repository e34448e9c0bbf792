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
* ``agent/trajectory.json``, the agent's run in ATIF v1.0 to v1.8 (read with
  :mod:`gem_eval.export.atif_schema`; Harbor 0.26 writes v1.8, Terminus-2 writes one and
  the oracle none).

The job's ``lock.json`` names the Harbor that ran it (``harbor.version``): the run's
``version``; the trajectories' ATIF versions are ``atif_versions``.

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

What cannot be read is left out, not the whole job: a trial whose ``result.json`` is
missing (it never finished), unreadable or no ``TrialResult``, or whose reward is no
number, is skipped; a trajectory that cannot be read leaves its episode (scored from
``result.json``) without a transcript. Each is one line of the run's ``skipped``. A job
none of whose trials can be read raises.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from gem_eval.errors import UserError
from gem_eval.store.importers._common import (
    Episode,
    ImportedRun,
    as_dict,
    digest_files,
    read_json,
    skip_line,
    text_of,
    timestamp,
    tool_call,
)

_TIMEOUTS = ("AgentTimeoutError", "AgentExecutionTimeoutError")
"""Exceptions after which the verifier grades what the agent left: the trial is scored."""


def is_job(path: Path) -> bool:
    """Whether ``path`` is a Harbor job directory: a trial directory is right under it, or
    its own ``result.json`` or ``config.json`` is a job's (a job none of whose trials can
    be read is still found, and named)."""
    if not path.is_dir():
        return False
    return _is_job_file(path) or any(_is_trial(d) for d in path.iterdir())


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
    """The run of one Harbor job directory, without the trials that cannot be read (named
    in the run's ``skipped``).

    Raises:
        UserError: The job's ``config.json`` cannot be read, or none of its trials.
    """
    config_path = job / "config.json"
    config = as_dict(read_json(config_path), str(config_path)) if config_path.is_file() else {}
    trials: list[_Trial] = []
    skipped: list[str] = []
    for trial_dir in sorted(d for d in job.iterdir() if _is_trial_dir(d)):
        try:
            trials.append(_Trial.read(trial_dir))
        except UserError as exc:
            skipped.append(skip_line(trial_dir, exc, "skipped trial"))
    if not trials:
        why = f" ({skipped[0].removeprefix('skipped trial ')})" if skipped else ""
        raise UserError(f"{job}: no trial could be read{why}")
    planned = len(trials) + len(skipped)  # the trials left out were meant to play too
    agents = {_agent(t.result) for t in trials}
    several_agents = len(agents) > 1
    started = min((timestamp(t.result.get("started_at"), 0.0) for t in trials), default=0.0)
    episodes: list[Episode] = []
    epochs: dict[tuple[str, str], int] = defaultdict(int)
    order = sorted(trials, key=lambda t: (timestamp(t.result.get("started_at"), 0.0), t.path.name))
    for trial in order:
        episode = _episode(trial, several_agents, started)
        episode.epoch = epochs[(episode.model, episode.task_id)]
        epochs[(episode.model, episode.task_id)] += 1
        episodes.append(episode)
        skipped += trial.skipped
    sources = {t.result.get("source") for t in trials if t.result.get("source")}
    suite = str(sources.pop()) if len(sources) == 1 else str(config.get("job_name") or job.name)
    checksums = sorted(
        {(t.result["task_name"], t.result.get("task_checksum") or "") for t in trials}
    )
    files = [config_path] if config_path.is_file() else []
    for trial in trials:
        files.append(trial.path / "result.json")
        if trial.trajectory.is_file():
            files.append(trial.trajectory)
    atif_versions = sorted({t.atif_version for t in trials if t.atif_version})
    return ImportedRun(
        source="harbor",
        path=job,
        version=_harbor_version(job),
        suite=suite,
        digest=digest_files(files, base=job),
        suite_key=[suite, checksums],
        started_at=started,
        finished_at=max((e.finished_at for e in episodes), default=started),
        episodes=episodes,
        planned=planned,
        skipped=skipped,
        details={
            "job_name": config.get("job_name") or job.name,
            "agents": sorted(f"{a}:{m}" for a, m in agents),
            **({"atif_versions": atif_versions} if atif_versions else {}),
        },
    )


@dataclass
class _Trial:
    """One trial directory as read: its ``TrialResult``, its transcript as messages (none
    when it has no readable trajectory) and what could not be read."""

    path: Path
    result: dict[str, Any]
    score: float | None
    messages: list[dict[str, Any]]
    atif_version: str | None
    skipped: list[str]

    @property
    def trajectory(self) -> Path:
        return self.path / "agent" / "trajectory.json"

    @classmethod
    def read(cls, path: Path) -> _Trial:
        """The trial in ``path``; a trajectory that cannot be read is noted in ``skipped``.

        Raises:
            UserError: ``result.json`` is missing, unreadable, no ``TrialResult``, or its
                reward is no number.
        """
        where = path / "result.json"
        if not where.is_file():
            raise UserError(f"{where}: missing (the trial did not finish)")
        result = as_dict(read_json(where), str(where))
        if not isinstance(result.get("task_name"), str):
            raise UserError(f"{where}: not a Harbor trial result (no task_name)")
        verifier = result.get("verifier_result")
        rewards = (verifier.get("rewards") if isinstance(verifier, dict) else None) or {}
        if not isinstance(rewards, dict):
            raise UserError(f"{where}: verifier_result.rewards is not an object")
        trial = cls(path, result, _reward(rewards, path), [], None, [])
        if trial.trajectory.is_file():
            try:
                trial.messages, trial.atif_version = _messages(trial.trajectory)
            except UserError as exc:
                trial.skipped.append(f"transcript not imported: {exc}")
        return trial


def _is_trial(path: Path) -> bool:
    """A trial directory: its ``result.json`` is a ``TrialResult`` (``task_name``,
    ``trial_name``), not a job's ``JobResult`` (``n_total_trials``, ``stats``,
    ``trial_results``).

    Told by the content, not the name: Harbor names trials ``<task>__<id>`` but its jobs
    ``<date>__<time>`` by default, so a folder of jobs looks like a job of trials by name.
    """
    doc = _json_object(path / "result.json")
    return doc is not None and not _JOB_KEYS & doc.keys() and bool(_TRIAL_KEYS & doc.keys())


_TRIAL_KEYS = {"task_name", "trial_name"}
_JOB_KEYS = {"n_total_trials", "stats", "trial_results"}


def _is_trial_dir(path: Path) -> bool:
    """A trial of a job (``path`` is in one): a trial directory, or a ``<task>__<id>`` one
    whose ``result.json`` is missing (the trial never finished) or unreadable, so that
    :func:`read` names it instead of passing it over."""
    if _is_trial(path):
        return True
    return path.is_dir() and "__" in path.name and not _is_job_file(path)


def _is_job_file(path: Path) -> bool:
    """Whether ``path/result.json`` is a ``JobResult`` or ``path/config.json`` a
    ``JobConfig`` (``job_name`` and ``n_attempts``; a trial's config has ``trial_name``)."""
    result = _json_object(path / "result.json")
    if result is not None and "n_total_trials" in result:
        return True
    config = _json_object(path / "config.json") or {}
    return {"job_name", "n_attempts"} <= config.keys() and "trial_name" not in config


def _json_object(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``; None when it is missing, unreadable or no object."""
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _harbor_version(job: Path) -> str | None:
    """The Harbor that ran the job (``lock.json``: ``harbor.version``), when it says."""
    lock = _json_object(job / "lock.json") or {}
    harbor = lock.get("harbor")
    version = harbor.get("version") if isinstance(harbor, dict) else None
    return str(version) if version else None


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


def _episode(trial: _Trial, several_agents: bool, default_time: float) -> Episode:
    result, score, messages = trial.result, trial.score, trial.messages
    agent, model = _agent(result)
    started = timestamp(result.get("started_at"), default_time)
    finished = timestamp(result.get("finished_at"), started)
    usage = result.get("agent_result") or {}
    exception = result.get("exception_info") or {}
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


def _messages(path: Path) -> tuple[list[dict[str, Any]], str]:
    """An ATIF trajectory as OpenAI-style messages, and its ATIF version.

    Raises:
        UserError: The file is no ATIF document of a version gem-eval knows.
    """
    from pydantic import ValidationError

    from gem_eval.export.atif_schema import AtifVersion, Trajectory

    data = read_json(path)
    version = data.get("schema_version") if isinstance(data, dict) else None
    if isinstance(version, str) and version not in get_args(AtifVersion):
        newest = get_args(AtifVersion)[-1]
        raise UserError(
            f"{path}: ATIF version {version!r} is unknown (gem-eval reads up to {newest})"
        )
    try:
        doc = Trajectory.model_validate(data)
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
    return messages, doc.schema_version


def _dump(content: Any) -> Any:
    if isinstance(content, list):
        return [part.model_dump() for part in content]
    return content
