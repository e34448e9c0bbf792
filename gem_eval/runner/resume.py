"""What ``--resume`` may change about a run, and what it may not.

A resumed run plays the episodes still missing, as the run was planned. Two kinds of
settings come with the command line:

* how to reach the models and pace the run (``--model-base-url``, ``--model-backend``,
  ``--api-key-env``, ``--timeout``, ``--max-retries``, ``--max-connections``,
  ``--concurrency``, ``--max-cost``, ``--cache``): a server restarted on another port must be
  resumable. These may change, for every model or (given after a ``--model``) for one;
  each session's changes are kept in the manifest.
* what is measured (the suite and its file, the models, ``--seed``, ``-M`` generation
  settings, ``--max-turns``, ``--limit``, ``--epochs``, ``--sandbox``, ``--image-map``,
  ``--no-network``, the selection ``--task``/``--sample``/``--category``):
  changing them would mix episodes played under different settings in one score, so
  they are refused with one line unless ``--force`` (then recorded as forced).

A forced change of a task (``--agent``, ``--max-turns``) plays the episodes left with the
task as it is now: the manifest's task becomes that (:func:`replayed_tasks`), and each
record keeps who played it, so a run resumed with ``--agent X --force`` shows a row per
agent (see :func:`gem_eval.store.scorers.episode_agent`).


An episode cut mid-way (a spent ``--max-cost``, a failure) goes on from the calls it paid
for: its earlier records' replies are replayed while it asks what it asked then, and only
the calls after them reach the model (:func:`with_paid_replies`; see
:mod:`gem_eval.models.paid_replies`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from gem_eval.errors import UserError
from gem_eval.models.paid_replies import PaidReplies
from gem_eval.records import EpisodeSpec, ModelSpec, TaskSpec

if TYPE_CHECKING:
    from gem_eval.store import RunDir

CONNECTION_FLAGS = {
    "base_url": "--model-base-url",
    "backend": "--model-backend",
    "api_key_env": "--api-key-env",
    "timeout_s": "--timeout",
    "max_retries": "--max-retries",
    "max_connections": "--max-connections",
    "price": "--price",
}
"""ModelSpec fields a resume may change, and their flags (a new price counts the calls
still to come; those recorded keep what they were charged)."""

CONTROL_FLAGS = {
    "concurrency": "--concurrency",
    "max_cost_usd": "--max-cost",
    "max_attempts": "--max-attempts",
    "cache": "--cache",
}
"""RunOptions fields a resume may change."""

MEASURED_FLAGS = {
    "limit": "--limit",
    "epochs": "--epochs",
    "seed": "--seed",
    "overrides": "--max-turns or --agent",
    "sandbox": "--sandbox",
    "image_map": "--image-map",
    "no_network": "--no-network",
    "tasks": "--task",
    "samples": "--sample",
    "categories": "--category",
}
"""RunOptions fields a resume changes only with ``--force``."""

_OVERRIDE_FLAGS = {"limits": "--max-turns", "agent": "--agent"}
"""The flags behind the keys of ``overrides``."""


@dataclass
class ResumeRequest:
    """The settings given with ``--resume``: only those the user set (``None``: keep).

    Attributes:
        connection: ModelSpec fields of :data:`CONNECTION_FLAGS`, for every model.
        per_model: ModelSpec fields of :data:`CONNECTION_FLAGS` for one model each (by
            name), over ``connection``; ``args``: its own ``-M`` (measured).
        options: RunOptions fields (:data:`CONTROL_FLAGS` and :data:`MEASURED_FLAGS`).
        model_args: ``-M`` generation settings (measured).
        suite: ``--suite`` (measured; must name the run's suite).
        models: ``--model`` (each must be one of the run's; settings after it are its own).
        extra: A command's settings kept in ``manifest.extra`` (``rollout``: gamma,
            estimator), by key (measured: what the command writes depends on them).
        force: Accept changes to what is measured.
    """

    connection: dict[str, Any] = field(default_factory=dict)
    per_model: dict[str, dict[str, Any]] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    model_args: dict[str, Any] | None = None
    suite: str | None = None
    models: list[str] | None = None
    extra: dict[str, dict[str, Any]] = field(default_factory=dict)
    force: bool = False


def apply(
    request: ResumeRequest,
    models: list[ModelSpec],
    options: dict[str, Any],
    suite_changed: bool,
    extra: dict[str, Any] | None = None,
) -> tuple[list[ModelSpec], dict[str, Any], dict[str, Any]]:
    """The models and options the resumed session plays with, and the manifest entry
    that records the session (its time, what changed, what was forced).

    ``extra`` is the manifest's ``extra``: each key of ``request.extra`` is compared with
    the stored one (a setting given now that differs is measured); the caller stores the
    merged values.

    Raises:
        UserError: A measured setting changed without ``--force`` (one line naming the
            flags), or ``--suite`` / ``--model`` name something the run did not play.
    """
    changed: dict[str, Any] = {}
    forced: dict[str, Any] = {}
    played = [m.name for m in models]
    for name in [*(request.models or []), *request.per_model]:
        if name not in played:
            raise UserError(
                f"--resume plays the run's models ({', '.join(played)}): {name!r} is not one "
                "of them; start a new run for another model"
            )
    if suite_changed:
        forced["--suite"] = "the suite file changed since the run started"
    for key, value in request.options.items():
        if key == "overrides" and value is not None:  # --max-turns, --agent: key by key
            value = {**(options.get(key) or {}), **value}
        if value is None or options.get(key) == value:
            continue
        flag = CONTROL_FLAGS.get(key) or MEASURED_FLAGS[key]
        if key == "overrides":
            before = options.get(key) or {}
            flag = ", ".join(
                _OVERRIDE_FLAGS.get(k, f"--{k}") for k in value if before.get(k) != value[k]
            )
        (changed if key in CONTROL_FLAGS else forced)[flag] = value
        options = {**options, key: value}
    if request.model_args is not None and any(m.args != request.model_args for m in models):
        forced["-M"] = request.model_args
        models = [m.model_copy(update={"args": request.model_args}) for m in models]
    for section, given in request.extra.items():
        stored = (extra or {}).get(section) or {}
        for key, value in given.items():
            if value is not None and key in stored and stored[key] != value:
                forced[f"--{key.replace('_', '-')}"] = value
    updated = []
    for model in models:
        settings = {**request.connection, **request.per_model.get(model.name, {})}
        own_args = settings.pop("args", None)
        if own_args is not None:
            args = {**(request.model_args or model.args), **own_args}
            if args != model.args:
                forced[f"-M ({model.name})"] = own_args
                model = model.model_copy(update={"args": args})
        update = {k: v for k, v in settings.items() if v is not None and getattr(model, k) != v}
        for key, value in update.items():
            own = key in request.per_model.get(model.name, {})
            shown = value.model_dump() if isinstance(value, BaseModel) else value
            changed[f"{CONNECTION_FLAGS[key]} ({model.name})" if own else CONNECTION_FLAGS[key]] = (
                shown
            )
        updated.append(model.model_copy(update=update) if update else model)
    if forced and not request.force:
        flags = ", ".join(forced)
        raise UserError(
            f"--resume keeps what the run measures; {flags} would change it "
            "(add --force to change it anyway, or start a new run)"
        )
    session = {"started_at": time.time(), "changed": changed, "forced": forced}
    return updated, options, session


def replayed_tasks(tasks: list[TaskSpec], playing: list[TaskSpec]) -> list[TaskSpec]:
    """The run's tasks once a resumed session has played ``playing``: each task played
    now as it is now (another agent with ``--agent X --force``), the others as they
    were; a task new to the run (a forced selection) is added."""
    now = {task.id: task for task in playing}
    kept = [now.pop(task.id, task) for task in tasks]
    return [*kept, *now.values()]


def with_paid_replies(
    todo: list[EpisodeSpec], run_dir: RunDir, sessions: list[dict[str, Any]]
) -> list[EpisodeSpec]:
    """``todo``, each episode with the calls its earlier attempts made (its
    ``paid_replies``): replayed, not paid for again. Not those recorded before a forced
    session changed what is measured: they answered other settings."""
    wanted = {spec.key for spec in todo}
    forced = [s.get("started_at", float("inf")) for s in sessions if s.get("forced")]
    since = max(forced, default=float("-inf"))
    paid: dict[str, PaidReplies] = {}
    for record in run_dir.records() if wanted else ():
        if record.key not in wanted or record.trajectory is None or record.started_at < since:
            continue
        replies = PaidReplies.of(record.trajectory)
        if replies is not None:
            paid.setdefault(record.key, PaidReplies()).add(replies)
    return [
        spec.model_copy(update={"paid_replies": paid[spec.key]}) if spec.key in paid else spec
        for spec in todo
    ]
