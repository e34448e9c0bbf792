"""mini-swe-agent from PyPI, on the task image's own ``python3`` (3.10 or later).

The tree (one per version, Python minor version and architecture) is the package and
everything it depends on, installed by pip on this machine for the container's Python
and platform (``pip install --target`` from the fetched wheels: 82 wheels, ~550 MB for
2.4.6), byte-compiled when this machine's Python is the same minor version (that halves
the agent's start, ~6 s instead of ~13 s), and a launcher ``bin/mini-swe-agent``.

In the container, ``/installed-agent/mini-swe-agent`` becomes a venv on the image's
``python3`` whose ``site-packages`` is the mounted tree's (the agent's packages do not
leak into the task's Python, nor the task's into the agent's), and
``/usr/local/bin/mini-swe-agent`` runs the launcher. The launcher sets
``LITELLM_LOCAL_MODEL_COST_MAP=True``: litellm must not fetch its cost map (there is no
route to it; it would retry for seconds).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

from gem_eval.agents.base import AgentError
from gem_eval.agents.catalog import MINI_SWE_AGENT_VERSION
from gem_eval.agents.install import fetch
from gem_eval.agents.install.base import Installer, Platform, ensure, mounted
from gem_eval.cache import CacheEntry
from gem_eval.sandbox.agent_files import AGENTS_MOUNT, agents_dir

VENV = "/installed-agent/mini-swe-agent"
"""The agent's venv in the container (Harbor installs its agents under /installed-agent)."""
MIN_PYTHON = (3, 10)
_LAUNCHER = f"""#!{VENV}/bin/python
import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
from minisweagent.run.mini import app

sys.exit(app())
"""


class MiniSweAgentInstaller(Installer):
    """See the module docstring."""

    name = "mini-swe-agent"
    command = "mini-swe-agent"
    source: ClassVar[str] = "PyPI"

    def __init__(self, version: str = MINI_SWE_AGENT_VERSION) -> None:
        super().__init__(version)

    def packages(self, platform: Platform) -> dict[str, str]:
        """mini-swe-agent and each package it brought (its dependencies are not pinned:
        they are what PyPI served when the tree was made, recorded here)."""
        site = agents_dir() / self._name(platform) / "site-packages"
        found = {}
        for info in sorted(site.glob("*.dist-info")):
            name, _, version = info.name.removesuffix(".dist-info").partition("-")
            found[name.replace("_", "-").lower()] = version
        return {"mini-swe-agent": self.version, **found}

    def _name(self, platform: Platform) -> str:
        python = (platform.python_minor or "").replace(".", "")
        return f"mini-swe-agent-{self.version}-cp{python}-{platform.arch}"

    def tree(self, platform: Platform) -> Path:
        self.require_glibc(platform)
        if platform.python_version is None or platform.python_version[:2] < MIN_PYTHON:
            have = f"python3 {platform.python_minor}" if platform.python else "no python3"
            raise self.refuse(f"it needs python3 3.10 or later; the image has {have}")
        python = platform.python_minor
        assert python is not None
        name = self._name(platform)
        entry = CacheEntry(agents_dir() / name, check=_launcher_there)
        return ensure(
            entry, lambda tmp: self._build(tmp, python, platform.arch, f"{AGENTS_MOUNT}/{name}")
        )

    def _build(self, tmp: Path, python: str, arch: str, inside: str) -> None:
        """The tree at ``tmp``, to be seen at ``inside`` in containers."""
        requirement = f"mini-swe-agent=={self.version}"
        wheels = fetch.wheels(requirement, python, arch)
        site = tmp / "site-packages"
        command = [*fetch.pip(), "install", "--no-index", "--find-links", str(wheels)]
        command += [*fetch.pip_target_options(python, arch), "--no-compile"]
        command += ["--target", str(site), requirement]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise AgentError(
                f"unpacking {requirement} for Python {python} failed: "
                f"{fetch.reason(done.stderr, done.stdout)}",
                infra=True,
            )
        shutil.rmtree(site / "bin", ignore_errors=True)  # scripts for this machine's Python
        if f"{sys.version_info.major}.{sys.version_info.minor}" == python:
            # Compiled as the container will see the files (tracebacks name those paths).
            compile_all = [sys.executable, "-m", "compileall", "-q", "-j0", "-s", str(site)]
            subprocess.run(
                [*compile_all, "-p", f"{inside}/site-packages", str(site)], capture_output=True
            )
        launcher = tmp / "bin" / "mini-swe-agent"
        launcher.parent.mkdir()
        launcher.write_text(_LAUNCHER)
        _readable(tmp)
        launcher.chmod(0o755)

    def link_script(self, tree: str, platform: Platform) -> str:
        assert platform.python is not None and platform.python_version is not None
        python, minor = platform.python, platform.python_minor
        version = ".".join(map(str, platform.python_version))
        lib = f"{VENV}/lib/python{minor}"
        q = shlex.quote
        config = [f"home = {os.path.dirname(python)}", "include-system-site-packages = false"]
        config.append(f"version = {version}")
        return "\n".join(
            [
                "set -e",
                mounted(tree, "bin/mini-swe-agent"),
                f"mkdir -p {VENV}/bin {q(lib)}",
                f"ln -sfn {q(tree)}/site-packages {q(lib)}/site-packages",
                f"ln -sfn {q(python)} {VENV}/bin/python",
                f"printf '%s\\n' {' '.join(map(q, config))} > {VENV}/pyvenv.cfg",
                "mkdir -p /usr/local/bin",
                f"ln -sfn {q(tree)}/bin/mini-swe-agent /usr/local/bin/mini-swe-agent",
                f"chmod 755 /installed-agent {VENV} {VENV}/bin {VENV}/lib {q(lib)}",
            ]
        )


def _launcher_there(tree: Path) -> bool:
    return (tree / "bin" / "mini-swe-agent").is_file() and (tree / "site-packages").is_dir()


def _readable(root: Path) -> None:
    """Every file readable and every directory searchable by all (the agent may run as
    any user; the tree is mounted read-only)."""
    for path in [root, *root.rglob("*")]:
        if path.is_symlink():
            continue
        mode = path.stat().st_mode
        path.chmod(mode | (0o555 if path.is_dir() or mode & 0o111 else 0o444))
