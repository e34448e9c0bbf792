"""gem-eval: a Gym for agentic LLMs, and the harness that evaluates them.

The public API::

    import gem_eval
    env = gem_eval.make("game:Wordle-v0-easy")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("\\\\boxed{cat}")

    result = gem_eval.evaluate("smoke", models=["oracle"])   # a run, as `gem-eval run`
    print(result.leaderboard)
    verdict = gem_eval.gate(result.run_id, baseline="BASELINE-RUN-ID")   # as `gem-eval gate`
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gem_eval._version import __version__
from gem_eval.core import Env, Wrapper
from gem_eval.registration import EnvSpec, list_envs, make, register, spec

if TYPE_CHECKING:
    from gem_eval.evaluation import EvalResult, aevaluate, evaluate
    from gem_eval.gating import GateResult, gate
    from gem_eval.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv, VectorEnv, make_vec

_LAZY = {"AsyncVectorEnv", "AutoresetMode", "SyncVectorEnv", "VectorEnv", "make_vec"}
_EVALUATION = {"EvalResult", "aevaluate", "evaluate"}
_GATING = {"GateResult", "gate"}


def __getattr__(name: str) -> Any:
    # The vector envs pull in asyncio, evaluation the runner: loaded on first use, to keep
    # the CLI's start fast.
    if name in _LAZY:
        from gem_eval import vector

        return getattr(vector, name)
    if name in _EVALUATION:
        from gem_eval import evaluation

        return getattr(evaluation, name)
    if name in _GATING:
        from gem_eval import gating

        return getattr(gating, name)
    raise AttributeError(f"module 'gem_eval' has no attribute {name!r}")


__all__ = [
    "AsyncVectorEnv",
    "AutoresetMode",
    "Env",
    "EnvSpec",
    "EvalResult",
    "GateResult",
    "SyncVectorEnv",
    "VectorEnv",
    "Wrapper",
    "__version__",
    "aevaluate",
    "evaluate",
    "gate",
    "list_envs",
    "make",
    "make_vec",
    "register",
    "spec",
]
