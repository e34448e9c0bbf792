"""The sandbox side of :mod:`gem_eval.envs.code.runner`: this whole file is the program
``run_tests`` starts in the sandbox (``python3 -I -c <this source> JOB|-``); :func:`main`
runs the tests and prints one report line. It imports only cheap built-in modules (Python
3.9 or newer in the sandbox; each import saved is milliseconds off every grading). See
the runner's docstring for how a run defends itself against the program it tests.
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
