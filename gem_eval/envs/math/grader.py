"""Whether a math answer equals the gold one: a string fast path, then ``math-verify``.

:func:`grade_answer` decides in this order:

1. **exact**: :func:`~gem_eval.envs.math.extract.string_verdict` decides from the
   strings (equal normal forms, two integers, a gold answer in words); an answer with
   unbalanced braces is wrong. No process is involved (microseconds).
2. **math_verify**: otherwise both answers go to a worker process that runs
   ``math_verify.parse``/``verify`` (fractions vs decimals, LaTeX vs plain, sets,
   intervals, units, percentages, ...).
3. **timeout** / **error**: the worker ran past ``timeout_s`` (it is killed and a fresh
   one started: ``\\boxed{9^{9^{9^{9}}}}`` cannot hang a run) or failed; graded wrong.

Why a process: ``math-verify`` enforces its own timeouts with ``signal.alarm``, which only
works on the main thread, and a sympy computation cannot be interrupted from another
thread. So the workers run it with its timeouts off, and the caller enforces the timeout
by killing the worker.

:class:`GraderPool` keeps a few persistent workers (importing ``math_verify`` takes ~1.5 s),
started on first use, shared by any number of threads, stopped at exit. Workers read one
JSON request per line on stdin and answer one JSON line on stdout.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import queue
import select
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import IO, Any

from gem_eval.envs.math.extract import balanced_braces, normalize, string_verdict
from gem_eval.envs.question import Grade

DEFAULT_TIMEOUT_S = 10.0
"""Seconds one ``math-verify`` grading may take."""
START_TIMEOUT_S = 120.0
"""Seconds a worker may take to start (import ``math_verify``) before it counts as failed."""
MAX_ANSWER_CHARS = 1000
"""Longer answers are not parsed (graded wrong, ``grader: error``)."""

_DETAIL_CHARS = 200
_WORKER_MEMORY_BYTES = 2 << 30
_WORKER_CODE = "from gem_eval.envs.math.grader import serve; serve({parent})"
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])


class GraderError(Exception):
    """A grading the worker could not finish (crashed, failed to start, or raised)."""


class GraderTimeout(GraderError):
    """The worker ran past the timeout (it has been killed)."""


def grade_answer(
    gold: str, pred: str, *, timeout_s: float = DEFAULT_TIMEOUT_S, pool: GraderPool | None = None
) -> Grade:
    """Grade ``pred`` against ``gold`` (see the module docstring).

    Args:
        gold: The gold answer (already extracted: no ``\\boxed{}`` around it).
        pred: The extracted answer.
        timeout_s: Seconds the worker may spend on it.
        pool: The workers to use (default: :func:`shared_pool`).

    Returns:
        The grade; its detail holds ``normalized_gold``, ``normalized_pred`` and
        ``grader`` (``exact``, ``math_verify``, ``timeout`` or ``error``, the last with
        ``grader_error``). Never raises.
    """
    norm_gold, norm_pred = normalize(gold), normalize(pred)
    detail: dict[str, Any] = {
        "normalized_gold": _short(norm_gold),
        "normalized_pred": _short(norm_pred),
    }
    if not norm_gold:
        return _grade(False, detail, "error", "no gold answer")
    decided = string_verdict(gold, pred)
    if decided is not None:
        return _grade(decided, detail, "exact")
    if not balanced_braces(pred):  # math-verify would read "1}{2" (wrapped in \boxed{}) as 1
        return _grade(False, detail, "exact")
    if max(len(gold), len(pred)) > MAX_ANSWER_CHARS:
        return _grade(False, detail, "error", f"answer longer than {MAX_ANSWER_CHARS} characters")
    try:
        correct = (pool or shared_pool()).verify(_prepare(gold), _prepare(pred), timeout_s)
    except GraderTimeout:
        return _grade(False, detail, "timeout")
    except GraderError as exc:
        return _grade(False, detail, "error", str(exc))
    return _grade(correct, detail, "math_verify")


def _prepare(answer: str) -> str:
    """What math-verify is given: the answer, with the forms it misses rewritten."""
    return answer.strip().replace("°", "^\\circ")


def _short(text: str) -> str:
    return text if len(text) <= _DETAIL_CHARS else text[: _DETAIL_CHARS - 3] + "..."


def _grade(correct: bool, detail: dict[str, Any], grader: str, error: str = "") -> Grade:
    detail["grader"] = grader
    if error:
        detail["grader_error"] = error
    return Grade(correct=correct, score=1.0 if correct else 0.0, detail=detail)


class _Worker:
    """One worker process, and what it has written that was not read yet."""

    def __init__(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [_PACKAGE_ROOT, env.get("PYTHONPATH")]))
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _WORKER_CODE.format(parent=os.getpid())],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
                start_new_session=True,  # a Ctrl-C in the terminal is the runner's to handle
            )
        except OSError as exc:  # out of processes or file descriptors
            raise GraderError(f"cannot start a grader worker: {exc}") from exc
        assert self.proc.stdout is not None
        self._poller = select.poll()  # not select(): descriptors above 1024 are common here
        self._poller.register(self.proc.stdout.fileno(), select.POLLIN)
        self.started = time.monotonic()
        self.ready = False
        self._buffer = bytearray()

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def request(
        self, message: dict[str, Any], timeout_s: float, start_timeout_s: float
    ) -> dict[str, Any]:
        """Send ``message``; return the reply, or raise on timeout, crash or start failure.

        Raises:
            GraderTimeout: No reply within ``timeout_s``.
            GraderError: Anything else that went wrong (the worker is then useless).
        """
        try:
            if not self.ready:
                reply = self._read(self.started + start_timeout_s, "did not start in time")
                if not isinstance(reply, dict) or not reply.get("ready"):
                    raise GraderError(str(reply.get("error") if isinstance(reply, dict) else reply))
                self.ready = True
            stdin = self.proc.stdin
            assert stdin is not None
            stdin.write(json.dumps(message).encode() + b"\n")
            stdin.flush()
            reply = self._read(time.monotonic() + timeout_s, None)
        except (OSError, ValueError):  # a broken pipe; a pipe closed by close() meanwhile
            raise GraderError("the grader worker exited") from None
        if not isinstance(reply, dict):
            raise GraderError("the grader worker sent a malformed reply")
        return reply

    def _read(self, deadline: float, late: str | None) -> Any:
        stdout = self.proc.stdout
        assert stdout is not None
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._poller.poll(max(1, int(remaining * 1000))):
                raise GraderError(f"the grader worker {late}") if late else GraderTimeout()
            chunk = os.read(stdout.fileno(), 65536)
            if not chunk:
                raise GraderError("the grader worker exited")
            self._buffer += chunk
        line, _, rest = self._buffer.partition(b"\n")
        self._buffer = bytearray(rest)
        return json.loads(line)  # a ValueError if malformed

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


class GraderPool:
    """Persistent ``math-verify`` worker processes, safe to use from many threads.

    Args:
        size: Workers (default: ``$GEM_EVAL_MATH_WORKERS``, else the CPU count, at most 4).
        start_timeout_s: Seconds a worker may take to start.
        cache_size: Gradings remembered (a repeated answer is not graded again).

    Attributes:
        restarts: Workers replaced after a timeout or a crash.
    """

    def __init__(
        self,
        size: int | None = None,
        *,
        start_timeout_s: float = START_TIMEOUT_S,
        cache_size: int = 4096,
    ) -> None:
        self.size = max(1, size or _default_size())
        self.start_timeout_s, self.cache_size = start_timeout_s, cache_size
        self.restarts = 0
        self.pid = os.getpid()
        self._idle: queue.LifoQueue[_Worker] = queue.LifoQueue()  # warm ones first
        self._live: set[_Worker] = set()
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[str, str], bool] = OrderedDict()
        self._started = self._closed = False

    def verify(self, gold: str, pred: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> bool:
        """``math_verify.verify(parse(gold), parse(pred))`` in a worker, within ``timeout_s``.

        Raises:
            GraderTimeout: It took longer (the worker was killed and replaced).
            GraderError: The worker failed, or math-verify is not installed.
        """
        key = (gold, pred)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        reply = self._call({"gold": gold, "pred": pred}, timeout_s)
        if not isinstance(reply.get("correct"), bool):  # math-verify raised in the worker
            raise GraderError(str(reply.get("error", "the grader worker sent no verdict")))
        correct: bool = reply["correct"]
        with self._lock:
            self._cache[key] = correct
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return correct

    def _call(self, message: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        for attempt in range(2):
            worker = self._acquire()
            if not worker.alive and attempt == 0:  # died while idle: nothing was lost
                self._replace(worker)
                continue
            try:
                reply = worker.request(message, timeout_s, self.start_timeout_s)
            except GraderError:
                self._replace(worker)
                raise
            self._release(worker)
            return reply
        raise GraderError("the grader worker exited")

    def _acquire(self) -> _Worker:
        while True:
            with self._lock:
                if self._closed:
                    raise GraderError("the grader pool is closed")
                if not self._started:
                    self._start()
                elif not self._live:  # every restart failed so far: try again
                    self._add()
            try:
                return self._idle.get(timeout=0.5)
            except queue.Empty:
                continue

    def _start(self) -> None:
        import importlib.util

        if importlib.util.find_spec("math_verify") is None:
            raise GraderError("math grading needs math-verify: pip install 'gem-eval[math]'")
        self._started = True
        atexit.register(self.close)
        for _ in range(self.size):
            self._add()

    def _add(self) -> None:
        worker = _Worker()
        self._live.add(worker)
        self._idle.put(worker)

    def _release(self, worker: _Worker) -> None:
        with self._lock:
            if not self._closed:
                self._idle.put(worker)
                return
        worker.kill()

    def _replace(self, worker: _Worker) -> None:
        worker.kill()  # it may be deep in a computation: only a kill stops it
        with self._lock:
            self._live.discard(worker)
            if not self._closed:
                self.restarts += 1
                with contextlib.suppress(GraderError):  # _acquire tries again
                    self._add()  # starts importing at once, while nobody waits on it

    def close(self) -> None:
        """Stop every worker. Safe to call twice; later gradings raise :class:`GraderError`."""
        if os.getpid() != self.pid:  # a forked child's copy: the workers are the parent's
            return
        with self._lock:
            self._closed = True
            workers, self._live = list(self._live), set()
        for worker in workers:
            worker.kill()


def _default_size() -> int:
    setting = os.environ.get("GEM_EVAL_MATH_WORKERS", "")
    return int(setting) if setting.isdigit() else min(4, os.cpu_count() or 1)


_shared: GraderPool | None = None
_shared_lock = threading.Lock()


def shared_pool() -> GraderPool:
    """The process-wide pool (a new one in a forked child: pipes do not survive a fork)."""
    global _shared
    with _shared_lock:
        if _shared is None or _shared.pid != os.getpid():
            _shared = GraderPool()
        return _shared


# -- the worker process -----------------------------------------------------------------


def serve(parent: int) -> None:
    """The worker's loop: a JSON ``{"gold", "pred"}`` per stdin line, a JSON reply per line.

    Replies ``{"ready": true}`` once ``math_verify`` is loaded, then ``{"correct": bool}``
    or ``{"error": message}`` per request. Exits at end of input or when ``parent`` dies.
    """
    out = os.fdopen(os.dup(1), "wb")  # the replies' channel; stray prints go to stderr
    os.dup2(2, 1)
    _limit_memory()
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    try:
        import logging

        logging.getLogger("math_verify").setLevel(logging.ERROR)  # "timeout is disabled"
        _equivalent("\\frac{1}{2}", "0.5")  # the first parse builds the LaTeX parser
    except Exception as exc:
        _reply(out, {"error": f"math-verify does not load: {type(exc).__name__}: {exc}"})
        return
    _reply(out, {"ready": True})
    for line in sys.stdin.buffer:
        try:
            request = json.loads(line)
            reply: dict[str, Any] = {"correct": _equivalent(request["gold"], request["pred"])}
        except Exception as exc:  # RecursionError, MemoryError, a sympy bug: all mean "no"
            reply = {"error": f"{type(exc).__name__}: {exc}"[:_DETAIL_CHARS]}
        _reply(out, reply)


def _equivalent(gold: str, pred: str) -> bool:
    from math_verify import parse, verify  # type: ignore[import-untyped]

    parsed_gold = parse(f"\\boxed{{{gold}}}", parsing_timeout=None)
    parsed_pred = parse(f"\\boxed{{{pred}}}", parsing_timeout=None)
    if not parsed_gold or not parsed_pred:
        return False
    return bool(verify(parsed_gold, parsed_pred, timeout_seconds=None))


def _reply(out: IO[bytes], message: dict[str, Any]) -> None:
    out.write(json.dumps(message).encode() + b"\n")
    out.flush()


def _watch_parent(parent: int) -> None:
    """Exit when the parent is gone (killed without running its ``atexit``)."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


def _limit_memory() -> None:
    """Cap the address space, so that a huge number fails with ``MemoryError``."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY or soft > _WORKER_MEMORY_BYTES:
            limit = _WORKER_MEMORY_BYTES
            if hard != resource.RLIM_INFINITY:
                limit = min(limit, hard)
            resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, ValueError, OSError):
        pass
