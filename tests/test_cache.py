"""``gem_eval.cache``: one builder per entry across threads and processes, nothing
half-written ever read, a damaged entry rebuilt, a crashed build leaving nothing used."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from gem_eval.cache import MANIFEST, CacheEntry, CacheError, cache_dir, cache_root

ROOT = Path(__file__).resolve().parents[1]


def slow_dir_builder(log: list[str], files: dict[str, str]) -> Callable[[Path], None]:
    """A builder that writes ``files`` one by one, pausing between them (a window in
    which an unlocked or unrenamed build would be seen half done)."""

    def build(path: Path) -> None:
        log.append(path.name)
        path.mkdir()
        for name, text in files.items():
            time.sleep(0.05)
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            (path / name).write_text(text)

    return build


FILES = {"Dockerfile": "FROM x\n", "site/pkg.py": "x = 1\n" * 100}


def complete(path: Path) -> bool:
    return all((path / n).is_file() and (path / n).read_text() == t for n, t in FILES.items())


def entries_in(directory: Path) -> list[str]:
    """What a directory holds besides lock files."""
    return sorted(p.name for p in directory.iterdir() if not p.name.endswith(".lock"))


def test_the_root_is_gem_eval_cache_or_the_home_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEM_EVAL_CACHE", str(tmp_path))
    assert cache_dir("images") == tmp_path / "images"
    monkeypatch.setenv("GEM_EVAL_CACHE", "")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root() == tmp_path / "home" / ".cache" / "gem-eval"


def test_threads_racing_on_one_entry_build_it_once_and_all_see_it_whole(tmp_path: Path) -> None:
    builds: list[str] = []
    entry = CacheEntry(tmp_path / "ctx")
    seen: list[bool] = []
    start = threading.Barrier(8)

    def use(_: int) -> bool:
        start.wait()
        entry.ensure(slow_dir_builder(builds, FILES))
        seen.append(complete(entry.path))
        return True

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(use, range(8)))
    assert len(builds) == 1
    assert seen == [True] * 8
    assert entries_in(tmp_path) == ["ctx"]


def test_a_built_directory_carries_a_manifest_of_its_files(tmp_path: Path) -> None:
    entry = CacheEntry(tmp_path / "ctx")
    assert entry.ensure(slow_dir_builder([], FILES)) is True
    manifest = json.loads((entry.path / MANIFEST).read_text())
    assert manifest["files"] == {name: len(text) for name, text in FILES.items()}
    assert entry.ensure(slow_dir_builder([], FILES)) is False


@pytest.mark.parametrize("damage", ["missing_file", "truncated_file", "no_manifest"])
def test_a_damaged_directory_entry_is_rebuilt(tmp_path: Path, damage: str) -> None:
    entry = CacheEntry(tmp_path / "ctx")
    entry.ensure(slow_dir_builder([], FILES))
    if damage == "missing_file":
        (entry.path / "Dockerfile").unlink()
    elif damage == "truncated_file":
        (entry.path / "site" / "pkg.py").write_text("x = 1\n")
    else:
        (entry.path / MANIFEST).unlink()
    assert not entry.ready()
    builds: list[str] = []
    assert entry.ensure(slow_dir_builder(builds, FILES)) is True
    assert len(builds) == 1 and complete(entry.path) and entry.ready()
    assert entries_in(tmp_path) == ["ctx"]  # the damaged one is gone, not set aside


def test_an_entry_failing_its_own_check_is_rebuilt(tmp_path: Path) -> None:
    target = tmp_path / "model.gguf"
    target.write_bytes(b"junk")  # a file left by something else
    entry = CacheEntry(target, check=lambda p: p.read_bytes().startswith(b"GGUF"))
    assert not entry.ready()
    assert entry.ensure(lambda p: p.write_bytes(b"GGUF data")) is True
    assert target.read_bytes() == b"GGUF data"


def test_a_builder_that_crashes_leaves_nothing_that_is_read(tmp_path: Path) -> None:
    entry = CacheEntry(tmp_path / "ctx")

    def crash(path: Path) -> None:
        path.mkdir()
        (path / "Dockerfile").write_text("FROM x\n")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        entry.ensure(crash)
    assert entries_in(tmp_path) == []
    assert not entry.ready()
    builds: list[str] = []
    assert entry.ensure(slow_dir_builder(builds, FILES)) is True and complete(entry.path)


def test_a_builder_producing_what_its_check_rejects_is_an_error(tmp_path: Path) -> None:
    entry = CacheEntry(tmp_path / "ctx", check=lambda p: (p / "Dockerfile").is_file())
    with pytest.raises(CacheError, match="incomplete"):
        entry.ensure(lambda p: p.mkdir())
    assert entries_in(tmp_path) == []


# Processes: each script waits until every one has started, then races.


def race(tmp_path: Path, body: str, n: int = 3) -> list[subprocess.CompletedProcess[str]]:
    """Run ``body`` in ``n`` Python processes released at the same moment."""
    gate = tmp_path / "gate"
    gate.mkdir()
    prelude = textwrap.dedent(f"""
        import os, pathlib, time
        gate = pathlib.Path({str(gate)!r})
        (gate / f"ready-{{os.getpid()}}").touch()
        while not (gate / "go").exists():
            time.sleep(0.01)
    """)
    env = {**os.environ, "GEM_EVAL_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    script = prelude + textwrap.dedent(body)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(n)
    ]
    try:
        while len(list(gate.glob("ready-*"))) < n and all(p.poll() is None for p in procs):
            time.sleep(0.01)
        (gate / "go").touch()
        outs = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            p.kill()
    return [
        subprocess.CompletedProcess(p.args, p.returncode, out, err)
        for p, (out, err) in zip(procs, outs, strict=True)
    ]


def test_processes_racing_on_an_empty_cache_build_once_and_all_see_it_whole(
    tmp_path: Path,
) -> None:
    log = tmp_path / "builds.log"
    body = f"""
        import json
        from pathlib import Path
        from gem_eval.cache import CacheEntry, cache_dir

        FILES = {FILES!r}

        def build(path):
            with open({str(log)!r}, "a") as f:
                f.write(f"{{os.getpid()}}\\n")
            path.mkdir()
            for name, text in FILES.items():
                time.sleep(0.2)
                (path / name).parent.mkdir(parents=True, exist_ok=True)
                (path / name).write_text(text)

        entry = CacheEntry(cache_dir("services") / "ctx")
        built = entry.ensure(build)
        whole = all((entry.path / n).read_text() == t for n, t in FILES.items())
        print(json.dumps({{"built": built, "whole": whole}}))
    """
    results = race(tmp_path, body)
    assert [r.returncode for r in results] == [0, 0, 0], [r.stderr for r in results]
    reports = [json.loads(r.stdout) for r in results]
    assert len(log.read_text().split()) == 1
    assert sorted(r["built"] for r in reports) == [False, False, True]
    assert all(r["whole"] for r in reports)


def test_a_killed_builder_leaves_nothing_read_and_its_leftovers_are_swept(
    tmp_path: Path,
) -> None:
    body = """
        from gem_eval.cache import CacheEntry, cache_dir

        def build(path):
            path.mkdir()
            (path / "Dockerfile").write_text("FROM x\\n")
            os._exit(9)  # killed mid-build: no cleanup runs

        CacheEntry(cache_dir("services") / "ctx").ensure(build)
    """
    [killed] = race(tmp_path, body, n=1)
    assert killed.returncode == 9
    services = tmp_path / "cache" / "services"
    [leftover] = entries_in(services)
    assert leftover.startswith(".ctx.") and leftover.endswith(".tmp")
    entry = CacheEntry(services / "ctx")
    assert not entry.ready()
    assert entry.ensure(slow_dir_builder([], FILES)) is True
    assert complete(entry.path) and entries_in(services) == ["ctx"]
