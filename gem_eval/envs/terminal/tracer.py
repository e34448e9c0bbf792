"""The test run's trace: what the verifier's processes executed and loaded, as it happened.

The integrity audit (:mod:`~gem_eval.envs.terminal.audit`) checks, before the tests run,
a list of paths decided in advance. The trace checks what the test run actually used:
``gem-eval-trace`` (:data:`SOURCE`, a static C program compiled once per machine with the
host's C compiler and cached, as the container's init is) starts the test script under
``ptrace`` with a ``seccomp`` filter that stops only ``open``, ``openat``, ``openat2``,
``execve`` and ``execveat``, follows every process and thread it starts, and writes a
line for each file one of them executed or opened for reading whose ctime falls in the
agent's time (after the baseline, before the trace began): the program and every
symbolic link on the way to it, a script's interpreters, the executable the kernel ran
and its ELF interpreter (both loaded by the kernel, never opened), every file opened,
shared libraries however the loader found them included. Files the test run wrote
itself are newer than its start; the tests, the verifier's own directory and ``/proc``
are not reported, nor the agent's work directory beyond what could take a module's name.

The lines go to the host through the exec's output (the traced processes never hold that
stream) and each is written before the process that opened the file goes on, by a
program no process in the container can trace: code the agent planted cannot take back
the line that names it. :mod:`~gem_eval.envs.terminal.loads` judges them.

When the container refuses ``ptrace`` (a seccomp profile without it) or no binary can be
made (no C compiler or static libc, an engine of another architecture), the tests run
untraced and the record says so (``audit: passed (ctime; not traced: ...)``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path

from gem_eval.errors import SandboxError
from gem_eval.sandbox.base import Sandbox
from gem_eval.sandbox.static_program import StaticProgram, put_programs

SOURCE = Path(__file__).with_name("trace.c")
PREFIX = "/tmp/gem-eval-audit-"
"""The program's fresh directory (a random name follows; the grader's clean-up removes
it with the audit's)."""
LIMIT = 2000
"""Findings written at most (then ``O``)."""
OUTPUT_LIMIT = 4 * 1024 * 1024
"""Bytes of the traced exec's output kept (the findings; a sandbox keeps 64 KiB)."""
_PROGRAM = StaticProgram("gem-eval-trace", SOURCE.read_text(), arches=("amd64", "arm64"))


@dataclass(frozen=True)
class Finding:
    """One line of the trace: a file the agent wrote that the test run used.

    Attributes:
        kind: ``x`` executed, ``i`` a script's interpreter, ``e`` the executable the
            kernel ran, ``l`` its ELF interpreter, ``s`` a symbolic link on the way,
            ``o`` opened for reading, ``p`` under a site directory's top-level entry.
        flags: ``b`` the process had read the tests or the work directory since its
            exec, ``a`` one of its ancestors had, ``n`` it runs a program the agent wrote,
            ``S``/``P`` opened by a shell/a Python, ``E``/``H`` an ELF/a ``#!`` script,
            ``C``/``D`` (site entries) code or data.
        ctime: The file's change time.
        path: The file (``p``: the site entry).
        extra: A link's target; for ``p``, the file opened.
    """

    kind: str
    flags: str
    ctime: float
    path: str
    extra: str = ""


@dataclass
class Report:
    """The trace of one test run.

    Attributes:
        findings: Its lines, in order.
        failures: What it could not follow (``ptrace``: refused, the run was untraced).
        cut: It stopped before the end (more findings than :data:`LIMIT`, output cut,
            or the program killed).
        status: The test script's exit status (``None``: not seen).
    """

    findings: list[Finding] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    cut: bool = False
    status: int | None = None

    @property
    def untraced(self) -> str | None:
        """Why the run was not traced at all (``None``: it was)."""
        refused = [f for f in self.failures if f.split(" ")[0] in ("ptrace", "seccomp")]
        return f"{refused[0].split(' ')[0]} refused" if refused else None


def _unescape(text: str) -> str:
    if "\\x" not in text:
        return text
    raw = bytearray()
    i = 0
    data = text.encode("utf-8", "surrogateescape")
    while i < len(data):
        if data[i : i + 2] == b"\\x" and i + 4 <= len(data):
            raw.append(int(data[i + 2 : i + 4], 16))
            i += 4
        else:
            raw.append(data[i])
            i += 1
    return raw.decode("utf-8", "surrogateescape")


def parse(output: str) -> Report:
    """Read the program's output (a line that is none of its own marks the report cut:
    nothing but the program writes there)."""
    report = Report()
    lines = output.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for line in lines:
        if line.startswith("T "):
            continue
        if line.startswith("R\t"):
            parts = line.split("\t")
            if len(parts) != 6:
                report.cut = True
                continue
            _, kind, flags, ctime, path, extra = parts
            try:
                stamp = float(ctime)
            except ValueError:
                report.cut = True
                continue
            report.findings.append(Finding(kind, flags, stamp, _unescape(path), _unescape(extra)))
        elif line.startswith("F\t"):
            report.failures.append(line[2:])
        elif line.startswith("E "):
            try:
                report.status = int(line[2:])
            except ValueError:
                report.cut = True
        else:  # "O" (too many findings), the cap's note, or anything else
            report.cut = True
    if report.status is None:
        report.cut = True
    return report


@dataclass
class Trace:
    """How one test run is traced.

    Attributes:
        binary: The compiled program.
        since: The container's clock at the baseline (the agent's time begins).
        workdir: The agent's work directory (its work product, the tests' subject).
        tests: Where the tests are (``/tests``).
        quiet: Directories whose files are the verifier's own (never reported).
        sites: Python site directories (reported by top-level entry).
        path: Where the program is in the container (after :meth:`install`).
    """

    binary: bytes
    since: float
    workdir: str
    tests: str
    quiet: list[str]
    sites: list[str]
    path: str = ""

    def place(self) -> str:
        """Choose the program's fresh directory, of a random name (``/tmp/...``); the
        caller puts the program there through the engine (mode 0755, the directory
        root's, 0700), as :meth:`install` does."""
        directory = f"{PREFIX}{uuid.uuid4().hex}"
        self.path = f"{directory}/gem-eval-trace"
        return directory

    async def install(self, sandbox: Sandbox) -> None:
        """Put the program in a fresh directory of a random name, through the engine."""
        container = getattr(sandbox, "container", None)
        if container is None:
            raise SandboxError("tracing the tests needs a Docker container")
        directory = self.place()
        files = {"gem-eval-trace": self.binary}
        await put_programs(container, directory, files, "writing the tracer")

    def command(self, argv: list[str]) -> list[str]:
        """``argv`` run under the program (after :meth:`install`)."""
        assert self.path, "install the tracer first"
        options: list[str] = []
        for directory in [*self.quiet, self.path.rsplit("/", 1)[0]]:
            options += ["-q", directory]
        for site in self.sites:
            options += ["-p", site]
        since = f"{self.since:.9f}"
        return [self.path, since, str(LIMIT), self.workdir, self.tests, *options, "--", *argv]


def binary(engine_os: str, engine_arch: str) -> bytes | None:
    """The compiled program for an engine of that OS and architecture, or ``None`` when
    this machine cannot make one. Compiled once per machine (cached); blocking."""
    return _PROGRAM.binary(engine_os, engine_arch)
