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
        self._files: tuple[str, str, str, str] | tuple[()] | None = None

    def memory(self) -> Memory | None:
        """The memory we may use now; ``None`` when ``/proc/meminfo`` cannot be read."""
        info = _key_values(self.root / "proc" / "meminfo", ("MemTotal", "MemAvailable"))
        if "MemTotal" not in info or "MemAvailable" not in info:
            return None
        total, available = info["MemTotal"] * 1024, info["MemAvailable"] * 1024
        if self._files is None:  # our cgroup does not move: find its files once
            self._files = self._cgroup_memory_files()
        limit_file, used_file, stat_file, cache_key = self._files or ("", "", "", "")
        limit = _number(Path(limit_file)) if limit_file else None
        if limit is not None and limit < total:  # else no limit of its own
            used = _number(Path(used_file)) or 0
            cache = _key_values(Path(stat_file), (cache_key,)).get(cache_key, 0)
            total, available = limit, min(available, max(0, limit - max(0, used - cache)))
        return Memory(total=total, available=available)

    def cpus(self) -> float:
        """The CPUs we may use (a cgroup quota may make it a fraction)."""
        cores = self.cores if self.cores is not None else len(os.sched_getaffinity(0))
        quota = self._cgroup_cpus()
        return float(cores) if quota is None else min(float(cores), quota)

    def _cgroup_memory_files(self) -> tuple[str, str, str, str] | tuple[()]:
        """Our cgroup's limit, use and statistics files, and the statistic that counts
        page cache it can drop (``()``: no memory cgroup)."""
        v2 = self._group("")
        if v2 is not None and (v2 / "memory.max").exists():
            return (
                str(v2 / "memory.max"),
                str(v2 / "memory.current"),
                str(v2 / "memory.stat"),
                "inactive_file",
            )
        v1 = self._group("memory")
        if v1 is None:
            return ()
        return (
            str(v1 / "memory.limit_in_bytes"),
            str(v1 / "memory.usage_in_bytes"),
            str(v1 / "memory.stat"),
            "total_inactive_file",
        )

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


def _key_values(path: Path, wanted: tuple[str, ...] = ()) -> dict[str, int]:
    """``key value`` or ``Key: value kB`` lines (``memory.stat``, ``meminfo``) as integers;
    with ``wanted``, reading stops once those are found."""
    out: dict[str, int] = {}
    for line in _text(path).splitlines():
        fields = line.replace(":", " ").split()
        if len(fields) >= 2 and fields[1].isdigit():
            out[fields[0]] = int(fields[1])
            if wanted and all(k in out for k in wanted):
                break
    return out
