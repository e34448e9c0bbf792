"""The integrity audit: the verifier's toolchain is as the image made it, or the episode
is ``tampered``.

Before the agent's first command, :func:`baseline` reads the container's clock and
what the test run relies on (:mod:`~gem_eval.envs.terminal.toolchain`: every path under
it, kept host-side). Before grading, once the agent's processes are gone, :func:`check`

1. asks Docker (from outside the container) which processes run: one the kill missed
   (the agent replaced the shell that kills them) voids the grade;
2. writes the image's GNU ``find`` and ``timeout``, their loader and libraries, as
   read through Docker from the pristine container, to a fresh directory of a random
   name (through Docker too), with ``/etc/ld.so.preload`` checked unchanged: the
   listing runs through the copied loader, so nothing the agent wrote is executed;
3. lists every path under the toolchain with its change time (ctime). The kernel sets
   a file's ctime on every write, rename, link or mode change, and no process can set
   it back (that takes the clock: ``CAP_SYS_TIME``, which containers lack): an edit
   with its size and mtime restored still shows. Docker's own change list compares
   size and mtime only, so it is the fallback for images without GNU ``find``;
4. asks the copied loader (``ld.so --list``, run by the copied ``find``) which file it
   now finds for each library of each toolchain program: one that differs from the
   pristine container's (an ``ldconfig`` put a library of the same name first) voids the
   grade. The grader's own steps before the tests (``sh``, ``timeout``, ``mkdir``, ...)
   are not traced, so nothing of the agent's may load in them.

A change, addition or removal under a sealed path is tampering. Site directories are
treated apart, since installing a package is ordinary work: a new top-level package
there is allowed unless it is a start-up hook (``*.pth``, ``sitecustomize``,
``usercustomize``), takes the name of a module that was importable before (shadowing
it), or registers a pytest plugin (a ``pytest11`` entry point). Byte-code caches are
ignored; the verifier never reads them (``PYTHONPYCACHEPREFIX``).

Changes under the loader's cache and configuration (``/etc/ld.so.cache``,
``ld.so.conf``, ``ld.so.conf.d``: ``ldconfig``, which every ``apt-get install`` of a
library runs) are noted, not tampering: what they change for the toolchain is step 4,
and what the tests then load is traced (:mod:`~gem_eval.envs.terminal.tracer`, judged by
:mod:`~gem_eval.envs.terminal.loads`).

A task whose work is to change the toolchain (install into the system Python, edit
``/root/.bashrc``) declares it: ``audit = false`` or ``audit_exclude = [paths]``.
"""

from __future__ import annotations

import asyncio
import hashlib
import posixpath
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gem_eval.envs.terminal import toolchain as probing
from gem_eval.envs.terminal.layout import TerminalTask
from gem_eval.envs.terminal.toolchain import Toolchain
from gem_eval.errors import SandboxError, TamperError
from gem_eval.sandbox.base import Sandbox
from gem_eval.sandbox.static_program import put_programs

LISTING_TIMEOUT_S = 120
WORK_PREFIX = "/tmp/gem-eval-audit-"
"""The audit's fresh directory (a random name follows)."""
_HOOKS = frozenset({"sitecustomize", "usercustomize"})
_KINDS = {0: "changed", 1: "added", 2: "removed"}
# Variables the loader or libc would act on, cleared for the audit's own programs.
_CLEAN = {"LD_PRELOAD": "", "LD_LIBRARY_PATH": "", "LD_AUDIT": "", "LC_ALL": "C"}


@dataclass
class Baseline:
    """The container before the agent's first command.

    Attributes:
        toolchain: What the test run relies on.
        since: The container's clock then (a ctime after it: changed since).
        processes: Host PIDs of the sandbox's own processes (``None``: unknown).
    """

    toolchain: Toolchain
    since: float
    processes: set[int] | None


def _container(sandbox: Sandbox) -> Any:
    """The Docker container behind ``sandbox`` (``None`` for other sandboxes): the
    audit reads it from outside, where the agent cannot reach."""
    return getattr(sandbox, "container", None)


async def _host_pids(sandbox: Sandbox) -> dict[int, str] | None:
    """The container's processes as Docker sees them: host PID -> command."""
    from gem_eval.sandbox import docker_client

    container = _container(sandbox)
    if container is None:
        return None
    top = await docker_client.call("listing the container's processes", container.top)
    titles = top.get("Titles") or []
    pid, cmd = titles.index("PID"), titles.index("CMD")
    return {int(row[pid]): str(row[cmd]) for row in top.get("Processes") or []}


async def own_processes(sandbox: Sandbox) -> set[int] | None:
    """Host PIDs of the sandbox's own processes (take them before anything else starts
    in it: the agent's shell included)."""
    pids = await _host_pids(sandbox)
    return None if pids is None else set(pids)


async def baseline(sandbox: Sandbox, task: TerminalTask, processes: set[int] | None) -> Baseline:
    """Record the pristine container (see the module docstring); ``processes`` are
    :func:`own_processes`."""
    clock = await sandbox.run_root("date +%s.%N 2>/dev/null || date +%s", "reading the clock")
    try:
        since = float(clock.split()[0])
    except (IndexError, ValueError):  # a date without %N prints it literally
        since = float(clock.split(".")[0])
    return Baseline(await probing.probe(sandbox, task), since, processes)


def _ancestry(path: str) -> list[str]:
    """``path`` and each directory above it, nearest first (``/a/b``: ``/a/b``, ``/a``)."""
    chain = [path]
    while path not in ("/", ""):
        path = posixpath.dirname(path)
        if path != "/":
            chain.append(path)
    return chain


def _module(name: str) -> str:
    return name.split(".")[0] if name.endswith((".py", ".so", ".pyc", ".pyd", ".pth")) else name


def changes(
    before: Iterable[str], after: dict[str, tuple[str, float, str]], since: float
) -> list[dict[str, Any]]:
    """Two listings as a change list (``[{"Path": p, "Kind": 0|1|2}]``: changed, added,
    removed). A file or link is changed when its ctime is later than ``since``; a
    directory, when its type changed (what was added or removed in it is listed)."""
    old = set(before)
    entries = [{"Path": p, "Kind": 1} for p in after if p not in old]
    entries += [{"Path": p, "Kind": 2} for p in old if p not in after]
    for path, (kind, ctime, _) in after.items():
        if path in old and kind != "d" and ctime > since:
            entries.append({"Path": path, "Kind": 0})
    return entries


def findings(
    entries: list[dict[str, Any]], toolchain: Toolchain, exclude: Iterable[str] = ()
) -> tuple[list[str], list[str]]:
    """The audit's verdict on a change list (``[{"Path": ..., "Kind": 0|1|2}]``,
    changed, added, removed): the tampered paths (``changed /x``, ``added /y``,
    ``removed /z``), and the new metadata directories in site directories whose entry
    points must still be read (a pytest plugin is not allowed).

    Linear in the number of changes (an agent may have written a million files)."""
    kinds = {posixpath.normpath(str(e["Path"])): int(e["Kind"]) for e in entries}
    parents = {a for path in kinds for a in _ancestry(path)[1:]}
    excluded = {posixpath.normpath(p) for p in exclude}
    roots = toolchain.sealed | toolchain.sites
    above_roots = {a for root in roots for a in _ancestry(root)[1:]}
    tampered: set[str] = set()
    metadata: set[str] = set()
    for path, kind in kinds.items():
        chain = _ancestry(path)
        if "__pycache__" in path.split("/") or excluded.intersection(chain):
            continue
        if path in parents:
            continue  # a directory: the entries below it say what changed
        root = next((r for r in chain if r in roots), None)
        if root is None:
            if kind == 2 and path in above_roots:  # removing a directory removes its roots
                tampered.add(f"removed {path}")
            continue
        if root in toolchain.sites:
            if path == root:
                if kind == 2:
                    tampered.add(f"removed {path}")
                continue
            top = chain[chain.index(root) - 1]
            if kinds.get(top) == 1:  # a new top-level entry: a package being installed
                name = posixpath.basename(top)
                module = _module(name)
                if name.endswith(".pth") or module in _HOOKS or module in toolchain.modules:
                    tampered.add(f"added {top}")
                elif name.endswith((".dist-info", ".egg-info")):
                    metadata.add(top)
                continue
        tampered.add(f"{_KINDS.get(kind, 'changed')} {path}")
    return sorted(tampered), sorted(metadata)


def noted(entries: list[dict[str, Any]], toolchain: Toolchain) -> list[str]:
    """What changed under the toolchain's noted paths (``changed /etc/ld.so.cache``)."""
    found = set()
    for entry in entries:
        path = posixpath.normpath(str(entry["Path"]))
        if "__pycache__" not in path and any(a in toolchain.noted for a in _ancestry(path)):
            found.add(f"{_KINDS.get(int(entry['Kind']), 'changed')} {path}")
    return sorted(found)


async def _survivors(sandbox: Sandbox, base: Baseline) -> list[str]:
    """Processes still running that were not the sandbox's own (zombies aside); a
    process just killed may take a moment to go, so it is asked again for ~2 s."""
    if base.processes is None:
        return []
    found: list[str] = []
    for _ in range(10):
        now = await _host_pids(sandbox) or {}
        found = [
            cmd
            for pid, cmd in sorted(now.items())
            if pid not in base.processes and "<defunct>" not in cmd
        ]
        if not found:
            break
        await asyncio.sleep(0.2)
    return found


async def untraced(sandbox: Sandbox, base: Baseline) -> list[str]:
    """Processes left after a traced test run that were not the sandbox's own: the trace
    ends every process it followed, so one that is left was never followed (started
    outside it)."""
    return await _survivors(sandbox, base)


async def _preload_unchanged(sandbox: Sandbox, toolchain: Toolchain) -> None:
    """``/etc/ld.so.preload`` is as the image had it (the loader reads it, even ours).

    Raises:
        TamperError: It changed.
    """
    assert toolchain.checker is not None
    try:
        data: bytes | None = await sandbox.read_file("/etc/ld.so.preload")
    except (FileNotFoundError, IsADirectoryError):
        data = None
    if (None if data is None else hashlib.sha256(data).hexdigest()) != toolchain.checker.preload:
        raise TamperError(["changed /etc/ld.so.preload"])


async def _listing(sandbox: Sandbox, toolchain: Toolchain) -> dict[str, tuple[str, float, str]]:
    """List the toolchain with verified copies of the image's ``find`` (see the module
    docstring), from a fresh directory no process of the agent's can know."""

    container = _container(sandbox)
    if container is None:
        raise SandboxError("the integrity audit needs a Docker container")
    assert toolchain.checker is not None
    await _preload_unchanged(sandbox, toolchain)
    files = toolchain.checker.files
    work = f"{WORK_PREFIX}{uuid.uuid4().hex}"
    await put_programs(container, work, files, "writing the audit's programs")

    def run(program: str) -> list[str]:
        if "ld.so" not in files:  # static programs
            return [f"{work}/{program}"]
        return [f"{work}/ld.so", "--inhibit-cache", "--library-path", work, f"{work}/{program}"]

    out = f"{work}/listing"
    stop = [*run("timeout"), "-k", "2", str(LISTING_TIMEOUT_S)]
    argv = [*stop, *probing.listing_command(run("find"), toolchain.roots, out)]
    # No `timeout` by name in front (sandbox.exec would add one): the copy bounds it.
    result = await sandbox.exec(argv, timeout=None, user="root", cwd="/", env=_CLEAN)
    if result.exit_code not in (0, 1):  # 1: some roots do not exist
        raise SandboxError(f"the audit's listing failed: {(result.stderr or '').strip()[-300:]}")
    if "ld.so" in files and toolchain.links:
        await _links_unchanged(sandbox, toolchain, [*stop, *run("find")], f"{work}/ld.so")
    # The grader removes the directory with its other leftovers (see grader.run_tests).
    return probing.parse_listing(await sandbox.read_file(out))


async def _links_unchanged(
    sandbox: Sandbox, toolchain: Toolchain, find: list[str], loader: str
) -> None:
    """The toolchain's programs (the grader's own ``sh``, ``timeout``, ``mkdir`` among
    them, which run before the tests, untraced) load the files they loaded in the pristine
    container: asked of the audit's copy of the loader (``--list``), which reads the
    loader's cache and configuration as they are now (an ``ldconfig`` may have put a
    library before theirs).

    Raises:
        TamperError: One of them would load another file.
    """
    tools = sorted({line.split(" ")[0] for line in toolchain.links})
    argv = [*find, *tools, "-maxdepth", "0", "-printf", "@@ %p\n"]
    argv += ["-exec", loader, "--list", "{}", ";"]
    result = await sandbox.exec(argv, timeout=None, user="root", cwd="/", env=_CLEAN)
    now: set[str] = set()
    tool = ""
    for line in result.stdout.splitlines():
        if line.startswith("@@ "):
            tool = line[3:]
        elif "=>" in line and tool:
            soname, _, rest = line.strip().partition(" => ")
            now.add(f"{tool} {soname} {rest.rsplit(' (', 1)[0]}")
    moved = sorted(
        f"the loader now finds {line.split(' ')[1]} for {line.split(' ')[0]} elsewhere"
        for line in toolchain.links - now
    )
    if moved:
        raise TamperError(moved)


async def _change_list(sandbox: Sandbox) -> list[dict[str, Any]]:
    """Docker's change list (the fallback: it compares size and mtime, not content)."""
    from gem_eval.sandbox import docker_client

    container = _container(sandbox)
    if container is None:
        raise SandboxError("the integrity audit needs a Docker container")
    return list(await docker_client.call("listing the container's changes", container.diff))


async def check(
    sandbox: Sandbox,
    base: Baseline,
    exclude: Iterable[str] = (),
    stopped: bool = True,
    notes: list[str] | None = None,
) -> str:
    """Audit the container after the agent's processes were stopped (``stopped=False``:
    a task that keeps them, whose processes are then not looked for); how it was
    checked (``"ctime"``, or ``"change list"`` for an image without GNU ``find``).
    ``notes`` gets what changed under the noted paths.

    Raises:
        TamperError: The toolchain changed (each path with what happened to it), or a
            process of the agent's outlived the kill.
        SandboxError: The sandbox is not a Docker container, or the listing failed.
    """
    survivors = await _survivors(sandbox, base) if stopped else []
    if survivors:
        raise TamperError([f"a process outlived the kill: {cmd}" for cmd in survivors])
    toolchain = base.toolchain
    if toolchain.checker is not None and toolchain.listing:
        entries = changes(toolchain.listing, await _listing(sandbox, toolchain), base.since)
        how = "ctime"
    else:
        entries, how = await _change_list(sandbox), "change list"
    tampered, metadata = findings(entries, toolchain, exclude)
    if notes is not None:
        notes.extend(noted(entries, toolchain))
    for directory in metadata:
        try:
            text = (await sandbox.read_file(f"{directory}/entry_points.txt")).decode(
                errors="replace"
            )
        except (FileNotFoundError, IsADirectoryError):
            continue
        if re.search(r"^\s*\[pytest11\]", text, re.MULTILINE):
            tampered.append(f"added {directory} (a pytest plugin)")
    if tampered:
        raise TamperError(sorted(tampered))
    return how
