"""Where an agent program's container finds the installed agents' files.

Installed agents (mini-swe-agent, Qwen Code) are fetched and unpacked on this machine,
into gem-eval's cache (see :mod:`gem_eval.agents.install`): a container reaches no
package registry here. Every agent program's container sees that directory read-only at
:data:`AGENTS_MOUNT` (a bind mount made when the container is created: nothing is copied
per episode, and an agent cannot change the files another episode uses). Each agent's
tree there is a finished cache entry, or not there at all; one made while the container
runs appears in it.
"""

from __future__ import annotations

from pathlib import Path

from gem_eval.cache import cache_dir

AGENTS_MOUNT = "/opt/gem-eval/agents"
"""Where an agent program's container sees the installed agents' files."""


def agents_dir() -> Path:
    """The installed agents' files on this machine (one directory per agent, version,
    platform)."""
    return cache_dir("agents") / "installed"


def agent_mounts() -> dict[str, str]:
    """The read-only mounts of an agent program's container (container path -> host path)."""
    return {AGENTS_MOUNT: str(agents_dir())}
