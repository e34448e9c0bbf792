"""How long a task's prompt is, before any model sees it: for bounds on input tokens.

The prompt is the system prompt and the env's first observation. The observation is
measured by building the env and resetting it for a few samples (an env hosted in a
sandbox is not started: its instruction is read instead). Tokens are counted without a
tokenizer, at four characters a token plus a generous allowance per message for the
chat template. The env built also tells its own turn limit
(:meth:`~gem_eval.core.Env.turn_limit`), which bounds the model calls of an episode
without tools.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from gem_eval.records import EpisodeSpec, TaskSpec

CHARS_PER_TOKEN = 4
MESSAGE_TOKENS = 8
"""Tokens a chat template adds per message (role, separators): more than most use."""
SAMPLES_MEASURED = 8
"""Samples of a task whose first observation is measured; the longest counts."""
DEFAULT_OUTPUT_LIMIT = 65536
"""A tool's output kept per call without a ``sandbox:`` (the sandbox spec's default)."""


@dataclass(frozen=True)
class Prompt:
    """A task's prompt length and its growth per turn, in tokens.

    Attributes:
        tokens: The first call's input: the system prompt and the first observation.
        turn_tokens: What each later turn adds besides the reply: an observation taken
            as no longer than the first (a tool's output: its sandbox's output limit).
        note: How they were found.
        env_turns: The most model calls the env's own turn limit allows an episode (the
            largest of the samples measured); ``None`` when it has none, could not be
            built, or the model has tools (a tool call is a call without a step).
    """

    tokens: int
    turn_tokens: int
    note: str
    env_turns: int | None = None


@dataclass(frozen=True)
class FirstLook:
    """What a sample's env shows once built, before any model is called.

    Attributes:
        observation: Its first observation (a hosted env's instruction).
        turn_limit: Its own turn limit (:meth:`~gem_eval.core.Env.turn_limit`).
    """

    observation: str
    turn_limit: int | None


def tokens_of(text: str) -> int:
    """Tokens in ``text`` by the four-characters rule (rounded up)."""
    return -(-len(text) // CHARS_PER_TOKEN)


def measure_prompt(task: TaskSpec, specs: list[EpisodeSpec]) -> Prompt:
    """The prompt of ``task`` as the episodes ``specs`` would see it (see the module)."""
    looks = [look for look in map(first_look, specs[:SAMPLES_MEASURED]) if look is not None]
    if looks:
        observation = max(tokens_of(look.observation) for look in looks)
        how = f"first observation of {len(looks)} sample{'s' * (len(looks) > 1)}"
    else:
        observation = max(tokens_of(_settings_text(task, s)) for s in specs[:SAMPLES_MEASURED])
        how = "task settings as text"
    system = tokens_of(task.system_prompt or "")
    prompt = system + observation + 2 * MESSAGE_TOKENS
    tools = bool(task.tools) or _is_hosted(task.env_id)  # a hosted env's tools come with it
    # The samples measured stand for the rest: a dataset's rows set the question, not
    # the turn limit.
    limits = [look.turn_limit for look in looks if look.turn_limit is not None]
    env_turns = max(limits) if limits and len(limits) == len(looks) and not tools else None
    if tools:
        output_limit = task.sandbox.output_limit if task.sandbox else DEFAULT_OUTPUT_LIMIT
        turn = output_limit // CHARS_PER_TOKEN
        what = f"a tool's output up to {output_limit} bytes a turn; tool schemas not counted"
    else:
        turn, what = observation, "later observations no longer than the first"
    note = f"prompt ≈ {prompt} tokens ({how}, {CHARS_PER_TOKEN} chars a token); {what}"
    return Prompt(prompt, turn + 2 * MESSAGE_TOKENS, note, env_turns)


def first_look(spec: EpisodeSpec) -> FirstLook | None:
    """The env of ``spec``'s sample, built and reset (a hosted env's instruction is read
    instead: resetting it would start its sandbox); ``None`` when it fails to."""
    from gem_eval.envs.hosted import HostedEnv
    from gem_eval.registration import make

    task = spec.task
    try:
        env = make(task.env_id, **task.env_kwargs, **spec.sample_kwargs)
    except Exception:  # the run reports a broken task; the estimate falls back
        return None
    try:
        turn_limit = env.turn_limit()
        hosted = env.unwrapped
        if isinstance(hosted, HostedEnv):
            observation = hosted.instruction()
        else:
            observation, _ = env.reset(seed=spec.seed)
    except Exception:
        return None
    finally:
        env.close()
    return FirstLook(str(observation), turn_limit)


def _is_hosted(env_id: str) -> bool:
    from gem_eval.envs.hosted import HostedEnv
    from gem_eval.registration import spec

    try:
        factory = spec(env_id).load()
    except Exception:  # an unknown env: the run says so
        return False
    return isinstance(factory, type) and issubclass(factory, HostedEnv)


def _settings_text(task: TaskSpec, spec: EpisodeSpec) -> str:
    """The task's and the sample's settings as text: where a prompt's words come from
    when the env cannot be reset here (a dataset row's question, say)."""
    return json.dumps({**task.env_kwargs, **spec.sample_kwargs}, default=str)
