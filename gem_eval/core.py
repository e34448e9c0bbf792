"""The core contract: :class:`Env` and :class:`Wrapper`.

An env is a text-in / text-out episodic task::

    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("\\boxed{7}")

* ``terminated`` -- the episode reached an end state of the task (solved or lost).
* ``truncated`` -- it was cut short from outside the task (a turn or time limit).

Every env owns its own :class:`random.Random` (``env.rng``); seeding never touches the
global ``random`` state, so envs stepped in parallel threads stay reproducible.

Everything beyond ``reset``/``step`` (turn limits, chat history, statistics, tools) is a
:class:`Wrapper` that overrides one hook.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from typing import Any, ClassVar

StepResult = tuple[str, float, bool, bool, dict[str, Any]]
"""``(observation, reward, terminated, truncated, info)`` as returned by :meth:`Env.step`."""

ResetResult = tuple[str, dict[str, Any]]
"""``(observation, info)`` as returned by :meth:`Env.reset`."""

MAX_SEED = 2**32 - 1
"""The largest base seed a run takes (``--seed``, a suite's ``defaults.seed``): what
seeded libraries such as numpy take, and what the results index stores with room to spare."""


class Env(ABC):
    """A text environment for LLM agents.

    Subclasses implement :meth:`reset` and :meth:`step`. They must call
    ``super().reset(seed)`` first thing in ``reset`` so that ``self.rng`` is (re)seeded.

    Attributes:
        rng: The env's private random generator. Seeded by ``reset(seed)``; when
            ``reset()`` gets no seed the generator carries on from where it was
            (so a sequence of episodes is reproducible from the first seed).
        blocking: Class flag. ``True`` when ``step`` waits on I/O (containers,
            servers): async callers then run it in a worker thread instead of on the
            event loop.
        spec: The registry spec this env was made from, set by :func:`gem_eval.make`.
    """

    blocking: ClassVar[bool] = False
    spec: Any = None

    def __init__(self) -> None:
        self.rng = random.Random()

    @abstractmethod
    def reset(self, seed: int | None = None) -> ResetResult:
        """Start a new episode; return the first observation and an info dict."""
        if seed is not None:
            self.rng = random.Random(seed)
        return "", {}

    @abstractmethod
    def step(self, action: str) -> StepResult:
        """Apply one agent action; return ``(obs, reward, terminated, truncated, info)``.

        Implementations never raise on a malformed action: they answer it with a
        format-error reward and an observation that explains what was wrong.
        """

    async def areset(self, seed: int | None = None) -> ResetResult:
        """Async :meth:`reset`; runs in a thread when the env is ``blocking``."""
        if self.blocking:
            import asyncio  # not at module level: it slows every CLI start

            return await asyncio.to_thread(self.reset, seed)
        return self.reset(seed)

    async def astep(self, action: str) -> StepResult:
        """Async :meth:`step`; runs in a thread when the env is ``blocking``."""
        if self.blocking:
            import asyncio

            return await asyncio.to_thread(self.step, action)
        return self.step(action)

    def close(self) -> None:  # noqa: B027 - optional hook, empty by design
        """Release resources (containers, processes). Safe to call twice."""

    def turn_limit(self) -> int | None:
        """The most steps an episode can take before the env itself ends it.

        Optional: ``None`` (the default) means no limit of its own, only the harness's
        ``max_turns``. An env with one (a game's guesses, a question's answers) returns
        it from its settings, before any reset; one that draws its limit per episode
        returns the largest it may draw. A cost estimate (``run --dry-run``) bounds an
        episode's model calls by it. Steps, not calls: a model with tools may be called
        several times between two steps.
        """
        return None

    @property
    def unwrapped(self) -> Env:
        """The innermost env (itself, for an env that is not a wrapper)."""
        return self

    @property
    def native_async(self) -> bool:
        """True when the env has async methods of its own (an overridden ``astep``)."""
        return type(self).astep is not Env.astep

    def __enter__(self) -> Env:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __str__(self) -> str:
        env_id = getattr(self.spec, "id", None)
        return f"<{type(self).__name__}<{env_id}>>" if env_id else f"<{type(self).__name__}>"


class Wrapper(Env):
    """Wraps an env to change one aspect of it; forwards everything else.

    Override one hook: :meth:`on_reset` (sees the reset result) or :meth:`on_step` (sees
    the action and the step result). The hooks serve ``reset``/``step`` and
    ``areset``/``astep`` alike, so a wrapper keeps a natively async env async. (A wrapper
    that must decide whether to call the env at all overrides ``step`` and ``astep``.)
    Attribute look-ups that the wrapper does not define fall through to the wrapped env,
    so ``wrapper.max_turns`` reads the game's setting.
    """

    def __init__(self, env: Env) -> None:  # no super().__init__: the rng lives inside
        self.env = env

    def on_reset(self, result: ResetResult) -> ResetResult:
        """Change what ``reset`` returns (default: nothing)."""
        return result

    def on_step(self, action: str, result: StepResult) -> StepResult:
        """Change what ``step`` returns (default: nothing)."""
        return result

    def reset(self, seed: int | None = None) -> ResetResult:
        return self.on_reset(self.env.reset(seed))

    def step(self, action: str) -> StepResult:
        return self.on_step(action, self.env.step(action))

    async def areset(self, seed: int | None = None) -> ResetResult:
        return self.on_reset(await self.env.areset(seed))

    async def astep(self, action: str) -> StepResult:
        return self.on_step(action, await self.env.astep(action))

    @property
    def native_async(self) -> bool:
        return self.env.native_async

    def close(self) -> None:
        self.env.close()

    def turn_limit(self) -> int | None:
        return self.env.turn_limit()

    @property
    def blocking(self) -> bool:  # type: ignore[override]
        return self.env.blocking

    @property
    def rng(self) -> random.Random:  # type: ignore[override]
        return self.env.rng

    @property
    def spec(self) -> Any:
        return self.env.spec

    @property
    def unwrapped(self) -> Env:
        return self.env.unwrapped

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
        return getattr(self.env, name)

    def __str__(self) -> str:
        return f"<{type(self).__name__}{self.env}>"
