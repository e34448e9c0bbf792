"""The plain, serialisable data a run is made of: what to play, and what happened.

* :class:`EpisodeSpec` -- one episode to play: the task (env id + settings + seed), the
  model, the sample and epoch. An executor needs nothing else, so episodes can be sent to
  other processes or machines (Ray) as they are.
* :class:`EpisodeRecord` -- one finished episode: its scores and its full trajectory. One
  line of ``results/<run-id>/episodes.jsonl``.
* :class:`RunManifest` -- ``results/<run-id>/manifest.json``.

All are versioned pydantic models (``schema_version``); the file formats are a contract.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr, field_validator, model_validator

from gem_eval.judge import JudgeSpec, JudgeVerdict
from gem_eval.models.backends import default_backend
from gem_eval.models.paid_replies import PaidReplies
from gem_eval.outcomes import Outcome, is_scored
from gem_eval.trajectory import Trajectory

RECORD_SCHEMA_VERSION = 1

DEFAULT_AGENT = "gem-eval"
"""The agent of a task that names none: gem-eval's own loop (:func:`gem_eval.agent.run_episode`)."""

Scorer = Literal["success", "return", "discounted_return", "judge"]
"""How an episode's ``score`` is computed from its trajectory.

* ``success``: 1.0 when the env reported success, else 0.0 (the default).
* ``return``: the undiscounted sum of rewards.
* ``discounted_return``: the sum of ``gamma**t * r_t``.
* ``judge``: the grade a judge model gives the final answer (the task's ``judge``; see
  :mod:`gem_eval.judge`).
"""


class TokenPrice(BaseModel):
    """What a model's tokens cost, in USD per million tokens, as a user gave it
    (``--price MODEL=IN,OUT``, a models entry's ``price:``): for a model litellm has no
    price for (a self-hosted checkpoint), or to override litellm's."""

    input: float = Field(ge=0, allow_inf_nan=False)
    """USD per million input (prompt) tokens."""
    output: float = Field(ge=0, allow_inf_nan=False)
    """USD per million output (completion) tokens."""

    def cost_usd(self, input_tokens: float, output_tokens: float) -> float:
        """USD for these tokens."""
        return (input_tokens * self.input + output_tokens * self.output) / 1e6


class ModelSpec(BaseModel):
    """A model as the run was asked to use it (never holds an API key).

    Attributes:
        args: Generation settings for this model (``-M key=value``), on top of the
            task's.
        max_retries: Retries of a failed call; ``None``: the default policy.
        timeout_s: Per-call timeout; ``None``: the default policy.
        max_connections: Calls in flight to this model at first (the limit backs off
            on 429s and recovers); ``None``: the run's ``--concurrency``.
        api_key_env: The environment variable holding the API key (its name, never
            its value); ``None``: the provider's usual variable.
        price: What its tokens cost, as the user gave it (over litellm's price);
            ``None``: litellm's price, if any.
        backend: The client its calls go through (``openai``: the direct one;
            ``litellm``); not given: :func:`~gem_eval.models.backends.default_backend`
            of its name and base URL, fixed when the spec is made (a manifest keeps it).
    """

    name: str
    base_url: str | None = None
    backend: str = ""
    args: dict[str, Any] = Field(default_factory=dict)
    max_retries: int | None = None
    timeout_s: float | None = None
    max_connections: int | None = Field(default=None, ge=1)
    api_key_env: str | None = None
    price: TokenPrice | None = None

    @field_validator("backend", mode="before")
    @classmethod
    def _no_backend(cls, value: Any) -> Any:
        return "" if value is None else value

    @model_validator(mode="after")
    def _backend(self) -> ModelSpec:
        if not self.backend:
            self.backend = default_backend(self.name, self.base_url)
        return self


class LimitsSpec(BaseModel):
    """Per-episode limits (see :class:`gem_eval.agent.Limits`)."""

    max_turns: int | None = 50
    max_tokens: int | None = None
    max_time_s: float | None = None
    max_cost_usd: float | None = None


class ToolSpec(BaseModel):
    """One entry of a task's ``tools:``: a tool kit's name and its settings.

    YAML writes ``python`` or ``{name: search, corpus: docs.jsonl}``; both read as this.
    """

    name: str
    settings: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _from_yaml(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"name": value}
        if isinstance(value, dict) and set(value) - {"name", "settings"}:
            rest = {k: v for k, v in value.items() if k != "name"}
            return {"name": value.get("name"), "settings": rest}
        return value


Condition = Literal["service_started", "service_healthy", "service_completed_successfully"]
"""When a service counts as ready for one that depends on it (compose's ``depends_on``)."""


class HealthSpec(BaseModel):
    """A sidecar's health check (compose's ``healthcheck``), run by Docker.

    Attributes:
        test: Docker's form: ``["CMD", prog, args...]`` or ``["CMD-SHELL", "line"]``.
        interval_s, timeout_s: Between checks; the most one check may take.
        retries: Failures in a row that make the service unhealthy.
        start_s: Failures that do not count at first.
    """

    test: list[str]
    interval_s: float = 30.0
    timeout_s: float = 30.0
    retries: int = 3
    start_s: float = 0.0


class SidecarSpec(BaseModel):
    """A service that runs beside a sandbox's container (a database, a web server), on
    the episode's private network, where its ``name`` is a host name (see
    :mod:`gem_eval.sandbox.docker_sidecars`).

    Attributes:
        name: The service's name (compose's), which the container reaches it by.
        image: The image (an ``--image-map`` key may replace it); or ``build``.
        build: A build context directory; ``dockerfile`` the Dockerfile's name there.
        command, entrypoint: Replace the image's (``None``: the image's own).
        env: Environment variables.
        user, workdir: Replace the image's (``None``: the image's own).
        aliases: More host names for it.
        files: Paths in the sidecar filled from the task's files or directories before
            it starts (compose's bind mounts, copied: no host path is mounted).
        healthcheck: Its health check (``None``: the image's own, if any).
        depends_on: Services (``main`` or the main service's name for the sandbox's
            container) that must be ready before it starts.
        memory, cpus, pids: Its own limits; never above the sandbox container's.
    """

    name: str
    image: str | None = None
    build: str | None = None
    dockerfile: str = "Dockerfile"
    command: list[str] | None = None
    entrypoint: list[str] | None = None
    env: dict[str, str] = Field(default_factory=dict)
    user: str | None = None
    workdir: str | None = None
    aliases: list[str] = Field(default_factory=list)
    files: dict[str, str] = Field(default_factory=dict)
    healthcheck: HealthSpec | None = None
    depends_on: dict[str, Condition] = Field(default_factory=dict)
    memory: str | None = None
    cpus: float | None = None
    pids: int | None = None

    @model_validator(mode="after")
    def _has_an_image(self) -> SidecarSpec:
        if self.image is None and self.build is None:
            raise ValueError(f"sidecar {self.name!r} needs an image or a build directory")
        return self


class SandboxSpec(BaseModel):
    """``sandbox:``: where a task's tools run (see :mod:`gem_eval.sandbox`).

    Attributes:
        type: ``docker`` (a container per episode), ``local`` (bubblewrap on this
            machine) or ``none``.
        image: Docker image (default: the base image of ``gem-eval sandbox build-base``).
        build: A directory with a ``Dockerfile`` to build the image from (cached by its
            content; ``FROM`` must name a local image).
        dockerfile: The Dockerfile's name in ``build``.
        image_map: Base images substituted in ``FROM`` lines when building
            (``{"python:3*": "gem-eval/tb:bookworm"}``, see
            :mod:`gem_eval.sandbox.image_map`).
        network: Allow network access (off by default).
        memory: Memory limit, e.g. ``1g``.
        cpus: CPU limit.
        pids: Process limit.
        user: The user commands run as.
        env: Environment variables of the container (``docker`` only).
        workdir: The working directory.
        unsafe: ``local`` only: run without bubblewrap (no isolation).
        per: ``episode`` (a fresh sandbox each) or ``task`` (one shared by the task's
            episodes).
        max_sandboxes: Sandboxes alive at once (default: the kind's default concurrency).
        output_limit: Bytes of output kept per command.
        sidecars: Services started beside the container on a private network per
            episode (``docker`` only; a compose task's database or web server).
        hostname: The container's host name on that network (compose's service name).
        depends_on: The sidecars that must be ready before the container starts.
        agent_program: An agent program plays in it (set by the run for ``--agent``, see
            :mod:`gem_eval.agents`): the container reaches the run's model endpoint, and
            only it when the network is off, and sees the installed agents' files
            read-only (``docker`` only).
    """

    type: Literal["docker", "local", "none"] = "docker"
    image: str | None = None
    build: str | None = None
    dockerfile: str = "Dockerfile"
    image_map: dict[str, str] = Field(default_factory=dict)
    network: bool = False
    memory: str = "1g"
    cpus: float = Field(default=1.0, gt=0)
    pids: int = Field(default=256, ge=8)
    user: str = "agent"
    env: dict[str, str] = Field(default_factory=dict)
    workdir: str = "/workspace"
    unsafe: bool = False
    per: Literal["episode", "task"] = "episode"
    max_sandboxes: int | None = Field(default=None, ge=1)
    output_limit: int = Field(default=65536, ge=1024)
    sidecars: list[SidecarSpec] = Field(default_factory=list)
    hostname: str | None = None
    depends_on: dict[str, Condition] = Field(default_factory=dict)
    agent_program: bool = False


class TaskSpec(BaseModel):
    """One task of a suite, resolved: everything needed to build its env and score it."""

    id: str
    env_id: str
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    category: str | None = None
    tags: list[str] = Field(default_factory=list)
    tools: list[ToolSpec] = Field(default_factory=list)
    sandbox: SandboxSpec | None = None
    tool_mode: Literal["native", "text"] = "native"
    system_prompt: str | None = None
    limits: LimitsSpec = Field(default_factory=LimitsSpec)
    generation: dict[str, Any] = Field(default_factory=dict)
    scorer: Scorer = "success"
    gamma: float = 1.0
    judge: JudgeSpec | None = None
    """The judge model and rubric of ``scorer: judge``."""
    agent: str = DEFAULT_AGENT
    """Who plays the task: gem-eval's own loop, or an agent program (``--agent``, see
    :mod:`gem_eval.agents`). Not part of what a sample is: runs of two agents on the same
    samples compare pair by pair, as runs of two models do."""
    agent_max_turns: int | None = None
    """A cap on an agent program's turns (Terminus-2's ``max_turns``; ``tasks check
    --agent`` sets one); ``None``: the agent's own limit, as the field runs it (Harbor's
    Terminus-2 has none). gem-eval's own loop keeps ``limits.max_turns``. Like ``agent``,
    not part of what a sample is."""


class EpisodeSpec(BaseModel):
    """One episode to play. ``key`` is unique within a run and stable across resumes."""

    key: str
    task: TaskSpec
    model: ModelSpec
    sample: int
    epoch: int
    seed: int | None
    sample_kwargs: dict[str, Any] = Field(default_factory=dict)
    attempt: int = 1
    """Which time this episode is played (earlier ones ended in a capped outcome)."""
    last_attempt: bool = False
    """No replay follows this one if it ends in a capped outcome (``--max-attempts``)."""
    paid_replies: PaidReplies | None = None
    """The calls its earlier attempts made before they were cut (``--resume``): replayed
    while the episode asks what it asked then, not paid for again (see
    :mod:`gem_eval.models.paid_replies`)."""

    @staticmethod
    def make_key(model: str, task_id: str, sample: int, epoch: int) -> str:
        return f"{model}|{task_id}|{sample}|{epoch}"

    def env_kwargs(self) -> dict[str, Any]:
        """The env's keyword arguments: the task's ``args`` and the sample's fields.

        Raises:
            EnvArgumentError: A sample field is one of the task's ``args`` too.
        """
        from gem_eval.errors import EnvArgumentError

        both = [k for k in self.sample_kwargs if k in self.task.env_kwargs]
        if both:
            raise EnvArgumentError(
                f"{self.task.env_id}: {both[0]!r} is both in the task's args and a field "
                "of its dataset rows"
            )
        return {**self.task.env_kwargs, **self.sample_kwargs}


class EpisodeRecord(BaseModel):
    """One finished episode: one line of ``episodes.jsonl``."""

    schema_version: int = RECORD_SCHEMA_VERSION
    run_id: str
    key: str
    model: str
    task_id: str
    category: str | None = None
    sample: int
    epoch: int
    seed: int | None = None
    outcome: Outcome
    """How it ended: see :mod:`gem_eval.outcomes`."""
    score: float | None
    success: bool
    turns: int
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    """What its model's calls cost: every call of the episode, those replayed from an
    earlier attempt included (see ``replayed_cost_usd``)."""
    latency_s: float = 0.0
    retries: int = 0
    replayed_calls: int = 0
    """Calls answered from an earlier attempt's record (``--resume`` of an episode that was
    cut mid-way): made and paid for then, not now."""
    replayed_cost_usd: float = 0.0
    """What those calls cost (part of ``cost_usd``): counted in the earlier record."""
    attempt: int = 1
    """Which time the episode was played (``--resume`` replays capped outcomes)."""
    gave_up: bool = False
    """A capped outcome on the last attempt: ``--resume`` will not play it again."""
    started_at: float
    finished_at: float
    phases: dict[str, float] = Field(default_factory=dict)
    """Seconds spent in each phase of the episode (sandbox start, set-up, the agent, the
    verifier, the audit, teardown ...: see :mod:`gem_eval.phases`), those it went through."""
    attachments: list[str] = Field(default_factory=list)
    """Files kept with the episode (a terminal session's asciinema cast), as paths
    relative to the run's directory."""
    trajectory: Trajectory | None = None
    judge: JudgeVerdict | None = None
    """The judge's verdict (``scorer: judge``): its grade, reply, tokens and cost, kept
    apart from the model's (``input_tokens`` and ``cost_usd`` are the model's only)."""
    _files: dict[str, str] = PrivateAttr(default_factory=dict)

    def attach(self, files: dict[str, str]) -> None:
        """Files (name -> text) to keep with the episode; the run's directory writes
        them when it appends the record (see :mod:`gem_eval.store.run_dir`)."""
        self._files.update(files)

    def take_files(self) -> dict[str, str]:
        """The files :meth:`attach` was given and not yet written; forgets them."""
        files, self._files = self._files, {}
        return files

    @property
    def scored(self) -> bool:
        """Whether the episode counts in scores (see :mod:`gem_eval.outcomes`)."""
        return is_scored(self.outcome)

    @property
    def total_cost_usd(self) -> float:
        """What the episode cost: its model's calls (unpriced ones: nothing) and its
        judge's."""
        judge = self.judge.usage.cost_usd if self.judge is not None else None
        return (self.cost_usd or 0.0) + (judge or 0.0)

    @property
    def spent_usd(self) -> float:
        """What the run paid when this record was played: :attr:`total_cost_usd` but the
        calls replayed from an earlier attempt, whose record counts them."""
        return self.total_cost_usd - self.replayed_cost_usd


EPISODE_COLUMNS = [
    "run_id",
    "key",
    "model",
    "task_id",
    "category",
    "sample",
    "epoch",
    "outcome",
    "score",
    "success",
    "turns",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "latency_s",
    "retries",
    "attempt",
    "gave_up",
]
"""The per-episode columns of the index (and of leaderboard data frames), in order."""


RunStatus = Literal[
    "running", "finished", "incomplete", "interrupted", "budget_exhausted", "failed"
]
"""``finished``: every episode was played and scored. ``incomplete``: every episode was
played, some not scored (``--resume`` plays those again). ``interrupted``: Ctrl-C or
SIGTERM. ``budget_exhausted``: ``--max-cost`` stopped it. ``failed``: a configuration
error stopped it, gem-eval failed (``harness_error``, a full disk), or it crashed."""


class RunManifest(BaseModel):
    """``results/<run-id>/manifest.json``: what a run was and how it went."""

    schema_version: int = RECORD_SCHEMA_VERSION
    run_id: str
    suite: str
    suite_path: str | None = None
    suite_hash: str
    models: list[ModelSpec]
    tasks: list[TaskSpec]
    episodes_planned: int
    seed: int | None = None
    epochs: int = 1
    gem_eval_version: str
    git_commit: str | None = None
    host: str
    started_at: float
    finished_at: float | None = None
    status: RunStatus = "running"
    error: str | None = None
    """Why the run failed or stopped early (one line), when it did."""
    max_cost_usd: float | None = None
    executor: str = "local"
    """Where the latest session played its episodes: ``local`` (this machine) or ``ray``
    (the nodes of a cluster: ``resources["ray"]`` names them); each resume's entry in
    ``sessions`` says its own."""
    resources: dict[str, Any] = Field(default_factory=dict)
    """Sandboxes (kinds, images) and tool kits (MCP server names and versions) used."""
    sessions: list[dict[str, Any]] = Field(default_factory=list)
    """One entry per ``--resume``: when, the connection settings it changed, the
    measured settings it changed with ``--force``, and its ``executor``."""
    extra: dict[str, Any] = Field(default_factory=dict)
