"""Packages fetched on this machine into gem-eval's cache, once: wheels from PyPI
(``pip download``, for the container's Python and platform rather than this machine's)
and tarballs from the npm registry (``npm pack``).

A container here reaches no package registry (only Debian's mirror), so an installed
agent's packages are fetched by the host's own clients, with the user's settings (an
index, a proxy, a CA). Each fetch is a cache entry (:class:`gem_eval.cache.CacheEntry`)
under ``agents/packages``: made by one process at a time, whole or not at all, and a
second fetch finds it and runs neither pip nor npm. A registry that cannot be reached,
or a client that is missing, is one line (:class:`FetchError`).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from gem_eval.agents.base import AgentError
from gem_eval.cache import CacheEntry, cache_dir

MIN_GLIBC = (2, 28)
"""The oldest glibc the fetched binaries need (manylinux_2_28 wheels; Node 22)."""
_TIMEOUT_S = 1800
_NPM_OPTIONS = [
    "--ignore-scripts",
    "--json",
    # npm's own retries wait up to a minute each: a registry out of reach fails in seconds
    "--fetch-retries=2",
    "--fetch-retry-mintimeout=2000",
    "--fetch-retry-maxtimeout=10000",
]


class FetchError(AgentError):
    """A package could not be fetched (the registry is out of reach, the client is
    missing): the machinery's fault, never the agent's."""

    def __init__(self, message: str) -> None:
        super().__init__(message, infra=True)


def packages_dir() -> Path:
    """Where fetched packages are kept."""
    return cache_dir("agents") / "packages"


def manylinux_platforms(arch: str) -> list[str]:
    """pip's platform tags for a glibc-2.28-or-later Linux on ``arch`` (``x86_64``,
    ``aarch64``): pip does not expand a ``manylinux_2_28`` tag to the older ones."""
    tags = [f"manylinux_2_{minor}_{arch}" for minor in range(MIN_GLIBC[1], 4, -1)]
    legacy = ["manylinux2014"] + (["manylinux2010", "manylinux1"] if arch == "x86_64" else [])
    return tags + [f"{name}_{arch}" for name in legacy]


def pip_target_options(python: str, arch: str) -> list[str]:
    """pip's options that pick wheels for CPython ``python`` (``3.11``) on ``arch``."""
    options = ["--only-binary=:all:", "--python-version", python, "--implementation", "cp"]
    for tag in manylinux_platforms(arch):
        options += ["--platform", tag]
    return options


def wheels(requirement: str, python: str, arch: str) -> Path:
    """The directory of the wheels of ``requirement`` (``mini-swe-agent==2.4.6``) and all
    it depends on, for CPython ``python`` on Linux ``arch``; fetched from PyPI once.

    Raises:
        FetchError: pip failed (one line: why).
    """
    key = f"{_slug(requirement)}-cp{python.replace('.', '')}-{arch}"
    entry = CacheEntry(packages_dir() / key, check=lambda path: any(path.glob("*.whl")))

    def download(tmp: Path) -> None:
        tmp.mkdir(parents=True)
        command = [*pip(), "download", "--retries", "2", *pip_target_options(python, arch)]
        run([*command, "-d", str(tmp), requirement], f"{requirement} from PyPI")

    entry.ensure(download)
    return entry.path


def npm_tarball(spec: str) -> Path:
    """The tarball of the npm package ``spec`` (``@qwen-code/qwen-code@0.24.4``), fetched
    from the npm registry once.

    Raises:
        FetchError: npm is missing or failed (one line: why).
    """
    entry = CacheEntry(packages_dir() / f"{_slug(spec)}.tgz")

    def pack(tmp: Path) -> None:
        npm = shutil.which("npm")
        if npm is None:
            raise FetchError(
                f"fetching {spec} needs npm on this machine (apt-get install npm): "
                "containers here reach no package registry"
            )
        with tempfile.TemporaryDirectory(prefix="gem-eval-npm-") as work:
            command = [npm, "pack", spec, *_NPM_OPTIONS, "--pack-destination", work]
            out = run(command, f"{spec} from the npm registry", cwd=work)
            try:
                name = json.loads(out)[0]["filename"]
            except (ValueError, LookupError, TypeError):
                raise FetchError(f"fetching {spec}: npm pack said {out.strip()[:200]!r}") from None
            shutil.move(Path(work) / Path(name).name, tmp)

    entry.ensure(pack)
    return entry.path


def pip() -> list[str]:
    """This Python's pip (``python -m pip``).

    Raises:
        FetchError: pip is not installed in it.
    """
    found = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True)
    if found.returncode != 0:
        raise FetchError(
            f"installed agents are fetched with pip, which {sys.executable} lacks: "
            f"{sys.executable} -m ensurepip"
        )
    return [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]


def run(command: list[str], what: str, cwd: str | None = None) -> str:
    """Run a package client; its standard output.

    Raises:
        FetchError: It failed: ``could not fetch WHAT: REASON``.
    """
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=_TIMEOUT_S, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise FetchError(f"could not fetch {what}: no answer within {_TIMEOUT_S} s") from None
    except OSError as exc:
        raise FetchError(f"could not fetch {what}: {exc}") from None
    if done.returncode != 0:
        raise FetchError(f"could not fetch {what}: {reason(done.stderr, done.stdout)}")
    return done.stdout


def reason(stderr: str, stdout: str = "") -> str:
    """What a failed pip or npm says of why (npm's ``--json`` summary, else its or pip's
    first error line), and whether the registry was out of reach."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    try:
        summary = str(json.loads(stdout)["error"]["summary"])
    except (ValueError, LookupError, TypeError):
        summary = None
    errors = [
        re.sub(r"^(ERROR:|npm (ERR!|error))\s*", "", line)
        for line in lines
        if re.match(r"ERROR:|npm (ERR!|error)", line)
    ]
    unreachable = any(
        re.search(r"Retrying|NewConnectionError|ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT", line)
        for line in lines
    )
    said = summary or next((e for e in errors if e), None)
    said = said or (lines[-1] if lines else "no output")
    return ("the registry could not be reached: " if unreachable else "") + said[:300]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]+", "+", text.lstrip("@"))
