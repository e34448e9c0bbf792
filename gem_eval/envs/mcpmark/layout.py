"""``McpTask``: an MCPMark task directory, in any of MCPMark's published layouts.

Where a task sits (both published trees; ``<level>`` is MCPMark's task suite, e.g.
``standard`` or ``easy``, and becomes a tag)::

    <root>/<service>/<category>/<task>/              MCPMark up to v1.2, gem-eval's own
    <root>/<service>/<level>/<category>/<task>/      MCPMark since its easy tasks (2025-11)

A task directory holds::

    description.md      the task, as the agent reads it
    verify.py           checks the final state; exit code 0 = solved (run in the sandbox,
                        from a copy of the task directory: it may read files beside it)
    meta.json           optional: task_id, category_id, difficulty, tags ...
    solution.sh|.py     gem-eval addition: the reference solution (``--model oracle``);
                        MCPMark's published tasks have none
    initial_state/      optional: this task's own starting state

The starting state is found as :mod:`gem_eval.envs.mcpmark.state` says (gem-eval's
``initial_state/``, MCPMark's ``test_environments/<category>/`` and
``postgres_state/<category>.backup``). ``verify.py`` and the solution read where the
state is from the environment, as in MCPMark: ``FILESYSTEM_TEST_DIR``; ``POSTGRES_HOST``,
``POSTGRES_PORT``, ``POSTGRES_USERNAME``, ``POSTGRES_PASSWORD``, ``POSTGRES_DATABASE``,
``DATABASE_URL``.

Services: ``filesystem`` and ``postgres`` run here. MCPMark's others need accounts or
sites outside this machine (:data:`UNSUPPORTED`): one such task on its own is refused in
one line; a directory of tasks leaves them out (:func:`scan` lists them).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gem_eval.envs.mcpmark.state import (
    POSTGRES_STATE,
    STATE_DIR,
    TEST_ENVIRONMENTS,
    StartState,
    find_state,
)
from gem_eval.errors import TaskFormatError, UserError

SERVICES = ("filesystem", "postgres")
UNSUPPORTED = {
    "github": "a GitHub account and token",
    "notion": "a Notion workspace and API key",
    "playwright": "a browser on the open web",
    "playwright_webarena": "WebArena's web sites running as services",
    "supabase": "a Supabase project",
    "insforge": "an InsForge backend",
}
"""MCPMark's services that gem-eval cannot run here, with what each needs."""
DEFAULT_LEVEL = "standard"
# Never task trees: starting states, caches, and what MCPMark writes beside its tasks.
_NOT_TASKS = {STATE_DIR, TEST_ENVIRONMENTS, POSTGRES_STATE, "node_modules", "__pycache__"}


class UnsupportedServiceError(TaskFormatError):
    """A task of a service that needs an outside account or site (:data:`UNSUPPORTED`)."""


@dataclass
class McpTask:
    """One task directory, read.

    Attributes:
        name: ``<category>/<task>`` (MCPMark's task id form).
        service: ``filesystem`` or ``postgres``.
        category: The category directory's name.
        path: The task directory.
        description: The task text.
        verify: ``verify.py``.
        state: The starting state.
        level: MCPMark's task suite (``standard``, ``easy``), when the tree has one.
        solution: The reference solution, if any.
        meta: ``meta.json``'s content.
        difficulty, tags: From ``meta.json``.
    """

    name: str
    service: str
    category: str
    path: Path
    description: str
    verify: Path
    state: StartState
    level: str | None = None
    solution: Path | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    difficulty: str | None = None
    tags: list[str] = field(default_factory=list)

    @property
    def display_name(self) -> str:
        """``<service>/<category>/<task>``, with the level after the service unless it is
        the default one (the same task name appears in ``standard`` and ``easy``)."""
        level = f"{self.level}/" if self.level not in (None, DEFAULT_LEVEL) else ""
        return f"{self.service}/{level}{self.name}"


@dataclass
class Scan:
    """The task directories under a root.

    Attributes:
        tasks: Those of services that run here, sorted.
        unsupported: Those of other services, by service.
    """

    tasks: list[Path]
    unsupported: dict[str, list[Path]]

    def skipped(self) -> str | None:
        """One line naming the tasks left out, or ``None``."""
        if not self.unsupported:
            return None
        parts = [
            f"{service} ({len(dirs)}: needs {UNSUPPORTED[service]})"
            for service, dirs in sorted(self.unsupported.items())
        ]
        count = sum(len(dirs) for dirs in self.unsupported.values())
        return f"left out {count} MCP task(s) of services that do not run here: {'; '.join(parts)}"


def is_task_dir(path: Path) -> bool:
    """Whether ``path`` holds an MCP task (``description.md`` and ``verify.py``)."""
    return (path / "description.md").is_file() and (path / "verify.py").is_file()


def scan(root: Path) -> Scan:
    """The task directories under ``root`` (``root`` itself when it is one).

    Starting states (``initial_state/``, ``test_environments/``, ``postgres_state/``) and
    hidden directories are not searched.

    Raises:
        UserError: ``root`` is not a directory, or holds no task.
    """
    if not root.is_dir():
        raise UserError(f"{root}: no such directory of MCP tasks")
    found = [root] if is_task_dir(root) else []
    if not found:
        for current, dirs, _ in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in _NOT_TASKS and not d.startswith("."))
            if is_task_dir(Path(current)) and Path(current) != root:
                found.append(Path(current))
                dirs[:] = []  # a task's own files are not tasks
    if not found:
        raise UserError(f"{root}: no task directories (description.md + verify.py) under it")
    out = Scan([], {})
    for path in sorted(found):
        service = _place(path.resolve())[0]
        if service in UNSUPPORTED:
            out.unsupported.setdefault(service, []).append(path)
        else:
            out.tasks.append(path)
    return out


def find_tasks(root: Path, found: Scan | None = None) -> list[Path]:
    """The task directories under ``root`` that run here, sorted (from ``found``, its
    :func:`scan`, when given).

    Raises:
        UserError: ``root`` holds no task that runs here (the message says which it has).
    """
    found = found or scan(root)
    if not found.tasks:
        raise UserError(f"{root}: no MCP task that runs here; {found.skipped()}")
    return found.tasks


def load_task(path: Path) -> McpTask:
    """Read the task in ``path``.

    Raises:
        UnsupportedServiceError: A task of a service in :data:`UNSUPPORTED`.
        TaskFormatError: Not a task, an unknown service, a bad ``meta.json``, or no
            starting state.
    """
    path = path.resolve()
    if not is_task_dir(path):
        raise TaskFormatError(path, "not an MCP task directory: needs description.md and verify.py")
    service, level, service_dir = _place(path)
    if service in UNSUPPORTED:
        raise UnsupportedServiceError(
            path,
            f"MCPMark's {service} tasks need {UNSUPPORTED[service]}: "
            f"gem-eval runs {' and '.join(SERVICES)} tasks",
        )
    meta = _meta(path / "meta.json")
    category_dir = path.parent
    category = str(meta.get("category_id") or category_dir.name)
    solution = next(
        (path / n for n in ("solution.sh", "solution.py") if (path / n).is_file()), None
    )
    tags = meta.get("tags") or []
    return McpTask(
        name=f"{category_dir.name}/{path.name}",
        service=service,
        category=category_dir.name,
        path=path,
        description=(path / "description.md").read_text().strip(),
        verify=path / "verify.py",
        state=find_state(service, path, category, service_dir),
        level=level,
        solution=solution,
        meta=meta,
        difficulty=None if meta.get("difficulty") is None else str(meta["difficulty"]),
        tags=[str(t) for t in tags] if isinstance(tags, list) else [],
    )


def _place(path: Path) -> tuple[str, str | None, Path]:
    """The service, level and service directory of the task in ``path``: the service is
    the directory two levels up, or three when a level sits between it and the category."""
    above = path.parent.parent
    known = (*SERVICES, *UNSUPPORTED)
    if above.name in known:
        return above.name, None, above
    if above.parent.name in known:
        return above.parent.name, above.name, above.parent
    raise TaskFormatError(
        path,
        f"unknown MCP service {above.name!r} (the directory two levels up, or three "
        f"with a level such as {DEFAULT_LEVEL}/ between): choose {' or '.join(SERVICES)}",
    )


def _meta(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        meta = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise TaskFormatError(path, exc.msg, exc.lineno) from None
    if not isinstance(meta, dict):
        raise TaskFormatError(path, "must be a JSON object", 1)
    return meta
