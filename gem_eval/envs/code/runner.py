"""Running a program against its tests in a sandbox, in one sandbox command.

This file is two things. On the host, :func:`run_tests` hands a :class:`TestJob` to this
very file running in the sandbox (``python3 -I -c <this source> JOB|-``). In the
sandbox, :func:`main` runs the tests and prints one report line. So the module imports
only cheap built-in modules at top level (Python 3.9 or newer in the sandbox; each import
saved is milliseconds off every grading).

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
import os
import select
import sys
import time

TYPE_CHECKING = False  # not typing's: importing typing costs the sandbox milliseconds
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from gem_eval.sandbox.base import Sandbox

_STARTUP_S = 10.0
"""Exec timeout beyond the job's own budget (the runner's start and clean-up)."""
_MESSAGES = 20
"""Failure messages kept per run (the rest are empty: the report must stay small)."""
_TAMPERED = 3
"""The runner's exit status when the job file does not match its hash."""
_MARSHAL_VERSION = 4
"""Plain data in this version reads the same on every Python 3.4+."""
_SIGKILL = 9
"""POSIX fixes it; the ``signal`` module would cost the sandbox an ``enum`` import."""
_HOST, _SANDBOX = "# -- the host side --", "# -- the sandbox side --"
"""The markers around the code the sandbox does not need (and need not compile)."""


# -- the host side ------------------------------------------------------------------------


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
    """This file as the sandbox runs it: without the host side."""
    if not _SOURCE:
        from pathlib import Path

        text = Path(__file__).read_text(encoding="utf-8")
        head, _, rest = text.partition("\n" + _HOST)
        _SOURCE.append(head + "\n" + _SANDBOX + rest.partition(_SANDBOX)[2])
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


# -- the sandbox side ---------------------------------------------------------------------


def outputs_match(got: str, expected: str) -> bool:
    """Whether a program's output is the expected one: compared line by line, token by
    token (runs of spaces and tabs, trailing spaces and trailing blank lines ignored)."""
    return _tokens(got) == _tokens(expected)


def _tokens(text: str) -> list[list[str]]:
    lines = [line.split() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _difference(got: str, expected: str) -> str:
    mine_lines, wanted_lines = _tokens(got), _tokens(expected)
    for number in range(max(len(mine_lines), len(wanted_lines))):
        mine = " ".join(mine_lines[number]) if number < len(mine_lines) else "<nothing>"
        want = " ".join(wanted_lines[number]) if number < len(wanted_lines) else "<nothing>"
        if mine != want:
            return f"wrong answer on line {number + 1}: expected {want[:80]!r}, got {mine[:80]!r}"
    return "wrong answer"


def _describe(exc: BaseException) -> str:
    """``Type: message`` of an exception the program raised (its ``str`` may misbehave)."""
    try:
        text = str(exc)
    except BaseException:
        text = "<unprintable>"
    name = type(exc).__name__
    return f"{name}: {text}"[:300] if text else name


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _status(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by {_signal_name(os.WTERMSIG(status))}"
    return f"exited with code {os.WEXITSTATUS(status)}"


class _Runner:
    """Runs one job inside the sandbox."""

    def __init__(self, job: dict[str, Any]) -> None:
        self.job = job
        self.total = int(job["total"])
        self.nonce = str(job["nonce"]).encode()
        self.timeout = float(job["timeout_s"])
        self.deadline = time.monotonic() + float(job["total_s"])
        self.ids = _target_ids(str(job["user"]))
        self.scratch = f"/tmp/.gem-run-{os.urandom(8).hex()}"
        os.mkdir(self.scratch, 0o700)
        if self.ids is not None:
            os.chown(self.scratch, *self.ids)
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "HOME": self.scratch,
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        self.results: list[list[Any] | None] = [None] * self.total
        self.failures = 0

    def run(self) -> list[list[Any]]:
        if self.job["mode"] == "stdio":
            self.run_stdio()
        else:
            self.run_function()
        unrun = "not run: " + (
            "an earlier case failed (fail_fast)"
            if self.failures and self.job["fail_fast"]
            else "the time for the tests ran out"
        )
        return [r if r is not None else [False, unrun] for r in self.results]

    def record(self, case: int, ok: bool, message: str = "") -> None:
        """Set a case's result; once failed, a case stays failed."""
        if not 0 <= case < self.total:
            return
        previous = self.results[case]
        if previous is not None and not previous[0]:
            return
        if not ok:
            self.failures += 1
            message = message if self.failures <= _MESSAGES else ""
        self.results[case] = [ok, "" if ok else message]

    def stop_early(self) -> bool:
        return bool(self.failures and self.job["fail_fast"]) or time.monotonic() >= self.deadline

    def fork(
        self,
        stdio: tuple[int, int, int],
        report: int | None,
        cpu_s: float,
        then: Callable[[], None],
    ) -> int:
        """Fork a candidate process that runs ``then`` and exits: its own session,
        ``stdio`` as fds 0-2 (``report`` as fd 3), nothing else open, rlimits, the scratch
        directory, the sandbox user and a clean environment. Returns its pid."""
        pid = os.fork()
        if pid:
            return pid
        code = 127
        try:  # the child: never returns
            os.setsid()
            for target, fd in enumerate(stdio):
                os.dup2(fd, target)
            if report is not None:
                os.dup2(report, 3)
            os.closerange(3 if report is None else 4, 65536)
            self._limit(cpu_s)
            os.chdir(self.scratch)
            if self.ids is not None:
                os.setgroups([])
                os.setgid(self.ids[1])
                os.setuid(self.ids[0])
            os.environ.clear()
            os.environ.update(self.env)
            then()
            code = 0
        finally:
            os._exit(code)

    def _limit(self, cpu_s: float) -> None:
        import resource

        limits = [
            (resource.RLIMIT_CORE, 0),
            (resource.RLIMIT_FSIZE, 64 * 1024 * 1024),
            (resource.RLIMIT_CPU, int(cpu_s) + 2),
        ]
        if self.job["memory_mb"]:
            limits.append((resource.RLIMIT_AS, int(self.job["memory_mb"]) * 1024 * 1024))
        for which, value in limits:
            hard = resource.getrlimit(which)[1]
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(which, (value, value))

    # -- function tests ---------------------------------------------------------------

    def run_function(self) -> None:
        start = 0
        while start < self.total and not self.stop_early():
            try:
                how, ready = self._function_child(start)
            except OSError as exc:  # no fork: the pids limit, memory
                how, ready = f"could not start: {exc}", False
            pending = [c for c in range(start, self.total) if self.results[c] is None]
            if how == "done" or not pending or self.stop_early():
                break
            if not ready:
                for case in pending:
                    self.record(case, False, f"the program did not load: {how}")
                break
            self.record(pending[0], False, how)
            start = pending[0] + 1

    def _function_child(self, start: int) -> tuple[str, bool]:
        """Run cases from ``start`` in a forked child: ``(how it ended, loaded)``."""
        read, write = os.pipe()
        null = os.open(os.devnull, os.O_RDWR)
        try:
            cpu_s = self.deadline - time.monotonic()
            pid = self.fork((null, null, null), write, cpu_s, lambda: _run_steps(self.job, start))
        except OSError:
            os.close(read)
            raise
        finally:
            os.close(null)
            os.close(write)
        status: int | None = None
        try:
            how, ready, status = self._watch(pid, read)
        finally:
            os.close(read)
            _kill(pid, reaped=status is not None)
            if status is None:
                os.waitpid(pid, 0)
        return how, ready

    def _watch(self, pid: int, fd: int) -> tuple[str, bool, int | None]:
        """Read a child's reports until it is done, dies, or a case runs out of time:
        ``(how it ended, loaded, exit status if reaped)``."""
        tag = self.nonce + b" "
        buffer = b""
        ready = False
        limit = min(time.monotonic() + self.timeout, self.deadline)
        while True:
            now = time.monotonic()
            if now >= limit:
                if now >= self.deadline:
                    return "the time for the tests ran out", ready, None
                return f"timed out after {self.timeout:g} s", ready, None
            readable, _, _ = select.select([fd], [], [], min(limit - now, 0.1))
            if not readable:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:  # exited, but a process it started holds the pipe open
                    return _status(status), ready, status
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                ended = _wait(pid, min(limit, time.monotonic() + 1.0))
                if ended is None:
                    return "closed its report pipe", ready, None
                return _status(ended), ready, ended
            buffer += chunk
            if len(buffer) > 1 << 20:
                return "flooded its report pipe", ready, None
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if not line.startswith(tag):
                    continue
                try:
                    kind, case, message = line[len(tag) :].split(b" ")
                    index = int(case)
                    text = bytes.fromhex(message.decode()).decode("utf-8", "replace")
                except ValueError:
                    continue
                limit = min(time.monotonic() + self.timeout, self.deadline)
                if kind == b"ready":
                    ready = True
                elif kind in (b"pass", b"fail"):
                    self.record(index, kind == b"pass", text)
                elif kind == b"load":
                    return f"it raised {text}", False, None
                elif kind == b"done":
                    return "done", True, None

    # -- stdin/stdout tests -----------------------------------------------------------

    def run_stdio(self) -> None:
        path = os.path.join(self.scratch, "solution.py")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with open(fd, "w", encoding="utf-8", errors="surrogatepass") as fh:
            fh.write(self.job["program"])
        if self.ids is not None:
            os.chown(path, *self.ids)
        for index, (given, expected) in enumerate(self.job["cases"]):
            if self.stop_early():
                break
            try:
                ok, message = self._stdio_case(path, str(given), str(expected))
            except OSError as exc:
                ok, message = False, f"could not start the program: {exc}"
            self.record(index, ok, message)

    def _stdio_case(self, path: str, given: str, expected: str) -> tuple[bool, str]:
        timeout = min(self.timeout, self.deadline - time.monotonic())
        pipes = [os.pipe() for _ in range(3)]  # stdin, stdout, stderr
        theirs = (pipes[0][0], pipes[1][1], pipes[2][1])
        argv = [sys.executable, "-I", path]
        try:
            pid = self.fork(theirs, None, timeout, lambda: os.execve(argv[0], argv, self.env))
        except OSError:
            for fd in (pipes[0][1], pipes[1][0], pipes[2][0]):
                os.close(fd)
            raise
        finally:
            for fd in theirs:
                os.close(fd)
        cap = 2 * len(expected.encode("utf-8", "surrogatepass")) + (1 << 20)
        ends = time.monotonic() + timeout
        status: int | None = None
        try:
            out, err, how, status = _communicate(
                pid,
                pipes[0][1],
                pipes[1][0],
                pipes[2][0],
                given.encode("utf-8", "surrogatepass"),
                ends,
                cap,
            )
        finally:
            _kill(pid, reaped=status is not None)
            if status is None:
                os.waitpid(pid, 0)
        if how == "timeout":
            return False, f"time limit exceeded ({timeout:g} s)"
        if how == "overflow":
            return False, f"output limit exceeded ({cap} bytes)"
        if status is None or not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
            why = _status(status) if status is not None else "ended abnormally"
            tail = err.decode("utf-8", "replace").strip().splitlines()[-1:]
            return False, f"runtime error ({why})" + (f": {tail[0][:200]}" if tail else "")
        text = out.decode("utf-8", "replace")
        if outputs_match(text, expected):
            return True, ""
        return False, _difference(text, expected)


def _run_steps(job: dict[str, Any], start: int) -> None:
    """In the child: the program, then the test steps from case ``start``, each case's
    outcome written to fd 3. Everything used after the program has run is bound first,
    so the program cannot swap it."""
    import builtins

    write, run, base = os.write, exec, BaseException
    tag = str(job["nonce"]).encode()
    fail_fast = bool(job["fail_fast"])

    def report(kind: bytes, case: int, message: str = "") -> None:
        text = message.encode("utf-8", "replace").hex().encode()
        write(3, b"%s %s %d %s\n" % (tag, kind, case, text))

    steps = [(compile(c, "<tests>", "exec"), int(n), bool(s)) for c, n, s in job["steps"]]
    namespace: dict[str, Any] = {"__name__": "__solution__", "__builtins__": builtins}
    sys.argv = ["solution.py"]
    try:
        run(compile(job["program"], "solution.py", "exec"), namespace)
    except base as exc:
        report(b"load", -1, _describe(exc))
        return
    report(b"ready", -1)
    broken: dict[int, str] = {}
    for code, case, setup in steps:
        if case < start:
            if setup:  # earlier cases' set-up still shapes the namespace
                try:  # noqa: SIM105 - contextlib is the program's to patch by now
                    run(code, namespace)
                except base:
                    pass
            continue
        if not setup and case in broken:
            report(b"fail", case, broken.pop(case))
            continue
        try:
            run(code, namespace)
        except base as exc:
            if setup:
                broken.setdefault(case, f"the set-up before it raised {_describe(exc)}")
                continue
            report(b"fail", case, _describe(exc))
            if fail_fast:
                break
        else:
            if not setup:
                report(b"pass", case)
    for case, message in broken.items():  # set-up after the last case
        report(b"fail", case, message)
    report(b"done", -1)


def _communicate(
    pid: int, stdin: int, stdout: int, stderr: int, data: bytes, ends: float, cap: int
) -> tuple[bytes, bytes, str, int | None]:
    """Feed ``data`` to a child's stdin, read its stdout (at most ``cap`` bytes) and the
    tail of its stderr until it ends: ``(out, err, "ok" | "timeout" | "overflow",
    exit status if reaped)``. Closes the three fds."""
    out, err = bytearray(), bytearray()
    streams = {stdout: out, stderr: err}
    writer: int | None = stdin
    os.set_blocking(stdin, False)
    sent, status, ended = 0, None, 0.0
    how = "ok"
    try:
        while streams or status is None:
            now = time.monotonic()
            if now >= ends:
                how = "timeout"
                break
            if status is None:
                done, code = os.waitpid(pid, os.WNOHANG)
                if done:
                    status, ended = code, now
            if status is not None and (not streams or now - ended > 0.5):
                break  # ended (a leftover child may hold the pipes: stop waiting)
            if writer is not None and sent >= len(data):
                os.close(writer)
                writer = None
            wanted = [writer] if writer is not None else []
            wait = min(ends - now, 0.05 if status is not None or not streams else 0.1)
            readable, writable, _ = select.select(list(streams), wanted, [], wait)
            if writable:
                try:
                    sent += os.write(stdin, data[sent : sent + 65536])
                except BlockingIOError:
                    pass
                except OSError:  # the program stopped reading its input
                    sent = len(data)
            for fd in readable:
                chunk = os.read(fd, 65536)
                if not chunk:
                    del streams[fd]
                    continue
                buffer = streams[fd]
                buffer += chunk
                if fd == stdout and len(out) > cap:
                    how = "overflow"
                    break
                if fd == stderr and len(err) > 16384:
                    del err[:-8192]
            if how != "ok":
                break
    finally:
        for end in (writer, stdout, stderr):
            if end is not None:
                os.close(end)
    return bytes(out), bytes(err), how, status


def _target_ids(user: str) -> tuple[int, int] | None:
    """The uid and gid candidate code runs as, when the runner is root and must drop."""
    if os.geteuid() != 0 or not user or user == "root":
        return None
    import pwd

    entry = pwd.getpwnam(user)  # KeyError: the image lacks the user (a runner failure)
    return entry.pw_uid, entry.pw_gid


def _undumpable() -> None:
    """PR_SET_DUMPABLE 0: processes of the same uid cannot read this one's memory."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _kill(pid: int, reaped: bool = False) -> None:
    """Kill a child's process group, and the child itself (it may not have made its
    session yet) unless it was reaped (its pid may be someone else's by now)."""
    targets = [os.killpg] if reaped else [os.killpg, os.kill]
    for kill in targets:
        try:  # noqa: SIM105 - contextlib costs the sandbox an import
            kill(pid, _SIGKILL)
        except OSError:
            pass


def _wait(pid: int, until: float) -> int | None:
    """``pid``'s exit status if it ends before ``until`` (it is reaped), else ``None``."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() >= until:
            return None
        time.sleep(0.005)


def _sha256(data: bytes) -> str:
    try:  # the built-in module: hashlib would load OpenSSL
        from _sha256 import sha256  # type: ignore[import-not-found]
    except ImportError:
        try:
            from _sha2 import sha256  # type: ignore[import-not-found]
        except ImportError:
            from hashlib import sha256
    return str(sha256(data).hexdigest())


def _remove(path: str) -> None:
    """Remove a directory tree, leaving what cannot be removed (shutil is slow to load)."""
    for root, dirs, files in os.walk(path, topdown=False):
        for name in files + dirs:
            target = os.path.join(root, name)
            try:
                if os.path.isdir(target) and not os.path.islink(target):
                    os.rmdir(target)
                else:
                    os.unlink(target)
            except OSError:
                pass
    try:  # noqa: SIM105 - contextlib costs the sandbox an import
        os.rmdir(path)
    except OSError:
        pass


def main(argv: list[str]) -> int:
    """Run the job in the file named on the command line (``-``: on stdin, after its
    length and a newline); print ``<nonce> [[ok, message], ...]``."""
    if os.geteuid() != 0:  # the program will share this uid: hide the expected outputs
        _undumpable()
    if argv[1] == "-":  # the job's length, a newline, the job
        stdin = sys.stdin.buffer
        raw = stdin.read(int(stdin.readline()))
    else:
        with open(argv[1], "rb") as fh:
            raw = fh.read()
        try:  # noqa: SIM105 - contextlib costs the sandbox an import
            os.unlink(argv[1])
        except OSError:
            pass
        if _sha256(raw) != argv[2]:
            print("the test job does not match its hash", file=sys.stderr)
            return _TAMPERED
    job = marshal.loads(raw)
    runner = _Runner(job)
    try:
        results = runner.run()
    finally:
        _remove(runner.scratch)
    sys.stdout.write(f"{job['nonce']} {results!r}\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except KeyboardInterrupt:  # sent by the program (bubblewrap: one uid): no verdict
        sys.exit(130)
