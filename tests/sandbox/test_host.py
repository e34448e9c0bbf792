"""``HostReader``: memory and CPUs from ``/proc/meminfo`` and cgroup v1/v2 files, written
under a temporary root that stands in for ``/``."""

from __future__ import annotations

from pathlib import Path

from gem_eval.sandbox.host import HostReader, Memory

GIB = 2**30


def meminfo(root: Path, total: float, available: float) -> None:
    """``/proc/meminfo`` with ``total`` and ``available`` GiB (in kB, as the kernel writes)."""
    (root / "proc").mkdir(parents=True, exist_ok=True)
    (root / "proc" / "meminfo").write_text(
        f"MemTotal:       {int(total * 2**20)} kB\n"
        f"MemFree:        {int(available * 2**19)} kB\n"
        f"MemAvailable:   {int(available * 2**20)} kB\n"
        "Buffers:          1024 kB\n"
    )


def cgroup(root: Path, files: dict[str, str], proc_line: str = "0::/") -> None:
    """Files of our cgroup (paths relative to ``sys/fs/cgroup``) and ``/proc/self/cgroup``."""
    base = root / "sys" / "fs" / "cgroup"
    for name, text in files.items():
        (base / name).parent.mkdir(parents=True, exist_ok=True)
        (base / name).write_text(text)
    (root / "proc" / "self").mkdir(parents=True, exist_ok=True)
    (root / "proc" / "self" / "cgroup").write_text(proc_line + "\n")


def test_memory_from_meminfo_alone(tmp_path: Path) -> None:
    meminfo(tmp_path, total=16, available=5)
    assert HostReader(tmp_path).memory() == Memory(total=16 * GIB, available=5 * GIB)


def test_no_meminfo_means_unknown(tmp_path: Path) -> None:
    assert HostReader(tmp_path).memory() is None


def test_a_cgroup_v2_limit_below_the_machine_binds(tmp_path: Path) -> None:
    meminfo(tmp_path, total=16, available=12)
    cgroup(
        tmp_path,
        {
            "memory.max": f"{4 * GIB}\n",
            "memory.current": f"{3 * GIB}\n",
            "memory.stat": f"anon 1000\ninactive_file {GIB}\n",  # cache that can be dropped
        },
    )
    # 4 GiB limit, 3 GiB used of which 1 GiB is droppable cache: 2 GiB free for us.
    assert HostReader(tmp_path).memory() == Memory(total=4 * GIB, available=2 * GIB)


def test_a_cgroup_v2_without_a_limit_leaves_the_machine(tmp_path: Path) -> None:
    meminfo(tmp_path, total=16, available=12)
    cgroup(tmp_path, {"memory.max": "max\n", "memory.current": f"{3 * GIB}\n"})
    assert HostReader(tmp_path).memory() == Memory(total=16 * GIB, available=12 * GIB)


def test_a_cgroup_v1_limit_in_our_own_group(tmp_path: Path) -> None:
    meminfo(tmp_path, total=16, available=12)
    cgroup(
        tmp_path,
        {
            "memory/ci/job/memory.limit_in_bytes": f"{6 * GIB}\n",
            "memory/ci/job/memory.usage_in_bytes": f"{5 * GIB}\n",
            "memory/ci/job/memory.stat": f"cache 5\ntotal_inactive_file {2 * GIB}\n",
            # The hierarchy's root has no limit (a page-rounded maximum, as the kernel writes).
            "memory/memory.limit_in_bytes": "9223372036854771712\n",
            "memory/memory.usage_in_bytes": f"{9 * GIB}\n",
        },
        proc_line="4:memory:/ci/job",
    )
    assert HostReader(tmp_path).memory() == Memory(total=6 * GIB, available=3 * GIB)


def test_cpus_from_the_affinity_and_a_quota(tmp_path: Path) -> None:
    assert HostReader(tmp_path, cores=8).cpus() == 8.0
    cgroup(tmp_path, {"cpu.max": "150000 100000\n"})
    assert HostReader(tmp_path, cores=8).cpus() == 1.5
    assert HostReader(tmp_path, cores=1).cpus() == 1.0  # the smaller


def test_cpus_from_a_cgroup_v1_quota(tmp_path: Path) -> None:
    cgroup(
        tmp_path,
        {"cpu,cpuacct/cpu.cfs_quota_us": "300000\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n"},
        proc_line="3:cpu,cpuacct:/",
    )
    assert HostReader(tmp_path, cores=8).cpus() == 3.0
    (tmp_path / "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us").write_text("-1\n")
    assert HostReader(tmp_path, cores=8).cpus() == 8.0


def test_this_machine_reads_something_sane() -> None:
    memory = HostReader().memory()
    assert memory is not None and 0 < memory.available <= memory.total
    assert HostReader().cpus() > 0
