"""Replaying recorded episodes: the executor re-scoring plays them with, and the check
that a replay stayed the recorded episode.

:class:`ReplayExecutor` is the run's :class:`~gem_eval.runner.executor.LocalExecutor`
(fresh env from the registry, tools and sandboxes from the provisioner, the same agent
loop) with each episode's model replaced by a
:class:`~gem_eval.models.replay.ReplayModel` of its record: the env grades the recorded
answers again and no model is called. Which env cannot be replayed so (a hosted task,
graded on a container's final state) is :func:`is_hosted`'s to say.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from gem_eval.core import Env
from gem_eval.envs.hosted import HostedEnv
from gem_eval.errors import GemEvalError
from gem_eval.models.base import GenerateConfig, Message, Model, ModelOutput, ToolSchema
from gem_eval.models.replay import ReplayModel
from gem_eval.records import EpisodeRecord, EpisodeSpec
from gem_eval.registration import spec as env_spec
from gem_eval.runner.executor import LocalExecutor
from gem_eval.runner.judging import Judges
from gem_eval.runner.provision import Provisioner
from gem_eval.trajectory import Trajectory

# The episode an executor task is replaying. The executor keeps one model per name,
# shared by that model's episodes, and binds it to an episode through `for_episode(env)`;
# each episode runs in its own asyncio task (its own context), so the replay set here at
# the start of `run` is the one the binding finds.
_REPLAY: ContextVar[ReplayModel | None] = ContextVar("gem_eval_replay", default=None)


class _Replays(Model):
    """The executor's model of one name: binds each episode to its own replay."""

    def __init__(self, name: str) -> None:
        self.name = name

    def for_episode(self, env: Env) -> Model:
        replay = _REPLAY.get()
        if replay is None:
            raise GemEvalError("a replayed episode has no record to replay")
        return replay

    async def generate(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        config: GenerateConfig | None = None,
    ) -> ModelOutput:
        raise GemEvalError("re-scoring makes no model call")


class ReplayExecutor(LocalExecutor):
    """Plays recorded episodes again, each with its recorded model outputs.

    Args:
        recorded: The records to replay, by episode key (each with its trajectory).
        provisioner: Tools and sandboxes, as the recorded run had them.

    Attributes:
        replays: The replay model of every episode started, by key (``overrun`` says
            whether the replay left the record).
    """

    def __init__(self, recorded: dict[str, EpisodeRecord], provisioner: Provisioner) -> None:
        from gem_eval.runner.session import default_model_factory

        super().__init__(lambda spec: _Replays(spec.name), provisioner)
        # The judged models are replayed, but a `scorer: judge` task is judged again by
        # its judge: a real model, called.
        self.judges = Judges(default_model_factory)
        self.recorded = recorded
        self.replays: dict[str, ReplayModel] = {}

    async def run(self, run_id: str, spec: EpisodeSpec) -> EpisodeRecord:
        trajectory = self.recorded[spec.key].trajectory
        if trajectory is None:
            raise ValueError(f"episode {spec.key} has no trajectory to replay")
        replay = ReplayModel(trajectory, spec.model.name)
        self.replays[spec.key] = replay
        _REPLAY.set(replay)
        return await super().run(run_id, spec)


def is_hosted(env_id: str) -> bool:
    """Whether ``env_id``'s env is a :class:`~gem_eval.envs.hosted.HostedEnv` (graded on
    its sandbox's final state); read from the registry without making the env."""
    factory: Any = env_spec(env_id).load()
    return isinstance(factory, type) and issubclass(factory, HostedEnv)


def divergence(old: Trajectory, new: Trajectory, replay: ReplayModel) -> str | None:
    """Why the replay ``new`` of ``old`` is not the recorded episode, or ``None``.

    It diverged when the env asked for a turn the record lacks, or when what the model
    read from the env differs: the first observation (the task), or an observation of
    the env that the model answered later. Tool outputs are not compared (a sandbox's
    output may differ run to run); an env that ends the episode sooner is a new grade,
    not a divergence.
    """
    if replay.overrun:
        return f"the env asked for more turns than the {len(old.steps)} recorded"
    if new.initial_observation != old.initial_observation:
        return "the env's first observation (the task) differs from the recorded one"
    for before, after in zip(old.steps[:-1], new.steps[:-1]):
        if before.observation != after.observation:
            return f"turn {before.index + 1}: the env answered differently"
    return None
