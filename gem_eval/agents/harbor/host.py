"""The Harbor host: Harbor's own agent classes, played in gem-eval's sandboxes.

A standalone script, run by gem-eval (:mod:`gem_eval.agents.harbor.bridge`) with the
Python of Harbor's venv (:mod:`gem_eval.agents.harbor.venv`): it imports only Harbor and
the standard library, never gem-eval. One host serves a run: it plays many episodes at
once, each an asyncio task, multiplexed over one pipe by episode id.

The protocol is JSON, one object a line; stdout carries nothing else (what Harbor or
litellm print goes to stderr, which gem-eval logs). ``op`` says what a line is:

* host -> gem-eval: ``ready`` (once, after the imports: ``harbor``, ``python``,
  ``import_s``); ``exec``, ``upload`` and ``download`` (``call``: a number, ``episode``,
  and the arguments), each answered by an ``answer`` of the same ``call``; ``done``
  (``episode``, and what :func:`play` reports).
* gem-eval -> host: ``play`` (``episode`` and the request :func:`play` reads); ``answer``
  (``call``, then ``result`` or ``error``); ``cancel`` (``episode``). End of input: the
  host cancels what is left and exits.

Each episode reproduces what Harbor's ``Trial`` does around an agent: the agent made
from an ``AgentConfig`` by Harbor's factory (``logs_dir`` on this machine, the model
name, its keyword arguments: ``api_base`` the run's endpoint, ``llm_kwargs.api_key`` the
episode's token, so episodes running at once keep their own keys); ``session_id`` and
``context_id`` set; setup in the agent's scoped exec env under the task's default user,
within the agent's setup timeout; the run likewise within the agent timeout; then
``/logs/agent`` downloaded into ``logs_dir/agent``, ``populate_context_post_run`` when
the context is still empty, and model usage read from the trajectory. The verifier is
gem-eval's.
"""

from __future__ import annotations

import asyncio
import importlib
import itertools
import json
import logging
import os
import sys
import time
import traceback
import uuid
from pathlib import Path
from typing import IO, Any

PROTOCOL = 1
LINE_LIMIT = 1 << 30
"""The longest line read (an exec's whole output travels in one)."""
AGENT_LOGS = "/logs/agent"
"""Where the agent writes in the container (Harbor's ``EnvironmentPaths.agent_dir``)."""

log = logging.getLogger("gem_eval_harbor_host")


class Channel:
    """The pipe to gem-eval: lines out, and calls awaiting their answers."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.ids = itertools.count(1)

    def send(self, message: dict[str, Any]) -> None:
        self.out.write(json.dumps(message).encode() + b"\n")
        self.out.flush()

    async def call(self, op: str, episode: str, **args: Any) -> dict[str, Any]:
        """Ask gem-eval to act on the episode's sandbox; its answer.

        Raises:
            RuntimeError: gem-eval could not (the message says why).
        """
        call = next(self.ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[call] = future
        try:
            self.send({"op": op, "call": call, "episode": episode, **args})
            return await future
        finally:
            self.pending.pop(call, None)

    def answered(self, message: dict[str, Any]) -> None:
        future = self.pending.get(message.get("call", -1))
        if future is None or future.done():  # its episode was cancelled
            return
        if message.get("error") is not None:
            future.set_exception(RuntimeError(str(message["error"])))
        else:
            future.set_result(message.get("result") or {})


def environment_class() -> type:
    """Harbor's ``BaseEnvironment`` over gem-eval's sandbox (made once Harbor is
    imported). Its exec, upload and download are calls on the channel; the rest of
    Harbor's environment (``is_dir``, the env overlays, the default user) is Harbor's."""
    from harbor.environments.base import BaseEnvironment, ExecResult

    class GemEvalSandbox(BaseEnvironment):  # type: ignore[misc]
        """One episode's sandbox, driven through gem-eval. As Harbor's docker env does,
        a command runs as ``bash -c`` with stderr merged into stdout, in ``cwd`` (or
        the sandbox's work directory), with the merged env, as the resolved user; a
        timeout raises ``RuntimeError("Command timed out after N seconds")``."""

        def __init__(self, *args: Any, channel: Channel, episode: str, **kwargs: Any) -> None:
            self.channel, self.episode = channel, episode
            super().__init__(*args, **kwargs)

        @staticmethod
        def type() -> str:
            return "gem-eval"

        def _validate_definition(self) -> None:
            """Nothing to check: gem-eval built and started the sandbox."""

        async def start(self, force_build: bool) -> None:
            """gem-eval started the sandbox (and made ``/logs/agent``)."""

        async def stop(self, delete: bool) -> None:
            """gem-eval removes the sandbox after grading it."""

        async def exec(
            self,
            command: str,
            cwd: str | None = None,
            env: dict[str, str] | None = None,
            timeout_sec: int | None = None,
            user: str | int | None = None,
        ) -> Any:
            user = self._resolve_user(user)
            answer = await self.channel.call(
                "exec",
                self.episode,
                command=command,
                cwd=cwd or self.task_env_config.workdir,
                env=self._merge_env(env),
                timeout_s=timeout_sec or None,
                user=None if user is None else str(user),
            )
            if answer.get("timed_out"):
                raise RuntimeError(f"Command timed out after {timeout_sec} seconds")
            return ExecResult(
                stdout=answer.get("stdout") or None,
                stderr=None,
                return_code=int(answer.get("return_code") or 0),
            )

        async def upload_file(self, source_path: Path | str, target_path: str) -> None:
            await self._copy("upload", str(source_path), target_path, False)

        async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
            await self._copy("upload", str(source_dir), target_dir, True)

        async def download_file(self, source_path: str, target_path: Path | str) -> None:
            await self._copy("download", source_path, str(target_path), False)

        async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
            await self._copy("download", source_dir, str(target_dir), True)

        async def _copy(self, op: str, source: str, target: str, whole_dir: bool) -> None:
            await self.channel.call(op, self.episode, source=source, target=target, dir=whole_dir)

    return GemEvalSandbox


async def play(channel: Channel, sandbox_class: type, request: dict[str, Any]) -> dict[str, Any]:
    """One episode, as Harbor's ``Trial`` plays an agent (see the module docstring).

    ``request``: ``episode``, ``name`` (the trial's name in Harbor's terms), ``agent``
    (Harbor's agent name), ``model``, ``kwargs`` (the agent's keyword arguments),
    ``config`` (more fields of Harbor's ``AgentConfig``: ``base_url``, ``env`` ...),
    ``instruction`` and ``task_dir`` (the task's directory: Harbor reads the instruction
    from it when it can), ``logs_dir``, ``task`` (its name), ``workdir``, ``user``,
    ``timeout_s`` (the agent's time; ``None``: none), ``setup_timeout_s`` (``None``:
    the agent class's default), ``web_tools_disabled``.

    Returns:
        ``episode``, ``version``, ``setup_s``, ``run_s``, ``timed_out``, ``context``
        (Harbor's ``AgentContext``), and ``error``: ``None`` or ``{kind, message,
        traceback}`` with ``kind`` one of ``setup`` (setup failed), ``setup_timeout``,
        ``agent`` (the agent raised).
    """
    from harbor.agents.factory import AgentFactory
    from harbor.models.agent.context import AgentContext
    from harbor.models.task.config import EnvironmentConfig
    from harbor.models.trial.config import AgentConfig
    from harbor.models.trial.paths import TrialPaths

    instruction = _instruction(request)
    paths = TrialPaths(trial_dir=Path(request["logs_dir"]))
    paths.mkdir()
    env = sandbox_class(
        environment_dir=paths.trial_dir,
        environment_name=request["task"],
        session_id=f"{request['name']}__env",
        trial_paths=paths,
        task_env_config=EnvironmentConfig(workdir=request.get("workdir")),
        channel=channel,
        episode=request["episode"],
    )
    config = AgentConfig(
        name=request["agent"],
        model_name=request["model"],
        kwargs=request.get("kwargs") or {},
        **(request.get("config") or {}),  # base_url, env ... (harbor run --base-url, --ae)
    )
    agent = AgentFactory.create_agent_from_config(config, logs_dir=paths.agent_dir, logger=log)
    agent.session_id = f"{request['name']}__agent"
    agent.context_id = str(uuid.uuid4())
    setup_timeout = request.get("setup_timeout_s") or type(agent).DEFAULT_SETUP_TIMEOUT_SEC
    reply: dict[str, Any] = {"episode": request["episode"], "timed_out": False, "error": None}
    context = AgentContext()
    began = time.monotonic()
    cancelled = False
    try:
        with env.with_default_user(request.get("user")):
            try:
                with env.scoped_exec_env(agent.extra_env):
                    await asyncio.wait_for(agent.setup(environment=env), timeout=setup_timeout)
            except asyncio.TimeoutError:
                message = f"Agent setup timed out after {setup_timeout} seconds"
                reply["error"] = {"kind": "setup_timeout", "message": message}
            except Exception as exc:
                reply["error"] = _error("setup", exc)
            reply["setup_s"] = time.monotonic() - began
            reply["version"] = agent.version()
            if reply["error"] is None:
                began = time.monotonic()
                try:
                    with env.scoped_exec_env(agent.extra_env):
                        await agent.set_web_tools_disabled(
                            bool(request.get("web_tools_disabled")), env
                        )
                        run = agent.run(instruction=instruction, environment=env, context=context)
                        await asyncio.wait_for(run, timeout=request.get("timeout_s"))
                except asyncio.TimeoutError:
                    reply["timed_out"] = True
                except Exception as exc:
                    reply["error"] = _error("agent", exc)
                reply["run_s"] = time.monotonic() - began
    except asyncio.CancelledError:
        cancelled = True  # gem-eval gave up on the episode: nobody reads its output
        raise
    finally:
        if not cancelled:
            await _sync_output(env, agent, context, paths, reply)
    return reply


def _instruction(request: dict[str, Any]) -> str:
    """The task's instruction as Harbor reads it (``instruction.md`` whole, canary lines
    stripped) when the task is in Harbor's layout; else as gem-eval's env stated it."""
    task_dir = request.get("task_dir")
    if task_dir:
        from harbor.models.task.task import Task

        try:
            return str(Task(task_dir, disable_verification=True).instruction)
        except Exception as exc:  # not Harbor's layout (a Terminal-Bench 1 task.yaml)
            log.info("Harbor cannot read %s (%s): gem-eval's instruction is used", task_dir, exc)
    return str(request["instruction"])


async def _sync_output(
    env: Any, agent: Any, context: Any, paths: Any, reply: dict[str, Any]
) -> None:
    """What ``Trial._sync_agent_output`` does: the agent's logs to this machine, the
    context filled from them when the agent left it empty, the model usage."""
    from harbor.utils.trajectory_utils import load_model_usage_from_trajectory

    try:
        await env.download_dir(AGENT_LOGS, paths.agent_dir)
    except Exception as exc:
        reply["download_error"] = str(exc)
    try:
        if context.is_empty():
            agent.populate_context_post_run(context)
        if context.model_usage is None:
            context.model_usage = load_model_usage_from_trajectory(
                agent.logs_dir / "trajectory.json"
            )
    except Exception as exc:
        log.warning("reading the agent's output failed: %s", exc)
    reply["context"] = context.model_dump(mode="json", exclude_none=True)


def _error(kind: str, exc: BaseException) -> dict[str, Any]:
    message = f"{type(exc).__name__}: {exc}"
    return {"kind": kind, "message": message, "traceback": traceback.format_exc()}


async def serve(channel: Channel) -> None:
    """Play the episodes gem-eval sends until its end of the pipe closes."""
    from importlib.metadata import version
    from platform import python_version

    began = time.monotonic()
    # Before ready, so no episode waits for them: Harbor's agents, and litellm (~7 s).
    for module in ("harbor.agents.factory", "harbor.llms.lite_llm"):
        importlib.import_module(module)

    sandbox_class = environment_class()
    channel.send(
        {
            "op": "ready",
            "protocol": PROTOCOL,
            "harbor": version("harbor"),
            "python": python_version(),
            "import_s": round(time.monotonic() - began, 3),
        }
    )
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    episodes: dict[str, asyncio.Task[None]] = {}

    async def episode(request: dict[str, Any]) -> None:
        try:
            reply = await play(channel, sandbox_class, request)
        except Exception as exc:  # the host's own failure: still an answer
            reply = {"episode": request.get("episode"), "error": _error("host", exc)}
        finally:
            episodes.pop(request.get("episode", ""), None)
        channel.send({"op": "done", **reply})

    while line := await reader.readline():
        if not line.strip():
            continue
        message = json.loads(line)
        op = message.get("op")
        if op == "answer":
            channel.answered(message)
        elif op == "play":
            episodes[message["episode"]] = asyncio.create_task(episode(message))
        elif op == "cancel":
            task = episodes.pop(message.get("episode", ""), None)
            if task is not None:
                task.cancel()
    for task in episodes.values():
        task.cancel()


def main() -> None:
    # The protocol gets its own copy of stdout; fd 1 then points at stderr, so whatever
    # else prints (Harbor, litellm, a child process) cannot corrupt it.
    protocol = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network fetch
    os.environ.setdefault("HARBOR_TELEMETRY", "0")
    level = os.environ.get("GEM_EVAL_HARBOR_LOG", "WARNING").upper()
    logging.basicConfig(
        stream=sys.stderr, level=level, format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )
    asyncio.run(serve(Channel(protocol)))


if __name__ == "__main__":
    main()
