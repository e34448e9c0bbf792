"""Where an MCP task's starting state comes from, in gem-eval's layout and in MCPMark's.

Looked for in this order (the first found wins):

1. ``<task>/initial_state/``, then ``<category>/initial_state/`` (gem-eval's layout):
   for ``filesystem`` a directory tree, for ``postgres`` a directory holding ``init.sql``.
2. MCPMark's checkout, next to its ``tasks/`` directory (the directory above the service's,
   and the one above that):

   * ``filesystem``: ``test_environments/<category>/``, the tree MCPMark copies for each
     task (``FILESYSTEM_TEST_ROOT``'s default; MCPMark downloads it there on first use).
   * ``postgres``: ``postgres_state/<category>.backup``, the ``pg_dump -Fc`` archive from
     which MCPMark restores a database named after the category and clones it per task
     (read with PostgreSQL 15's ``pg_restore``, which reads archive formats up to 1.14:
     a newer archive is a load error saying how to convert it), or a plain-SQL
     ``postgres_state/<category>.sql`` (that conversion; used first when both exist).
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
_DUMPS: tuple[tuple[str, StateKind], ...] = ((".sql", "sql_dump"), (".backup", "pg_dump"))
ARCHIVE_MAGIC = b"PGDMP"
ARCHIVE_FORMAT_MAX = (1, 14)
"""The newest ``pg_dump -Fc`` archive format the service's pg_restore (PostgreSQL 15)
reads (PostgreSQL 16 writes 1.15, 17 writes 1.16)."""


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
                    if kind == "pg_dump":
                        _check_archive(dump)
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


def _check_archive(path: Path) -> None:
    """Refuse, at load time, an archive the service's ``pg_restore`` cannot read."""
    with path.open("rb") as f:
        head = f.read(len(ARCHIVE_MAGIC) + 2)
    if not head.startswith(ARCHIVE_MAGIC) or len(head) < len(ARCHIVE_MAGIC) + 2:
        raise TaskFormatError(path, "not a pg_dump custom-format archive (pg_dump -Fc)")
    version = (head[len(ARCHIVE_MAGIC)], head[len(ARCHIVE_MAGIC) + 1])
    if version > ARCHIVE_FORMAT_MAX:
        sql = path.with_suffix(".sql")
        raise TaskFormatError(
            path,
            f"a pg_dump archive of format {version[0]}.{version[1]}, newer than PostgreSQL "
            f"15's pg_restore reads ({ARCHIVE_FORMAT_MAX[0]}.{ARCHIVE_FORMAT_MAX[1]}): "
            "convert it with a pg_restore as new as the archive, `pg_restore --no-owner "
            f"--no-privileges -f {sql} {path}`; gem-eval then loads {sql.name}",
        )
