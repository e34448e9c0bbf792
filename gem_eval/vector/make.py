"""``make_vec``: build a vector env from registered ids."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from gem_eval.core import Env
from gem_eval.registration import make
from gem_eval.vector.async_vector_env import AsyncVectorEnv
from gem_eval.vector.sync_vector_env import SyncVectorEnv
from gem_eval.vector.vector_env import AutoresetMode, VectorEnv


def make_vec(
    ids_or_id: str | Sequence[str],
    num_envs: int | None = None,
    seed: int | None = None,
    *,
    mode: Literal["sync", "async"] = "sync",
    autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
    wrappers: Sequence[Callable[[Env], Env]] = (),
    **kwargs: Any,
) -> VectorEnv:
    """Make ``num_envs`` envs and step them as one.

    Args:
        ids_or_id: One env id for every sub-env, or one id per sub-env.
        num_envs: How many sub-envs (default 1, or the length of the id list).
        seed: The first ``reset()`` without a seed gives sub-env ``i`` the seed
            ``seed + i``.
        mode: ``"sync"`` (a loop; fastest for pure-Python envs) or ``"async"``.
        autoreset_mode: ``next_step``, ``same_step`` or ``disabled``.
        wrappers: Applied to each sub-env, innermost first.
        **kwargs: Overrides passed to every :func:`~gem_eval.make` call.
    """
    ids = [ids_or_id] if isinstance(ids_or_id, str) else list(ids_or_id)
    if num_envs is None:
        num_envs = len(ids)
    if len(ids) == 1:
        ids = ids * num_envs
    elif len(ids) != num_envs:
        raise ValueError(f"got {len(ids)} env ids for {num_envs} sub-envs")
    envs = []
    for env_id in ids:
        env = make(env_id, **kwargs)
        for wrap in wrappers:
            env = wrap(env)
        envs.append(env)
    if mode == "sync":
        return SyncVectorEnv(envs, autoreset_mode, seed)
    if mode == "async":
        return AsyncVectorEnv(envs, autoreset_mode, seed)
    raise ValueError(f"mode must be 'sync' or 'async', not {mode!r}")
