"""Harbor's venv: a Python >= 3.12 venv with ``harbor`` pinned, made once in the cache.

Harbor needs Python 3.12 and gem-eval runs on 3.10+, so Harbor's agent classes run in a
helper process (:mod:`gem_eval.agents.harbor.host`) under a venv of their own:
``$GEM_EVAL_CACHE/agents/harbor-<version>`` (see :mod:`gem_eval.cache`), made on first use
with ``python -m venv`` and ``pip install harbor==<version>`` (about a minute and a half),
built beside its place, checked, then renamed in (a venv's ``bin/python`` works from
wherever the directory lies; its console scripts, which gem-eval does not use, would not).

The interpreter: ``$GEM_EVAL_HARBOR_PYTHON`` when set, else the first Python >= 3.12 among
``python3.12``, ``python3.13`` and ``python3`` on ``PATH`` and pyenv's versions.
``$GEM_EVAL_HARBOR_VENV`` names a venv that already holds the pinned Harbor, used as it is
(nothing is built).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from gem_eval.agents.catalog import HARBOR_VERSION
from gem_eval.cache import CacheEntry, CacheError, cache_dir
from gem_eval.errors import UserError

PYTHON_VAR = "GEM_EVAL_HARBOR_PYTHON"
"""A Python >= 3.12 interpreter to make Harbor's venv with."""
VENV_VAR = "GEM_EVAL_HARBOR_VENV"
"""A venv that already holds ``harbor==HARBOR_VERSION`` (nothing is built)."""
MIN_PYTHON = (3, 12)
PIP_TIMEOUT_S = 1800.0

log = logging.getLogger("gem_eval.agents")


class HarborUnavailable(UserError):
    """Harbor's venv cannot be had here: no Python >= 3.12, or its install failed."""


def venv_python(venv: Path) -> Path:
    """The venv's interpreter."""
    return venv / "bin" / "python"


def harbor_venv() -> tuple[Path, float | None]:
    """Harbor's venv, made on first use; and the seconds its build took (``None``: it
    was there).

    Raises:
        HarborUnavailable: No Python >= 3.12 is found, or ``pip install`` failed (one
            line: what is missing, and how to point gem-eval at an interpreter).
    """
    given = os.environ.get(VENV_VAR)
    if given:
        venv = Path(given).expanduser()
        if not _holds_harbor(venv):
            raise HarborUnavailable(
                f"{VENV_VAR}={given} is not a venv with harbor=={HARBOR_VERSION} installed"
            )
        return venv, None
    entry = CacheEntry(cache_dir("agents") / f"harbor-{HARBOR_VERSION}", check=_holds_harbor)
    if entry.ready():
        return entry.path, None
    python = find_python()
    log.warning("installing harbor==%s into %s (once, about 1.5 min)", HARBOR_VERSION, entry.path)
    began = time.monotonic()
    try:
        built = entry.ensure(lambda path: _build(python, path))
    except CacheError as exc:
        raise HarborUnavailable(f"Harbor's venv is incomplete after its install: {exc}") from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise HarborUnavailable(f"could not make Harbor's venv with {python}: {exc}") from None
    return entry.path, (time.monotonic() - began) if built else None


def find_python() -> Path:
    """A Python >= 3.12 on this machine (see the module docstring).

    Raises:
        HarborUnavailable: None is found (or ``$GEM_EVAL_HARBOR_PYTHON`` is not one).
    """
    given = os.environ.get(PYTHON_VAR)
    if given:
        path = Path(given).expanduser()
        if _version(path) < MIN_PYTHON:
            raise HarborUnavailable(f"{PYTHON_VAR}={given} is not a Python >= 3.12")
        return path
    for candidate in _candidates():
        if _version(candidate) >= MIN_PYTHON:
            return candidate
    raise HarborUnavailable(
        "Harbor's agents need Python >= 3.12 and none was found (python3.12/3.13 on PATH, "
        f"pyenv's versions): install one, or set {PYTHON_VAR}=/path/to/python3.12"
    )


def _candidates() -> list[Path]:
    found = [shutil.which(name) for name in ("python3.12", "python3.13", "python3")]
    paths = [Path(p) for p in found if p]
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    if root.is_dir():
        numbered = [d for d in root.iterdir() if re.fullmatch(r"3\.\d+\.\d+", d.name)]
        numbered = [d for d in numbered if _numbers(d)[:2] >= MIN_PYTHON]
        # The oldest minor release that qualifies (Harbor's own, 3.12), its latest patch.
        for version in sorted(numbered, key=lambda d: (_numbers(d)[1], -_numbers(d)[2])):
            minor = ".".join(version.name.split(".")[:2])
            paths.append(version / "bin" / f"python{minor}")
    return paths


def _numbers(path: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in path.name.split("."))


def _version(python: Path) -> tuple[int, int]:
    """The interpreter's (major, minor); (0, 0) when it does not run."""
    try:
        done = subprocess.run(
            [str(python), "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return (0, 0)
    words = done.stdout.split()
    if done.returncode != 0 or len(words) != 2 or not all(w.isdigit() for w in words):
        return (0, 0)
    return (int(words[0]), int(words[1]))


def _holds_harbor(venv: Path) -> bool:
    """Whether the venv runs and holds the pinned Harbor (its metadata: no import)."""
    probe = (
        "import importlib.metadata as m, sys\n"
        f"sys.exit(sys.version_info < {MIN_PYTHON!r} or m.version('harbor') != {HARBOR_VERSION!r})"
    )
    try:
        done = subprocess.run(
            [str(venv_python(venv)), "-I", "-c", probe], capture_output=True, timeout=60
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _build(python: Path, venv: Path) -> None:
    subprocess.run([str(python), "-m", "venv", str(venv)], check=True, capture_output=True)
    pip = [str(venv_python(venv)), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    done = subprocess.run(
        [*pip, f"harbor=={HARBOR_VERSION}"],
        capture_output=True,
        text=True,
        timeout=PIP_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        lines = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()
        raise HarborUnavailable(f"pip install harbor=={HARBOR_VERSION} failed: {lines[-1]}")
