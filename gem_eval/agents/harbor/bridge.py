"""``HarborHost``: gem-eval's end of the Harbor host process (:mod:`.host`).

It starts the host with the Python of Harbor's venv, sends it episodes, answers its calls
on each episode's sandbox (:class:`~gem_eval.agents.harbor.sandbox_calls.SandboxCalls`),
and supervises it: a host that dies fails its episodes in flight as the machinery's
fault (:class:`~gem_eval.agents.base.AgentError` with ``infra``), and the next episode
starts a new one. The host gets a bare environment (no API key of the user's: the agents
call the run's endpoint with their episode's token).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gem_eval.agents.base import AgentError
from gem_eval.agents.harbor.sandbox_calls import SandboxCalls

HOST_SCRIPT = Path(__file__).with_name("host.py")
LINE_LIMIT = 1 << 30
"""The longest line read from the host."""
START_TIMEOUT_S = 300.0
"""How long the host may take to import Harbor and answer ``ready`` (~7 s here)."""
_KEPT_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "GEM_EVAL_HARBOR_LOG")

log = logging.getLogger("gem_eval.agents")

Process = asyncio.subprocess.Process


@dataclass
class _Episode:
    calls: SandboxCalls
    done: asyncio.Future[dict[str, Any]]
    process: Process


class HarborHost:
    """The host process for a run: started once, restarted when it dies.

    Args:
        python: The interpreter of Harbor's venv.
        script: The host script (tests give a stand-in).

    Attributes:
        info: What the host said when ready (``harbor``, ``python``, ``import_s``).
        start_s: Seconds from spawning the host to its ``ready`` (the last start).
    """

    def __init__(self, python: Path, script: Path = HOST_SCRIPT) -> None:
        self.python, self.script = python, script
        self.info: dict[str, Any] = {}
        self.start_s: float | None = None
        self._process: Process | None = None
        self._ready: asyncio.Future[dict[str, Any]] | None = None
        self._episodes: dict[str, _Episode] = {}
        self._ids = itertools.count(1)
        self._start_lock = asyncio.Lock()
        self._write_lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()
        self._stderr: collections.deque[str] = collections.deque(maxlen=30)

    async def start(self) -> None:
        """Start the host unless it runs; return once it is ready.

        Raises:
            AgentError: It could not start or died first (``infra``; its last words).
        """
        async with self._start_lock:
            if self._process is not None and self._process.returncode is None:
                return
            began = time.monotonic()
            env = {k: os.environ[k] for k in _KEPT_ENV if k in os.environ}
            env |= {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "HARBOR_TELEMETRY": "0"}
            process = await asyncio.create_subprocess_exec(
                str(self.python), "-I", str(self.script),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env=env, limit=LINE_LIMIT,
            )  # fmt: skip
            self._process = process
            self._ready = asyncio.get_running_loop().create_future()
            self._spawn(self._read(process, self._ready))
            self._spawn(self._read_stderr(process))
            try:
                self.info = await asyncio.wait_for(asyncio.shield(self._ready), START_TIMEOUT_S)
            except asyncio.TimeoutError:
                await self._kill(process)
                raise AgentError(
                    f"Harbor's host did not start within {START_TIMEOUT_S:.0f} s", infra=True
                ) from None
            self.start_s = time.monotonic() - began
            log.info("Harbor's host ready in %.1f s: %s", self.start_s, self.info)

    async def play(self, request: dict[str, Any], calls: SandboxCalls) -> dict[str, Any]:
        """Play one episode (see :func:`gem_eval.agents.harbor.host.play` for the
        request and the reply); ``calls`` answers its sandbox calls.

        Raises:
            AgentError: The host died or could not start (``infra``).
        """
        await self.start()
        process = self._process
        assert process is not None
        episode = f"e{next(self._ids)}"
        done: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._episodes[episode] = _Episode(calls, done, process)
        try:
            await self._send(process, {"op": "play", "episode": episode, **request})
            return await done
        except asyncio.CancelledError:  # gem-eval gave up on it (its guard, Ctrl-C)
            with contextlib.suppress(Exception):
                await self._send(process, {"op": "cancel", "episode": episode})
            raise
        finally:
            self._episodes.pop(episode, None)

    async def aclose(self) -> None:
        """End the host (its input closed, then killed if it lingers)."""
        process, self._process = self._process, None
        if process is not None and process.returncode is None:
            if process.stdin is not None:
                process.stdin.close()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except asyncio.TimeoutError:
                await self._kill(process)
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _read(self, process: Process, ready: asyncio.Future[dict[str, Any]]) -> None:
        """The host's lines: its ready, its calls (each answered in a task of its own),
        its episodes' ends; at its end, what it leaves undone fails."""
        assert process.stdout is not None
        try:
            while line := await process.stdout.readline():
                message = json.loads(line)
                op = message.get("op")
                if op == "ready" and not ready.done():
                    ready.set_result(message)
                elif op == "done":
                    episode = self._episodes.get(str(message.get("episode")))
                    if episode is not None and not episode.done.done():
                        episode.done.set_result(message)
                else:
                    self._spawn(self._answer(process, message))
        except (ValueError, asyncio.LimitOverrunError) as exc:
            log.warning("Harbor's host sent a line gem-eval cannot read: %s", exc)
            await self._kill(process)
        finally:
            await self._ended(process, ready)

    async def _ended(self, process: Process, ready: asyncio.Future[dict[str, Any]]) -> None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(process.wait(), 5)
        if process.returncode is None:
            await self._kill(process)
        tail = " | ".join(line for line in self._stderr if line.strip())[-600:]
        error = AgentError(
            f"Harbor's host process ended (exit {process.returncode})"
            + (f": {tail}" if tail else ""),
            infra=True,
        )
        if not ready.done():
            ready.set_exception(error)
        for episode in self._episodes.values():
            if episode.process is process and not episode.done.done():
                episode.done.set_exception(error)

    async def _answer(self, process: Process, message: dict[str, Any]) -> None:
        reply: dict[str, Any] = {"op": "answer", "call": message.get("call")}
        episode = self._episodes.get(str(message.get("episode")))
        if episode is None:
            reply["error"] = "the episode is over"
        else:
            try:
                reply["result"] = await episode.calls.answer(str(message.get("op")), message)
            except Exception as exc:  # the agent hears it as Harbor's env would raise it
                reply["error"] = f"{type(exc).__name__}: {exc}"
        with contextlib.suppress(Exception):  # a dead host: its reader says so
            await self._send(process, reply)

    async def _send(self, process: Process, message: dict[str, Any]) -> None:
        assert process.stdin is not None
        async with self._write_lock:
            process.stdin.write(json.dumps(message).encode() + b"\n")
            await process.stdin.drain()

    async def _read_stderr(self, process: Process) -> None:
        assert process.stderr is not None
        while True:
            try:
                raw = await process.stderr.readline()
            except (ValueError, asyncio.LimitOverrunError):
                continue
            if not raw:
                return
            line = raw.decode(errors="replace").rstrip()
            self._stderr.append(line)
            log.debug("harbor host: %s", line)

    async def _kill(self, process: Process) -> None:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
