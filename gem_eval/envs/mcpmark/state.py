"""Where an MCP task's starting state comes from, in gem-eval's layout and in MCPMark's.

Looked for in this order (the first found wins):

1. ``<task>/initial_state/``, then ``<category>/initial_state/`` (gem-eval's layout):
   for ``filesystem`` a directory tree, for ``postgres`` a directory holding ``init.sql``.
2. MCPMark's checkout, next to its ``tasks/`` directory (the directory above the service's,
   and the one above that):

   * ``filesystem``: ``test_environments/<category>/``, the tree MCPMark copies for each
     task (``FILESYSTEM_TEST_ROOT``'s default; MCPMark downloads it there on first use).
   * ``postgres``: ``postgres_state/<category>.backup`` (a ``pg_dump -Fc`` archive, read
     with ``pg_restore``) or ``postgres_state/<category>.sql`` (plain SQL): MCPMark
     restores a database named after the category from that file and clones it per task.
     Categories without one (MCPMark's ``security``, ``vectors``) start from an empty
     database that the task's ``prepare_environment.py`` fills.

``<category>`` is ``meta.json``'s ``category_id`` when it has one, else the directory's
name, as in MCPMark. A task with none of these cannot start: loading it is one error
naming every place looked at.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from gem_eval.errors import TaskFormatError

STATE_DIR = "initial_state"
TEST_ENVIRONMENTS = "test_environments"
POSTGRES_STATE = "postgres_state"
PREPARE_SCRIPT = "prepare_environment.py"

StateKind = Literal["tree", "init_sql", "pg_dump", "sql_dump", "prepare"]
_DUMPS: tuple[tuple[str, StateKind], ...] = ((".backup", "pg_dump"), (".sql", "sql_dump"))


@dataclass(frozen=True)
class StartState:
    """An episode's starting state.

    Attributes:
        kind: ``tree`` (a directory copied to the data directory), ``init_sql`` (a
            directory whose ``init.sql`` is loaded), ``pg_dump`` (a ``pg_dump -Fc``
            archive), ``sql_dump`` (a plain SQL file) or ``prepare`` (MCPMark's
            ``prepare_environment.py``, run against an empty database).
        path: The directory, archive, SQL file or script.
    """

    kind: StateKind
    path: Path


def find_state(service: str, task_dir: Path, category: str, service_dir: Path) -> StartState:
    """The starting state of the task in ``task_dir`` (see the module docstring).

    Args:
        service: ``filesystem`` or ``postgres``.
        task_dir: The task directory (resolved).
        category: The category id (``meta.json``'s ``category_id``, else the directory's).
        service_dir: The service's directory (``.../tasks/<service>``).

    Raises:
        TaskFormatError: No starting state anywhere, or a postgres ``initial_state/``
            without ``init.sql``.
    """
    looked: list[Path] = []
    for base in (task_dir, task_dir.parent):
        state = base / STATE_DIR
        looked.append(state)
        if state.is_dir():
            if service == "postgres":
                if not (state / "init.sql").is_file():
                    raise TaskFormatError(state, "a postgres initial_state needs init.sql")
                return StartState("init_sql", state)
            return StartState("tree", state)
    roots = [service_dir.parent, service_dir.parent.parent]
    if service == "filesystem":
        for root in roots:
            tree = root / TEST_ENVIRONMENTS / category
            looked.append(tree)
            if tree.is_dir():
                return StartState("tree", tree)
    else:
        for root in roots:
            for suffix, kind in _DUMPS:
                dump = root / POSTGRES_STATE / f"{category}{suffix}"
                looked.append(dump)
                if dump.is_file():
                    return StartState(kind, dump)
        script = task_dir / PREPARE_SCRIPT
        looked.append(script)
        if script.is_file():
            return StartState("prepare", script)
    raise TaskFormatError(
        task_dir,
        f"no starting state for {service} category {category!r}: looked for "
        + ", ".join(str(p) for p in dict.fromkeys(looked)),
    )
