"""Agents that are not gem-eval's own loop: programs that act in the episode's sandbox
and call the run's model over HTTP (Terminus-2, installed CLI agents).

An :class:`Agent` is a small plug-in, like Harbor's: it is started once per run
(:meth:`Agent.start`: a helper process, packages fetched into the cache), then plays
each episode it is given (:meth:`Agent.play`) in a sandbox gem-eval started and will
grade, calling the model only through the episode's endpoint line (see
:mod:`gem_eval.endpoint`). gem-eval keeps what it does around any agent: the sandbox the
agent cannot void, the verifier and integrity audit, faults kept out of scores, the
budget, the response cache and the record (see :mod:`gem_eval.agents.episode`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from gem_eval.errors import GemEvalError

if TYPE_CHECKING:
    from gem_eval.records import TaskSpec
    from gem_eval.sandbox.base import Sandbox


class AgentError(GemEvalError):
    """The agent program failed to set up or run for a reason of its own (it crashed,
    its install failed): the episode is the agent's failure, scored by its end state,
    unless :attr:`infra` says the fault lies with the machinery (the helper process
    died, a package could not be fetched). :attr:`result` is what the agent reported
    before it failed (its times, files and turns), when it reported anything."""

    def __init__(
        self, message: str, *, infra: bool = False, result: AgentResult | None = None
    ) -> None:
        super().__init__(message)
        self.infra = infra
        self.result = result


@dataclass
class AgentEpisode:
    """What an agent gets to play one episode.

    Attributes:
        instruction: The task as the env states it (its first observation).
        sandbox: The episode's started sandbox (the env's setup is done).
        model: The model name to give the agent (``openai/<name>``: an OpenAI-compatible
            provider, whatever serves it behind the endpoint).
        base_url: The endpoint as the agent's process reaches it: ``host_base_url`` for
            an agent that runs on this machine, ``sandbox_base_url`` inside the sandbox.
        host_base_url: The endpoint from this machine.
        sandbox_base_url: The endpoint from inside the sandbox.
        api_key: The episode's token (never the real key).
        task: The task (its limits, generation settings).
        timeout_s: The agent's time (setup excluded); ``None``: no limit.
        logs_dir: A directory on this machine for the agent's own files (its trajectory,
            a terminal cast); they are attached to the record.
        model_limits: The run's model's context and output limits, as litellm's model
            map knows them under its real name (``model`` may name a model litellm does
            not know), in litellm's fields: ``max_input_tokens``, ``max_output_tokens``,
            ``max_tokens`` (see :mod:`gem_eval.agents.model_limits`). ``None``: litellm
            knows none; the agent keeps its own fallback.
        max_turns: A cap on the agent's turns (``tasks check --agent``, a task's
            ``agent_max_turns``), each agent applying it as its own turn limit;
            ``None``: the agent's own limit, as the field runs it.
    """

    instruction: str
    sandbox: Sandbox
    model: str
    host_base_url: str
    sandbox_base_url: str
    api_key: str
    task: TaskSpec
    timeout_s: float | None
    logs_dir: Path
    model_limits: dict[str, int] | None = None
    max_turns: int | None = None


@dataclass
class AgentResult:
    """How an agent's episode went, as the agent tells it.

    Attributes:
        setup_s: Seconds spent setting up (installing) before the agent ran.
        run_s: Seconds the agent ran.
        version: The agent's version, when known.
        timed_out: The agent ran out of its time and was stopped.
        files: Files of the agent's to keep with the record (name -> text).
        info: What else the agent reported (its turn count, summarisations ...).
        turns: The agent's own steps, for the report: each a dict of what it said and
            did (``analysis``, ``plan``, ``commands``, ``observation`` ...).
    """

    setup_s: float = 0.0
    run_s: float = 0.0
    version: str | None = None
    timed_out: bool = False
    files: dict[str, str] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    turns: list[dict[str, Any]] = field(default_factory=list)


class Agent(ABC):
    """A program that plays episodes of some task families.

    Attributes:
        name: How ``--agent`` and suites name it.
        families: The env id prefixes (``terminal``) of the tasks it can play.
        source: Where it comes from (``built in``, ``harbor 0.26.0 (PyPI)`` ...).
        records: What gem-eval records of its episodes.
    """

    name: ClassVar[str]
    families: ClassVar[tuple[str, ...]]
    source: ClassVar[str]
    records: ClassVar[str]

    def can_play(self, task: TaskSpec) -> bool:
        """Whether the agent can play ``task`` (its env family is one of :attr:`families`)."""
        return task.env_id.split(":", 1)[0] in self.families

    async def start(self) -> None:  # noqa: B027 - optional lifecycle hook
        """Before the first episode: start helpers, fetch packages into the cache."""

    @abstractmethod
    async def play(self, episode: AgentEpisode) -> AgentResult:
        """Set up and run the agent in ``episode.sandbox`` until it ends or its time is up.

        Raises:
            AgentError: The agent could not be set up or failed on its own.
        """

    def describe(self) -> dict[str, Any]:
        """What the run manifest records of the agent (its version, packages)."""
        return {"source": self.source}

    async def aclose(self) -> None:  # noqa: B027 - optional lifecycle hook
        """After the last episode: stop helpers."""
