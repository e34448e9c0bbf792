"""The verdict on what the test run loaded: nothing it executed or loaded as code may be
the agent's, unless it is the agent's work.

:mod:`~gem_eval.envs.terminal.tracer` reports each file the agent wrote that the test run
used. :func:`judge` reads each line so:

* **data** (a file opened for reading that is no code: not an ELF, not a ``#!`` script,
  no code suffix, not a script a shell read at its start-up) is the tests' subject:
  allowed (a shell opens what it runs or sources without ``O_CLOEXEC``; libc and the
  loader open their files, ``/etc/passwd`` or ``ld.so.cache``, with it);
* **the work product**: the work directory and the task's ``audit_exclude`` paths are the
  agent's to write and the tests' to run; only a module at the work directory's top whose
  name is one the image's Python could import (it takes that module's place for a
  ``python -m pytest`` started there) is tampering. A file the task's instruction or
  tests name by its path (or lying in a directory they name that is no search
  directory: not on ``PATH``, not the loader's, not Python's) is the work product too,
  unless it is new and takes the place of something the image had;
* **a file the image had** (asked of the image itself, from a container created from it):
  the same content (a mode or owner changed) is noted; other content is tampering;
* **a new file** is tampering when it takes the place of a program, library or module the
  image had (the same name), or when a process loaded it at its start-up, before it read
  the tests or the work directory (an interpreter's start-up hook, a shell's start-up
  file), unless the process already runs code of the agent's; a new shared library must
  be asked for by code of the agent's (a new program, a new package's extension: then it
  is that code's own), not by the image's own code (a preload, the loader's
  configuration, a plugin scan); a program is tampering when nothing that had read the
  tests ran it. Otherwise it is software the agent installed that the tests asked for by
  its name: noted.
* **a new package in a site directory** follows the audit's rule (not a start-up hook,
  not a module that was importable, no pytest plugin) and must be imported after the
  process read the tests or the work directory (Debian's ``sitecustomize`` imports
  ``apport_python_hook`` in every Python when it exists).

A trace that was cut, or a process it could not follow, is tampering too: what was not
seen cannot be vouched for.
"""

from __future__ import annotations

import hashlib
import io
import posixpath
import re
import tarfile
from collections.abc import Iterable
from typing import Any

from gem_eval.envs.terminal.layout import TerminalTask
from gem_eval.envs.terminal.toolchain import Toolchain
from gem_eval.envs.terminal.tracer import Finding, Report
from gem_eval.sandbox.base import Sandbox

HOOKS = frozenset({"sitecustomize", "usercustomize"})
CODE = re.compile(
    r"\.(py|pyc|pyo|pyd|pth|_pth|so|zip|egg|whl|sh|bash|pl|pm|rb|js|mjs|cjs|node|lua|php"
    r"|tcl|jar|class)$|\.so(\.[0-9]+)+$|^pyvenv\.cfg$"
)
LOADER_DIRS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib")
_MENTION = re.compile(r"(?<![\w.~$-])(/[A-Za-z0-9_.+@%-]+(?:/[A-Za-z0-9_.+@%-]+)*)")
_DIR_BIT = 1 << 31  # Go's os.ModeDir in Docker's archive stat
_PRISTINE: dict[tuple[str, str], tuple[str, str] | None] = {}
Entry = tuple[str, str] | None
"""``("file", sha256)``, ``("link", target)``, ``("dir", "")``, or ``None`` (absent)."""


def _inside(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _module(name: str) -> str:
    return name.split(".")[0]


def is_code(finding: Finding) -> bool:
    """Whether a file the test run opened is code (see the module docstring)."""
    if finding.kind != "o":
        return True
    flags = finding.flags
    started = "b" in flags or "n" in flags
    return (
        "E" in flags
        or "H" in flags
        or bool(CODE.search(posixpath.basename(finding.path)))
        or ("S" in flags and "X" not in flags and not started)
    )


class Declared:
    """The paths a task names in its instruction and tests (its work product)."""

    def __init__(self, task: TerminalTask, toolchain: Toolchain) -> None:
        texts = [task.instruction]
        if task.tests is not None and task.tests.is_dir():
            texts += [p.read_text(errors="replace") for p in sorted(task.tests.rglob("*"))
                      if p.is_file() and p.stat().st_size < 1_000_000]  # fmt: skip
        found = (m.rstrip(".") for t in texts for m in _MENTION.findall(t))
        self.named = {posixpath.normpath(m) for m in found if m}
        paths = toolchain.environ.get("PATH", "").split(":")
        searched = {*paths, *LOADER_DIRS, *toolchain.sites, *toolchain.sealed}
        # A named directory vouches for what lies in it unless a search would look there.
        self.dirs = [
            d
            for d in self.named
            if d.count("/") >= 2 and not any(_inside(s, [d]) for s in searched if s)
        ]

    def __contains__(self, path: str) -> bool:
        return path in self.named or _inside(path, self.dirs)


async def _entry(container: Any, path: str) -> Entry:
    """What ``path`` is in ``container`` (read through the engine)."""
    from gem_eval.errors import SandboxError
    from gem_eval.sandbox import docker_client

    try:
        chunks, stat = await docker_client.call(f"reading {path}", container.get_archive, path)
    except SandboxError as exc:
        if "gone" in str(exc) or "No such" in str(exc) or "not found" in str(exc).lower():
            return None
        raise
    if int(stat.get("mode", 0)) & _DIR_BIT:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()
        return ("dir", "")
    data = await docker_client.call(f"reading {path}", lambda: b"".join(chunks))
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        member = tar.next()
        if member is None:
            return None
        if member.issym():
            return ("link", member.linkname)
        extracted = tar.extractfile(member)
        return ("file", hashlib.sha256(extracted.read() if extracted else b"").hexdigest())


class Pristine:
    """The image's own files, read from a container created (never started) from it;
    kept per image and path."""

    def __init__(self, image: str) -> None:
        self.image = image
        self._container: Any = None

    async def entry(self, path: str) -> Entry:
        key = (self.image, path)
        if key not in _PRISTINE:
            from gem_eval.sandbox import cleanup, docker_client

            if self._container is None:
                self._container = await docker_client.call(
                    "reading the image's files",
                    docker_client.client().containers.create,
                    self.image,
                    command=["true"],
                    labels=cleanup.labels(None),
                )
                cleanup.track(self._container.id)
            _PRISTINE[key] = await _entry(self._container, path)
        return _PRISTINE[key]

    async def close(self) -> None:
        if self._container is not None:
            from gem_eval.sandbox import cleanup, docker_client

            container, self._container = self._container, None
            await docker_client.call("removing the image's reader", container.remove, force=True)
            cleanup.untrack(container.id)


def _shadowed(finding: Finding, toolchain: Toolchain) -> str | None:
    """The name of the image's program, library or module this new file takes the place
    of, if any."""
    name = posixpath.basename(finding.path)
    if finding.kind in ("x", "i", "e") and name in toolchain.programs:
        return name
    if finding.kind in ("l", "o", "s") and name in toolchain.libraries:
        return name
    if finding.kind == "s" and name in toolchain.programs:
        return name
    if finding.kind in ("o", "s") and CODE.search(name) and _module(name) in toolchain.modules:
        return _module(name)
    return None


def _new_file(finding: Finding, toolchain: Toolchain) -> str | None:
    """Why a file the image did not have is tampering (``None``: installed software)."""
    shadowed = _shadowed(finding, toolchain)
    if shadowed is not None:
        return f"added {finding.path} (in place of the image's {shadowed})"
    flags = finding.flags
    if finding.kind in ("x", "i", "e", "l") and not ({"a", "b"} & set(flags)):
        return f"added {finding.path} (run before the tests began)"
    if finding.kind == "o" and "E" in flags and "n" not in flags:
        # A library no code of the agent's asked for: preloaded, configured, or found by
        # a plugin scan of the image's own code (a new program's libraries are its own).
        return f"added {finding.path} (a library loaded by the image's own code)"
    if finding.kind == "o" and not ({"b", "n"} & set(flags)):
        return f"added {finding.path} (loaded at a program's start-up)"
    return None


def _site_entry(finding: Finding, toolchain: Toolchain) -> str | None:
    """Why a site directory's entry is tampering (``None``: an installed package)."""
    if "D" in finding.flags:
        return None  # its metadata, read by every importlib.metadata scan
    top, name = finding.path, posixpath.basename(finding.path)
    if top in toolchain.listing:
        return f"changed {finding.extra} (in {top}, which the image had)"
    if name.endswith(".pth") or _module(name) in HOOKS:
        return f"added {top} (a start-up hook)"
    if _module(name) in toolchain.modules:
        return f"added {top} (in place of the module {_module(name)})"
    if not ({"b", "n"} & set(finding.flags)):
        return f"added {top} (imported at a program's start-up)"
    return None


async def judge(
    report: Report, toolchain: Toolchain, task: TerminalTask, sandbox: Sandbox
) -> tuple[list[str], list[str]]:
    """The tampered paths and the notes (see the module docstring)."""
    tampered: set[str] = set()
    notes: set[str] = set()
    if report.untraced:
        return [], [f"not traced: {report.untraced}"]
    for failure in report.failures:
        tampered.add(f"the trace could not follow a process ({failure})")
    if report.cut:
        tampered.add("the trace was cut (too many files the agent wrote, or stopped)")
    excluded = [posixpath.normpath(p) for p in task.audit_exclude]
    workdir = task.workdir.rstrip("/") or "/"
    declared = Declared(task, toolchain)
    image = str(getattr(sandbox, "image", "") or "")
    pristine = Pristine(image)
    try:
        for finding in report.findings:
            if _inside(finding.path, excluded):
                continue
            if finding.kind == "p":
                found = _site_entry(finding, toolchain)
            elif _inside(finding.path, [workdir]):
                module = _module(finding.path[len(workdir) :].strip("/").split("/")[0])
                found = None
                if module in toolchain.modules:
                    found = f"added {finding.path} (in place of the module {module})"
            elif not is_code(finding):
                found = None
            else:
                named = finding.path in declared
                found = await _file(finding, toolchain, sandbox, pristine, notes, named)
            if found:
                tampered.add(found)
    finally:
        await pristine.close()
    return sorted(tampered), sorted(notes)


async def _file(
    finding: Finding,
    toolchain: Toolchain,
    sandbox: Sandbox,
    pristine: Pristine,
    notes: set[str],
    named: bool,
) -> str | None:
    """Why a code file outside the work directory is tampering (``None``: it is not)."""
    container = getattr(sandbox, "container", None)
    before = await pristine.entry(finding.path) if pristine.image else None
    what = {"o": "loaded", "s": "followed"}.get(finding.kind, "ran")
    if before is None or before[0] == "dir":
        shadowed = _shadowed(finding, toolchain)
        why = _new_file(finding, toolchain) if shadowed or not named else None
        if why is None:
            source = "the task names it" if named else "installed by the agent"
            notes.add(f"{what} {finding.path} (new: {source})")
        return why
    if finding.kind == "s":
        now: Entry = ("link", finding.extra)
    else:
        now = await _entry(container, finding.path) if container is not None else None
    if now == before:
        notes.add(f"{what} {finding.path} (its mode or owner changed, not its content)")
        return None
    if named:
        notes.add(f"{what} {finding.path} (changed: the task names it)")
        return None
    return f"changed {finding.path}"
