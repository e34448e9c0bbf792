"""Running a program against its tests in a sandbox, in one sandbox command.

On the host, :func:`run_tests` hands a :class:`TestJob` to
:mod:`gem_eval.envs.code.harness` running in the sandbox (``python3 -I -c <its source>
JOB|-``), which runs the tests and prints one report line.

How a run defends itself against the program it tests:

* The job (program, tests, expected outputs, a random nonce; ``marshal`` data) never
  sits where the program can read it. Under Docker it is written to
  ``/tmp/.gem-tests-<random>``, root-owned with mode 0600, and the runner runs as root,
  checks it against the SHA-256 on its command line and deletes it; the program runs as
  the sandbox user. Under bubblewrap, where everything has one uid and shares ``/tmp``,
  the job goes through the runner's stdin, and the runner makes itself non-dumpable (no
  reading its memory through ``/proc``).
* Candidate processes get their own session, a scratch directory, a clean environment,
  rlimits (core, file size, CPU, address space) and, under Docker, the sandbox user.
  Each case has a wall-clock ``timeout_s``; a process that overruns it, dies or floods
  its report pipe is killed with its whole process group.
* Function tests: a forked child (stdio on ``/dev/null``) runs the program, then the
  test steps, and reports each case as ``<nonce> pass|fail <case>`` on a private pipe;
  only those lines count. So printing "PASS", ``exit(0)`` or ``os._exit(0)`` before the
  tests, segfaults and endless loops earn nothing. After a timeout or a crash a fresh
  child resumes at the next case.
* Stdin/stdout tests: each case runs ``python3 -I solution.py`` with the input on stdin;
  the output must match (:func:`outputs_match`) and the exit status be 0.

Out of scope, as in HumanEval's own harness: code that digs the nonce or the tests out of
its own interpreter's memory, tampers with frames (``sys.settrace``), or returns objects
that compare equal to everything.
"""

from __future__ import annotations

import marshal
import time
from typing import TYPE_CHECKING

from gem_eval.envs.code import harness
from gem_eval.envs.code.harness import _MARSHAL_VERSION, _STARTUP_S, _TAMPERED, outputs_match

if TYPE_CHECKING:
    from gem_eval.sandbox.base import Sandbox

__all__ = ["TestJob", "TestReport", "outputs_match", "run_tests"]


class TestJob:
    """A program and its tests.

    Args:
        mode: ``"function"`` (test code run in the program's namespace) or ``"stdio"``.
        program: The candidate's Python source.
        steps: Function mode: ``(code, case, setup)`` in run order (see
            :func:`gem_eval.envs.code.extract.split_tests`).
        cases: Stdio mode: ``(input, expected output)`` pairs.
        timeout_s: Wall-clock seconds per case (and for loading the program).
        total_s: Seconds for the whole run; cases not reached by then fail.
        memory_mb: Address-space limit of candidate processes (``None``: the sandbox's).
        fail_fast: Stop at the first failing case (the rest fail without running).
    """

    __test__ = False  # not a pytest class

    def __init__(
        self,
        mode: str,
        program: str,
        *,
        steps: list[tuple[str, int, bool]] | None = None,
        cases: list[tuple[str, str]] | None = None,
        timeout_s: float = 5.0,
        total_s: float = 60.0,
        memory_mb: int | None = 1024,
        fail_fast: bool = False,
    ) -> None:
        if mode not in ("function", "stdio"):
            raise ValueError(f"mode must be 'function' or 'stdio', not {mode!r}")
        self.mode, self.program = mode, program
        self.steps, self.cases = list(steps or []), list(cases or [])
        self.timeout_s, self.total_s = timeout_s, total_s
        self.memory_mb, self.fail_fast = memory_mb, fail_fast

    @property
    def total(self) -> int:
        """The number of cases."""
        if self.mode == "stdio":
            return len(self.cases)
        return max((case for _, case, _ in self.steps), default=-1) + 1

    def payload(self, nonce: str, user: str) -> bytes:
        """The job file's bytes."""
        data = {**vars(self), "nonce": nonce, "user": user, "total": self.total}
        return marshal.dumps(data, _MARSHAL_VERSION)


class TestReport:
    """How a program did.

    Args:
        results: Per case, whether it passed.
        messages: Per case, why it failed (``""`` when it passed, and past the first
            few failures).
        elapsed_s: Seconds the whole run took, seen from the host.
    """

    __test__ = False  # not a pytest class

    def __init__(self, results: list[bool], messages: list[str], elapsed_s: float = 0.0):
        self.results, self.messages, self.elapsed_s = results, messages, elapsed_s

    @property
    def passed(self) -> int:
        return sum(self.results)

    @property
    def total(self) -> int:
        return len(self.results)

    @property
    def fraction(self) -> float:
        return self.passed / self.total if self.total else 0.0

    @property
    def all_passed(self) -> bool:
        return bool(self.results) and all(self.results)

    @property
    def first_failure(self) -> tuple[int, str] | None:
        """``(case, message)`` of the first failing case."""
        for index, ok in enumerate(self.results):
            if not ok:
                return index, self.messages[index]
        return None

    @classmethod
    def failed(cls, total: int, message: str, elapsed_s: float = 0.0) -> TestReport:
        """Every case failed for one reason."""
        return cls([False] * total, [message] * total, elapsed_s)

    def __repr__(self) -> str:
        return f"TestReport(passed={self.passed}/{self.total}, {self.first_failure})"


async def run_tests(sandbox: Sandbox, job: TestJob, *, python: str = "python3") -> TestReport:
    """Run ``job`` in ``sandbox``; a program's failures are results, never exceptions.

    Docker (any sandbox but a local one): the job is written root-only and the runner
    runs as root. A local (bubblewrap) sandbox has one uid and a ``/tmp`` shared by
    everything running in it, so the job goes to the runner through a pipe instead and
    never touches the disk.

    Raises:
        SandboxError: The sandbox failed, or the runner itself could not run (no
            ``python`` in the image): an infrastructure failure, not the program's.
    """
    import secrets

    from gem_eval.sandbox.local import LocalSandbox

    began = time.monotonic()
    nonce = secrets.token_hex(16)
    if isinstance(sandbox, LocalSandbox):
        payload = job.payload(nonce, "")
        output, code = await _run_piped(sandbox, [python, "-I", "-c", _source(), "-"], payload, job)
    else:
        output, code = await _run_from_file(sandbox, python, job.payload(nonce, sandbox.user), job)
    elapsed = time.monotonic() - began
    report = _parse(output, nonce, job.total)
    if report is not None:
        report.elapsed_s = elapsed
        return report
    if code == "timeout":
        return TestReport.failed(job.total, f"the tests ran past {job.total_s:g} s", elapsed)
    if code == "tampered":
        return TestReport.failed(job.total, "the test job was changed before it ran", elapsed)
    if code == "killed":  # out of memory, or by the program (bubblewrap: one uid)
        return TestReport.failed(job.total, "the test runner was killed", elapsed)
    from gem_eval.errors import SandboxError

    detail = " | ".join(output.strip().splitlines()[-3:])
    raise SandboxError(f"the test runner failed ({code}): {detail}")


async def _run_from_file(
    sandbox: Sandbox, python: str, payload: bytes, job: TestJob
) -> tuple[str, str]:
    """Write the job root-only and run the runner as root: ``(output, how it ended)``."""
    import hashlib
    import secrets

    path = f"/tmp/.gem-tests-{secrets.token_hex(8)}"
    await sandbox.write_file(path, payload, mode=0o600, owner="root")
    argv = [python, "-I", "-c", _source(), path, hashlib.sha256(payload).hexdigest()]
    timeout = job.total_s + _STARTUP_S
    result = await sandbox.exec(argv, timeout=timeout, user="root", cwd="/tmp")
    code = result.exit_code
    if result.timed_out:
        how = "timeout"
    elif code == _TAMPERED:
        how = "tampered"
    elif code is None or code < 0 or code >= 128:
        how = "killed"
    else:
        how = f"exit code {code}"
    if how.startswith("exit code") and code != 0:
        await sandbox.exec(["rm", "-f", path], timeout=30, user="root")  # it may not have
    return result.stdout + result.stderr, how


async def _run_piped(
    sandbox: Sandbox, argv: list[str], payload: bytes, job: TestJob
) -> tuple[str, str]:
    """Start the runner and hand it the job on stdin: ``(output, how it ended)``. The
    runner prints nothing but its report, so silence means it was killed."""
    import asyncio

    process = await sandbox.spawn(argv, cwd="/tmp")
    output = bytearray()
    how = "ended"

    async def talk() -> None:
        await process.write(b"%d\n" % len(payload) + payload)
        while chunk := await process.read():
            if len(output) < (1 << 20):
                output.extend(chunk)

    try:
        await asyncio.wait_for(talk(), job.total_s + _STARTUP_S)
    except asyncio.TimeoutError:
        how = "timeout"
    except OSError:  # the runner died before it read the job
        how = "killed"
    finally:
        await process.kill()
    text = output.decode("utf-8", "replace")
    return text, how if how != "ended" or text.strip() else "killed"


_SOURCE: list[str] = []


def _source() -> str:
    """The harness's source, as the sandbox runs it."""
    if not _SOURCE:
        from pathlib import Path

        _SOURCE.append(Path(harness.__file__).read_text(encoding="utf-8"))
    return _SOURCE[0]


def _parse(stdout: str, nonce: str, total: int) -> TestReport | None:
    """The report line the runner printed (a Python literal after the nonce)."""
    import ast

    for line in stdout.splitlines():
        if line.startswith(nonce + " "):
            try:
                rows = ast.literal_eval(line[len(nonce) + 1 :])
                results = [bool(ok) for ok, _ in rows]
                messages = [str(message) for _, message in rows]
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                return None
            return TestReport(results, messages) if len(results) == total else None
    return None
