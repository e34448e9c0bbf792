"""Vector envs: step many envs as one, in a loop or on an event loop."""

from __future__ import annotations

from gem_eval.vector.async_vector_env import AsyncState, AsyncVectorEnv
from gem_eval.vector.make import make_vec
from gem_eval.vector.sync_vector_env import SyncVectorEnv
from gem_eval.vector.vector_env import AutoresetMode, VectorEnv

__all__ = [
    "AsyncState",
    "AsyncVectorEnv",
    "AutoresetMode",
    "SyncVectorEnv",
    "VectorEnv",
    "make_vec",
]
