"""gem-eval: a Gym for agentic LLMs, and the harness that evaluates them.

The public API::

    import gem_eval
    env = gem_eval.make("game:Wordle-v0-easy")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("\\\\boxed{cat}")
"""

from __future__ import annotations

from gem_eval._version import __version__
from gem_eval.core import Env, Wrapper
from gem_eval.registration import EnvSpec, list_envs, make, register, spec
from gem_eval.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv, VectorEnv, make_vec

__all__ = [
    "AsyncVectorEnv",
    "AutoresetMode",
    "Env",
    "EnvSpec",
    "SyncVectorEnv",
    "VectorEnv",
    "Wrapper",
    "__version__",
    "list_envs",
    "make",
    "make_vec",
    "register",
    "spec",
]
