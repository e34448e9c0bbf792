"""``HostReader``: the memory and CPUs this process may use, read from ``/proc`` and cgroups.

Memory is the smaller of the machine's (``MemAvailable`` of ``/proc/meminfo``) and our
cgroup's (its limit less what it uses, page cache that can be dropped not counted), in
cgroup v2 (``memory.max``) or v1 (``memory/memory.limit_in_bytes``). Docker's containers
live in the engine's cgroups, not ours, so a limit of ours may bind them too loosely or too
tightly; the smaller figure is the safe one. CPUs are those of our affinity mask, fewer when
a cgroup quota (``cpu.max``, ``cpu.cfs_quota_us``) allows less. Each read is a few small
files (tens of microseconds), cheap enough to do before every sandbox start.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Memory:
    """Memory for this process, in bytes.

    Attributes:
        total: All it may use (the machine's, or its cgroup's limit when smaller).
        available: What it could take now without swapping or an OOM kill.
    """

    total: int
    available: int


class HostReader:
    """Reads the host's figures under ``root`` (a directory standing in for ``/`` in tests).

    Args:
        root: Where ``proc`` and ``sys/fs/cgroup`` are.
        cores: The CPUs of the affinity mask (default: ``os.sched_getaffinity``).
    """

    def __init__(self, root: str | Path = "/", cores: int | None = None) -> None:
        self.root = Path(root)
        self.cores = cores

    def memory(self) -> Memory | None:
        """The memory we may use now; ``None`` when ``/proc/meminfo`` cannot be read."""
        info = _key_values(self.root / "proc" / "meminfo")
        if "MemTotal" not in info or "MemAvailable" not in info:
            return None
        total, available = info["MemTotal"] * 1024, info["MemAvailable"] * 1024
        group = self._cgroup_memory()
        if group is not None:
            limit, used = group
            total, available = min(total, limit), min(available, max(0, limit - used))
        return Memory(total=total, available=available)

    def cpus(self) -> float:
        """The CPUs we may use (a cgroup quota may make it a fraction)."""
        cores = self.cores if self.cores is not None else len(os.sched_getaffinity(0))
        quota = self._cgroup_cpus()
        return float(cores) if quota is None else min(float(cores), quota)

    def _cgroup_memory(self) -> tuple[int, int] | None:
        """Our cgroup's memory limit and use (less inactive page cache), if it has a limit."""
        v2 = self._group("")
        if v2 is not None and (v2 / "memory.max").exists():
            limit = _number(v2 / "memory.max")
            used = _number(v2 / "memory.current")
            cache = _key_values(v2 / "memory.stat").get("inactive_file", 0)
        else:
            v1 = self._group("memory")
            if v1 is None:
                return None
            limit = _number(v1 / "memory.limit_in_bytes")
            used = _number(v1 / "memory.usage_in_bytes")
            cache = _key_values(v1 / "memory.stat").get("total_inactive_file", 0)
        if limit is None or used is None:  # "max", or unreadable: no limit of its own
            return None
        return limit, max(0, used - cache)

    def _cgroup_cpus(self) -> float | None:
        """Our cgroup's CPU quota in CPUs, if it has one."""
        v2 = self._group("")
        if v2 is not None and (v2 / "cpu.max").exists():
            fields = _text(v2 / "cpu.max").split()
            if len(fields) == 2 and fields[0] != "max":
                return int(fields[0]) / int(fields[1])
            return None
        for name in ("cpu", "cpu,cpuacct"):
            v1 = self._group(name)
            if v1 is not None:
                quota, period = _number(v1 / "cpu.cfs_quota_us"), _number(v1 / "cpu.cfs_period_us")
                if quota is not None and period and quota > 0:
                    return quota / period
                return None
        return None

    def _group(self, controller: str) -> Path | None:
        """The directory of our cgroup for ``controller`` (``""``: the v2 hierarchy):
        its path from ``/proc/self/cgroup`` when it exists (no cgroup namespace), else
        the hierarchy's root (inside a container, our own cgroup)."""
        mount = self.root / "sys" / "fs" / "cgroup"
        if controller:
            mount = mount / controller
        if not mount.is_dir():
            return None
        for line in _text(self.root / "proc" / "self" / "cgroup").splitlines():
            _, names, path = [*line.split(":", 2), "", ""][:3]
            ours = set(controller.split(",")) <= set(names.split(",")) if controller else not names
            if ours and path:
                found = mount / path.lstrip("/")
                if found.is_dir():
                    return found
        return mount


def _text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _number(path: Path) -> int | None:
    """The integer a cgroup file holds; ``None`` for ``max``, -1 or an unreadable file."""
    try:
        value = int(_text(path).strip())
    except ValueError:
        return None
    return value if value >= 0 else None


def _key_values(path: Path) -> dict[str, int]:
    """``key value`` or ``Key: value kB`` lines (``memory.stat``, ``meminfo``) as integers."""
    out: dict[str, int] = {}
    for line in _text(path).splitlines():
        fields = line.replace(":", " ").split()
        if len(fields) >= 2 and fields[1].isdigit():
            out[fields[0]] = int(fields[1])
    return out
