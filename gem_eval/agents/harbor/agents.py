"""Harbor's agents as gem-eval agents: :class:`Terminus2` (``--agent terminus-2``), and
the installed agents (:class:`MiniSweAgent`, :class:`QwenCode`: :class:`InstalledAgent`).

A :class:`HarborAgent` makes Harbor's venv and starts the host once per run
(:meth:`HarborAgent.start`), then plays each episode through it: the host runs Harbor's
own agent class on the episode's sandbox (:mod:`gem_eval.agents.harbor.host`), its model
calls going to the run's endpoint with the episode's token; gem-eval then keeps the
agent's files and turns (:mod:`gem_eval.agents.harbor.atif`) and grades the sandbox.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from pathlib import Path
from typing import Any, ClassVar

from gem_eval.agents.base import Agent, AgentEpisode, AgentError, AgentResult
from gem_eval.agents.catalog import HARBOR_VERSION, MINI_SWE_AGENT_VERSION, QWEN_CODE_VERSION
from gem_eval.agents.harbor import atif, terminal_tools
from gem_eval.agents.harbor.bridge import HarborHost
from gem_eval.agents.harbor.sandbox_calls import SandboxCalls
from gem_eval.agents.harbor.venv import harbor_venv, venv_python
from gem_eval.agents.install import Installed, make_installer

AGENT_LOGS = "/logs/agent"
"""Where Harbor's agents write in the container (Terminus-2's tmux pipes its pane there;
Harbor's docker env mounts it, gem-eval makes it and copies it out)."""
_INFRA_KINDS = ("setup", "setup_timeout", "host")
"""Failures that are not the agent's play: it never got to act (or the host failed)."""

log = logging.getLogger("gem_eval.agents")


class HarborAgent(Agent):
    """One of Harbor's agents, hosted (see the module docstring).

    Attributes:
        harbor_name: The agent's name in Harbor (``harbor run --agent``).
    """

    harbor_name: ClassVar[str]
    families: ClassVar[tuple[str, ...]] = ("terminal",)
    uses_tmux: ClassVar[bool] = False
    """The agent drives tmux (and records with asciinema): gem-eval puts both in a
    container without network (:mod:`gem_eval.agents.harbor.terminal_tools`)."""

    def __init__(self) -> None:
        self.host: HarborHost | None = None
        self.venv_build_s: float | None = None

    async def start(self) -> None:
        """Harbor's venv (made on first use, ~1.5 min) and the host (~7 s to import).

        Raises:
            HarborUnavailable: No Python >= 3.12 here, or Harbor's install failed.
        """
        venv, self.venv_build_s = await asyncio.to_thread(harbor_venv)
        if self.venv_build_s is not None:
            log.warning("made Harbor's venv in %.0f s", self.venv_build_s)
        self.host = HarborHost(venv_python(venv))
        await self.host.start()

    def agent_kwargs(self, episode: AgentEpisode) -> dict[str, Any]:
        """The agent's keyword arguments (``harbor run --ak``): the endpoint, and the
        episode's token as this agent instance's own key (episodes run at once)."""
        return {"api_base": episode.host_base_url, "llm_kwargs": {"api_key": episode.api_key}}

    def agent_config(self, episode: AgentEpisode) -> dict[str, Any]:
        """More fields of Harbor's ``AgentConfig`` (``base_url``, ``env``: ``harbor run
        --base-url``, ``--ae``); Terminus-2 takes none."""
        return {}

    async def play(self, episode: AgentEpisode) -> AgentResult:
        if self.host is None:
            raise AgentError(f"{self.name} was not started", infra=True)
        sandbox = episode.sandbox
        began = time.monotonic()
        await sandbox.run_root(f"mkdir -p {AGENT_LOGS} && chmod 777 {AGENT_LOGS}", "making /logs")
        offline = not getattr(sandbox, "network", True)
        provided = await terminal_tools.provide(sandbox) if offline and self.uses_tmux else []
        task = episode.task.id.rsplit("/", 1)[-1]
        request = {
            "agent": self.harbor_name,
            "name": f"{task}__{uuid.uuid4().hex[:7]}",
            "task": task,
            "model": episode.model,
            "kwargs": self.agent_kwargs(episode),
            "config": self.agent_config(episode),
            "instruction": episode.instruction,
            "task_dir": _task_dir(episode),
            "logs_dir": str(episode.logs_dir),
            "workdir": None,  # the sandbox's: the task's WORKDIR, as under Harbor's docker env
            "user": None,  # the sandbox's: the task's agent user, or root
            "timeout_s": episode.timeout_s,
            "setup_timeout_s": None,  # the agent class's own
            "web_tools_disabled": offline,
        }
        prepared_s = time.monotonic() - began
        calls = SandboxCalls(sandbox)
        with calls.uncapped():
            reply = await self.host.play(request, calls)
        result = self.result(reply, episode.logs_dir / "agent")
        result.setup_s += prepared_s  # /logs/agent made, tools brought in: setup too
        if provided:
            result.info["provided"] = provided
        if calls.lost is not None:
            raise calls.lost
        error = reply.get("error")
        if error:
            infra = error.get("kind") in _INFRA_KINDS
            raise AgentError(f"{self.name}: {error.get('message')}", infra=infra, result=result)
        return result

    def result(self, reply: dict[str, Any], logs: Path) -> AgentResult:
        """What the host reported and the agent left in ``logs``, as an AgentResult."""
        files, skipped = atif.agent_files(logs)
        trajectory = atif.read_trajectory(logs / "trajectory.json")
        context = dict(reply.get("context") or {})
        context.pop("rollout_details", None)  # token ids: the endpoint's steps hold them
        info: dict[str, Any] = {"harbor": self.host.info.get("harbor") if self.host else None}
        info["context"] = context
        if skipped:
            info["files_skipped"] = skipped
        if reply.get("download_error"):
            info["download_error"] = reply["download_error"]
        if reply.get("error"):
            info["error"] = reply["error"]  # its kind, message and Harbor's traceback
        return AgentResult(
            setup_s=float(reply.get("setup_s") or 0.0),
            run_s=float(reply.get("run_s") or 0.0),
            version=reply.get("version"),
            timed_out=bool(reply.get("timed_out")),
            files=files,
            info=info,
            turns=atif.turns(trajectory) if trajectory else [],
        )

    def describe(self) -> dict[str, Any]:
        described: dict[str, Any] = {"source": self.source, "harbor_agent": self.harbor_name}
        if self.host is not None:
            described |= {
                "harbor": self.host.info.get("harbor"),
                "python": self.host.info.get("python"),
                "host_start_s": self.host.start_s,
            }
        if self.venv_build_s is not None:
            described["venv_build_s"] = self.venv_build_s
        return described

    async def aclose(self) -> None:
        if self.host is not None:
            await self.host.aclose()
            self.host = None


def _task_dir(episode: AgentEpisode) -> str | None:
    """The task's directory when it is in Harbor's layout: Harbor reads its instruction
    (``instruction.md`` as it is; gem-eval's env states it stripped)."""
    path = episode.task.env_kwargs.get("path")
    if not isinstance(path, str) or not (Path(path) / "instruction.md").is_file():
        return None
    return path


class Terminus2(HarborAgent):
    """Harbor's Terminus-2: keystrokes into tmux, JSON replies, a confirmation turn."""

    name = "terminus-2"
    harbor_name = "terminus-2"
    uses_tmux = True
    source = f"Harbor {HARBOR_VERSION} (PyPI: harbor), hosted"
    records = "every model call, each turn's analysis, plan, keystrokes and screen, its cast"

    def agent_kwargs(self, episode: AgentEpisode) -> dict[str, Any]:
        """Also the run's model's limits (``model_info``: litellm may know none for the
        ``openai/<name>`` it is given, where Harbor run with the real name would), and a
        cap on its turns when the episode has one (``max_turns``)."""
        kwargs = super().agent_kwargs(episode)
        if episode.model_limits is not None:
            kwargs["model_info"] = dict(episode.model_limits)
        if episode.max_turns is not None:
            kwargs["max_turns"] = episode.max_turns
        return kwargs


class InstalledAgent(HarborAgent):
    """An agent program from a package registry, played by Harbor's adapter for it.

    Harbor's installers fetch the agent inside the container, from hosts a container
    here cannot reach; gem-eval fetches and unpacks its packages on this machine once
    (:meth:`start`: :mod:`gem_eval.agents.install`) and links its command into each
    episode's container (counted in the setup time). Harbor's adapter then runs with
    ``skip_install=True``, its commands in the container calling the endpoint at the
    URL the container reaches, the episode's token as its key. The version recorded is
    the pin gem-eval installed (Harbor's version command may find none with
    ``skip_install``).
    """

    def __init__(self) -> None:
        super().__init__()
        self.installer = make_installer(self.name)

    async def start(self) -> None:
        """The agent's packages (fetched and unpacked on first use), then Harbor's host.

        Raises:
            AgentError: The packages could not be fetched (``infra``).
            HarborUnavailable: As :meth:`HarborAgent.start`.
        """
        await self.installer.prepare()
        await super().start()

    def agent_kwargs(self, episode: AgentEpisode) -> dict[str, Any]:
        return {"skip_install": True}

    def agent_config(self, episode: AgentEpisode) -> dict[str, Any]:
        """The endpoint as the container reaches it (``harbor run --base-url``) and the
        episode's token in the agent's environment (``--ae OPENAI_API_KEY=``)."""
        return {"base_url": episode.sandbox_base_url, "env": {"OPENAI_API_KEY": episode.api_key}}

    async def play(self, episode: AgentEpisode) -> AgentResult:
        installed = await self.installer.install(episode.sandbox)
        try:
            result = await super().play(episode)
        except AgentError as exc:
            if exc.result is not None:
                _note_install(exc.result, installed)
            raise
        return _note_install(result, installed)

    def describe(self) -> dict[str, Any]:
        return {"version": self.installer.version, **super().describe()} | {
            "install": self.installer.describe()
        }


def _note_install(result: AgentResult, installed: Installed) -> AgentResult:
    """The install counted in the setup time; the installed pin as the version."""
    result.setup_s += installed.seconds
    if result.version not in (None, installed.version):
        result.info["reported_version"] = result.version
    result.version = installed.version
    result.info["install_s"] = installed.seconds
    return result


class MiniSweAgent(InstalledAgent):
    """mini-swe-agent from PyPI, on the image's ``python3``: one ``bash`` tool, whole
    (not streamed) Chat Completions, done on ``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``."""

    name = "mini-swe-agent"
    harbor_name = "mini-swe-agent"
    source = (
        f"PyPI: mini-swe-agent {MINI_SWE_AGENT_VERSION}, installed in the container "
        f"(Harbor {HARBOR_VERSION}'s adapter)"
    )
    records = "every model call, its tool calls and what they printed, its trajectory and log"


class QwenCode(InstalledAgent):
    """Qwen Code from the npm registry on Node 22: its own tools, streamed Chat
    Completions. Harbor names it ``qwen-coder``."""

    name = "qwen-code"
    harbor_name = "qwen-coder"
    source = (
        f"npm: @qwen-code/qwen-code {QWEN_CODE_VERSION} on Node 22, installed in the "
        f"container (Harbor {HARBOR_VERSION}'s adapter)"
    )
    records = "every model call (streamed), its tool calls and their results, its session and log"
