"""The env registry: ``register``, ``make``, ``spec``, ``list_envs``.

Ids read ``family:Name-vN[-variant]``, as GEM spells them (``game:Wordle-v0-easy``).
Entry points are ``"module.path:ClassName"`` strings imported only when an env is
made, or any callable returning an :class:`~gem_eval.core.Env`.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gem_eval.core import Env
from gem_eval.errors import (
    EnvArgumentError,
    RegistrationError,
    UnknownEnvError,
    did_you_mean,
)

ENV_ID_RE = re.compile(
    r"^(?:(?P<family>[A-Za-z][\w.]*):)?(?P<name>[A-Za-z][\w.]*)-v(?P<version>\d+)"
    r"(?:-(?P<variant>[\w-]+))?$"
)

EntryPoint = str | Callable[..., Env]


@dataclass(frozen=True)
class EnvSpec:
    """What :func:`make` needs to build one registered env.

    Attributes:
        id: The full id, e.g. ``game:Wordle-v0-easy``.
        entry_point: ``"module:Class"`` or a callable returning an env.
        kwargs: Default keyword arguments for the entry point.
        description: One line for ``gem-eval envs list``.
    """

    id: str
    entry_point: EntryPoint
    kwargs: dict[str, Any] = field(default_factory=dict)
    description: str = ""

    @property
    def family(self) -> str:
        return self._part("family") or ""

    @property
    def name(self) -> str:
        return self._part("name") or ""

    @property
    def version(self) -> int:
        return int(self._part("version") or 0)

    @property
    def variant(self) -> str | None:
        return self._part("variant")

    def _part(self, group: str) -> str | None:
        match = ENV_ID_RE.match(self.id)
        return match.group(group) if match else None

    def load(self) -> Callable[..., Env]:
        """Import and return the entry point."""
        if callable(self.entry_point):
            return self.entry_point
        module_name, _, attr = self.entry_point.partition(":")
        try:
            return getattr(importlib.import_module(module_name), attr)  # type: ignore[no-any-return]
        except (ImportError, AttributeError) as exc:
            raise RegistrationError(
                f"entry point {self.entry_point!r} of {self.id} cannot be loaded: {exc}"
            ) from exc


_REGISTRY: dict[str, EnvSpec] = {}


def register(
    id: str,
    entry_point: EntryPoint,
    *,
    description: str = "",
    override: bool = False,
    **kwargs: Any,
) -> EnvSpec:
    """Register an env under ``id``; extra keyword arguments become its defaults.

    Raises:
        RegistrationError: The id is malformed, or taken and ``override`` is false.
    """
    _ensure_builtins()  # so that a clash with a bundled id is caught here, not later
    if not ENV_ID_RE.match(id):
        raise RegistrationError(
            f"env id {id!r} does not read '[family:]Name-vN[-variant]' (e.g. game:Wordle-v0-easy)"
        )
    if isinstance(entry_point, str) and ":" not in entry_point:
        raise RegistrationError(f"entry point {entry_point!r} must read 'module.path:Name'")
    if id in _REGISTRY and not override:
        raise RegistrationError(f"env id {id!r} is already registered")
    env_spec = EnvSpec(id, entry_point, dict(kwargs), description)
    _REGISTRY[id] = env_spec
    return env_spec


def spec(id: str) -> EnvSpec:
    """Return the spec registered under ``id`` (case-insensitive as a fallback).

    Raises:
        UnknownEnvError: No such id; the message names the closest registered ids.
    """
    _ensure_builtins()
    if id in _REGISTRY:
        return _REGISTRY[id]
    folded = [s for key, s in _REGISTRY.items() if key.lower() == id.lower()]
    if len(folded) == 1:
        return folded[0]
    raise UnknownEnvError(f"unknown env id {id!r}.{did_you_mean(id, _REGISTRY)}")


def make(id: str, **overrides: Any) -> Env:
    """Build the env registered under ``id``; ``overrides`` replace its defaults.

    Raises:
        UnknownEnvError: ``id`` is not registered.
        EnvArgumentError: An override is not a parameter of the env, or the env
            rejected its value.
    """
    env_spec = spec(id)
    factory = env_spec.load()
    kwargs = {**env_spec.kwargs, **overrides}
    _check_kwargs(env_spec.id, factory, kwargs)
    try:
        env = factory(**kwargs)
    except (ValueError, TypeError) as exc:  # a setting of the wrong type or out of range
        raise EnvArgumentError(f"{env_spec.id}: {exc}") from exc
    env.unwrapped.spec = env_spec
    return env


def list_envs(family: str | None = None) -> list[str]:
    """All registered ids, sorted; only those of ``family`` when given."""
    _ensure_builtins()
    return sorted(i for i, s in _REGISTRY.items() if family is None or s.family == family)


def accepted_kwargs(factory: Callable[..., Env]) -> set[str] | None:
    """Keyword names ``factory`` accepts, following ``**kwargs`` up a class's MRO.

    ``None`` means "cannot tell" (a plain function taking ``**kwargs``).
    """
    callables = (
        [c.__dict__["__init__"] for c in inspect.getmro(factory) if "__init__" in c.__dict__]
        if inspect.isclass(factory)
        else [factory]
    )
    names: set[str] = set()
    for func in callables:
        try:
            params = inspect.signature(func).parameters.values()
        except (TypeError, ValueError):
            return None
        names.update(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            return names - {"self"}
    return None


def _check_kwargs(env_id: str, factory: Callable[..., Env], kwargs: dict[str, Any]) -> None:
    accepted = accepted_kwargs(factory)
    if accepted is None:
        return
    for key in kwargs:
        if key not in accepted:
            hint = did_you_mean(key, accepted)
            raise EnvArgumentError(f"{env_id} takes no parameter {key!r}.{hint}")


_builtins_loaded = False


def _ensure_builtins() -> None:
    """Register the bundled envs on first use (their modules are not imported)."""
    global _builtins_loaded
    if not _builtins_loaded:
        _builtins_loaded = True  # set first: the bundled module calls register() itself
        try:
            importlib.import_module("gem_eval.envs")
        except BaseException:
            _builtins_loaded = False
            raise
