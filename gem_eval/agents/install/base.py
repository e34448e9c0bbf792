"""``Installer``: puts an installed agent's command in an episode's container.

The field installs these agents inside the task's container from the registries
(Harbor's installers run ``uv tool install`` or ``npm install -g`` there). A container
here reaches no registry, so gem-eval does it in two steps:

1. on this machine, once per agent version and platform (:meth:`Installer.tree`): fetch
   the packages into the cache (:mod:`gem_eval.agents.install.fetch`) and unpack them
   into a ready-to-run *tree* (a cache entry under :func:`~gem_eval.sandbox.agent_files.
   agents_dir`, which every agent program's container sees read-only at
   :data:`~gem_eval.sandbox.agent_files.AGENTS_MOUNT`);
2. in each episode's container (:meth:`Installer.install`): look at what the image
   offers (its architecture, glibc, ``python3``, the agent user's home), then link the
   agent's command into ``/usr/local/bin`` and make what else the agent's adapter
   expects (a venv on the image's Python, a stub ``~/.nvm/nvm.sh``): two ``exec`` calls.
   Nothing is copied per episode; the agent cannot change the files other episodes use.

Harbor's adapters then run with ``skip_install=True``: they find the command on ``PATH``.
"""

from __future__ import annotations

import asyncio
import logging
import shlex
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from gem_eval.agents.base import AgentError
from gem_eval.agents.install.fetch import MIN_GLIBC
from gem_eval.cache import CacheEntry
from gem_eval.sandbox.agent_files import AGENTS_MOUNT

if TYPE_CHECKING:
    from gem_eval.sandbox.base import Sandbox

DEFAULT_PYTHON = "3.11"
"""Debian bookworm's Python: that of gem-eval's base image and of the task images built
on it, the platform :meth:`Installer.prepare` readies before the first episode."""
_ready: set[Path] = set()  # trees found ready in this process (checked once each)
_ARCHES = {"amd64": "x86_64", "arm64": "aarch64", "x86_64": "x86_64", "aarch64": "aarch64"}
_PROBE = r"""
echo "arch=$(uname -m)"
echo "glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null)"
if p=$(command -v python3 2>/dev/null); then
  echo "python=$p"
  echo "python_version=$("$p" -c 'import sys; print(*sys.version_info[:3], sep=".")' 2>/dev/null)"
fi
echo "home=$(getent passwd "$1" 2>/dev/null | cut -d: -f6)"
"""

log = logging.getLogger("gem_eval.agents")


@dataclass(frozen=True)
class Platform:
    """What a container offers an installed agent.

    Attributes:
        arch: ``x86_64`` or ``aarch64``.
        glibc: Its glibc version (``None``: another C library, musl say).
        python: Its ``python3``'s path (``None``: there is none).
        python_version: That Python's version, ``(3, 11, 2)``.
        user: The user the agent runs as, and its home directory.
    """

    arch: str
    glibc: tuple[int, int] | None = None
    python: str | None = None
    python_version: tuple[int, int, int] | None = None
    user: str = "root"
    home: str = "/root"

    @property
    def python_minor(self) -> str | None:
        """``3.11`` (``None``: no Python)."""
        return None if self.python_version is None else _dotted(self.python_version[:2])

    @classmethod
    def parse(cls, text: str, user: str) -> Platform:
        """The platform the probe's output describes."""
        said = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
        glibc = said.get("glibc", "").removeprefix("glibc ").split(".")
        version = said.get("python_version", "").split(".")
        return cls(
            arch=said.get("arch", ""),
            glibc=(int(glibc[0]), int(glibc[1])) if _numbers(glibc, 2) else None,
            python=said.get("python") or None,
            python_version=(int(version[0]), int(version[1]), int(version[2]))
            if _numbers(version, 3)
            else None,
            user=user,
            home=said.get("home") or ("/root" if user == "root" else f"/home/{user}"),
        )


@dataclass
class Installed:
    """An agent put in an episode's container.

    Attributes:
        command: Its command, on ``PATH``.
        version: The agent's version (the pin).
        seconds: The install's time (the container's share, plus this machine's when it
            had to fetch or unpack first).
        packages: Each package and its version (the manifest records them).
        platform: What the container offered.
    """

    command: str
    version: str
    seconds: float
    packages: dict[str, str]
    platform: Platform


class Installer(ABC):
    """One installed agent's packages and how its command is put in a container.

    Attributes:
        name: The agent's name (``--agent``).
        command: Its command in the container.
        source: The registry its packages come from (``PyPI``, ``the npm registry``).
    """

    name: ClassVar[str]
    command: ClassVar[str]
    source: ClassVar[str]

    def __init__(self, version: str) -> None:
        self.version = version
        self.installed: dict[str, str] = {}  # the packages prepared or installed so far

    @abstractmethod
    def packages(self, platform: Platform) -> dict[str, str]:
        """The packages put in a container of ``platform``, and their versions."""

    @abstractmethod
    def tree(self, platform: Platform) -> Path:
        """This machine's ready-to-run tree for ``platform`` (fetched and unpacked on the
        first call, blocking; every container sees it at :data:`AGENTS_MOUNT`).

        Raises:
            AgentError: The platform cannot run the agent, or its packages could not be
                fetched (``infra``: neither is the agent's doing).
        """

    @abstractmethod
    def link_script(self, tree: str, platform: Platform) -> str:
        """The shell script, run as root in the container, that makes :attr:`command`
        run from ``tree`` (the tree's path in the container)."""

    async def prepare(self, arch: str | None = None) -> None:
        """Before the first episode: fetch and unpack the agent for gem-eval's usual
        platform (:data:`DEFAULT_PYTHON` on the Docker engine's architecture), so a
        registry out of reach stops the run in one line and no episode waits for it.

        Raises:
            AgentError: As :meth:`tree`.
        """
        if arch is None:
            from gem_eval.sandbox.docker_launch import engine

            arch = (await engine()).arch
        major, minor = DEFAULT_PYTHON.split(".")
        platform = Platform(
            arch=_ARCHES.get(arch, arch),
            glibc=MIN_GLIBC,
            python="/usr/bin/python3",
            python_version=(int(major), int(minor), 0),
        )
        await asyncio.to_thread(self.tree, platform)
        self.installed |= self.packages(platform)

    async def install(self, sandbox: Sandbox) -> Installed:
        """Put the agent's command in ``sandbox``'s container (started; made for an agent
        program, so the installed agents' files are mounted in it).

        Raises:
            AgentError: The image cannot run the agent, or its packages could not be
                fetched (``infra=True``).
            SandboxError: The container failed (lost, say).
        """
        began = time.monotonic()
        mounts = getattr(sandbox, "mounts", None) or {}
        if AGENTS_MOUNT not in mounts:
            raise AgentError(
                f"{self.name} is installed into a Docker sandbox made for agent programs "
                f"(the installed agents' files at {AGENTS_MOUNT}); this one is not",
                infra=True,
            )
        platform = await probe(sandbox)
        tree = await asyncio.to_thread(self.tree, platform)
        where = f"{AGENTS_MOUNT}/{tree.name}"
        await sandbox.run_root(self.link_script(where, platform), f"installing {self.name}")
        self.installed |= self.packages(platform)
        return Installed(
            command=self.command,
            version=self.version,
            seconds=time.monotonic() - began,
            packages=self.packages(platform),
            platform=platform,
        )

    def describe(self) -> dict[str, Any]:
        """What the run manifest records of the agent's install."""
        return {
            "version": self.version,
            "packages": dict(self.installed),
            "from": self.source,
            "installed": f"fetched on the host into gem-eval's cache, seen read-only at "
            f"{AGENTS_MOUNT} in the task's container; {self.command} on PATH",
        }

    def refuse(self, problem: str) -> AgentError:
        """The error for a container that cannot run the agent (not the agent's fault)."""
        return AgentError(
            f"{self.name} {self.version} cannot run in this task's image: {problem}", infra=True
        )

    def require_glibc(self, platform: Platform) -> None:
        """Raise :meth:`refuse` unless ``platform`` has glibc 2.28 or later."""
        if platform.arch not in ("x86_64", "aarch64"):
            raise self.refuse(f"its architecture is {platform.arch or 'unknown'}")
        if platform.glibc is None or platform.glibc < MIN_GLIBC:
            have = "no glibc" if platform.glibc is None else f"glibc {_dotted(platform.glibc)}"
            raise self.refuse(f"it needs glibc {_dotted(MIN_GLIBC)} or later; the image has {have}")


def ensure(entry: CacheEntry, build: Callable[[Path], object]) -> Path:
    """``entry`` made by ``build`` if it is not ready; its path. A tree found ready once
    is not checked again by this process (its manifest lists tens of thousands of
    files)."""
    if entry.path not in _ready:
        if not entry.ready():  # minutes on a cold cache: say so before the silence
            log.warning("installing %s into %s (once per machine)", entry.path.name, entry.path)
        entry.ensure(build)
        _ready.add(entry.path)
    return entry.path


async def probe(sandbox: Sandbox) -> Platform:
    """What ``sandbox``'s container offers (one ``exec``)."""
    user = sandbox.user or "root"
    done = await sandbox.exec(["sh", "-c", _PROBE, "probe", user], timeout=60, user="root", cwd="/")
    return Platform.parse(done.stdout, user)


def mounted(tree: str, launcher: str) -> str:
    """A shell line that fails (exit 3, saying why) unless ``tree``'s ``launcher`` is
    there: the installed agents' files are not mounted in this container."""
    path = shlex.quote(f"{tree}/{launcher}")
    return f"[ -x {path} ] || {{ echo {path}: not in this container >&2; exit 3; }}"


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def _numbers(parts: list[str], count: int) -> bool:
    return len(parts) >= count and all(p.isdigit() for p in parts[:count])
