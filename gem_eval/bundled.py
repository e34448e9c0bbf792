"""Where the bundled suites and tasks live: ``bundled_root() / "suites"`` and ``/ "tasks"``.

The top-level ``suites/`` and ``tasks/`` of the checkout are the source. A built wheel
carries a copy of both inside the package, at ``gem_eval/_bundled/`` (the wheel target's
``force-include`` in ``pyproject.toml``), so an installed gem-eval finds them without a
checkout. A checkout, or an editable install of one, reads the top-level directories
directly, so an edit to a task needs no rebuild.

Relative paths in suites and task files (``tasks/qa/questions.jsonl``,
``../tasks/terminal``) resolve against the file naming them, then this root, so they
mean the same in both layouts: ``suites/`` and ``tasks/`` are siblings in each.
"""

from __future__ import annotations

import functools
from pathlib import Path, PurePath

_PACKAGE = Path(__file__).resolve().parent


@functools.cache
def bundled_root() -> Path:
    """The directory holding the bundled ``suites/`` and ``tasks/``.

    Returns:
        ``gem_eval/_bundled`` in an installed wheel; otherwise the checkout's top level
        (the directory holding ``gem_eval/``), whether or not it has them.
    """
    installed = _PACKAGE / "_bundled"
    if (installed / "suites").is_dir():
        return installed
    return _PACKAGE.parent


def in_bytecode_cache(relative: PurePath) -> bool:
    """Whether ``relative`` (a path inside a task directory) lies in a ``__pycache__``.

    pip compiles every ``.py`` file of a wheel it installs, the bundled tasks' graders,
    solutions and starting states among them; such caches are never task content, so
    whatever copies a task directory into a sandbox leaves them out.
    """
    return "__pycache__" in relative.parts
