"""Play one episode of an env with a policy (no model) and keep it as a trajectory.

The episode is the same :class:`~gem_eval.trajectory.Trajectory` the agent loop
writes in its text mode (one step per action, the policy's action as the step's output
text and an assistant message, each observation a user message), so its returns and its
RL transitions are computed by one definition whoever played it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from gem_eval.core import Env
from gem_eval.models.base import ModelOutput
from gem_eval.policies import Policy
from gem_eval.trajectory import Step, Trajectory


def rollout(
    env: Env,
    policy: Policy,
    seed: int | None = None,
    max_turns: int = 1000,
    on_turn: Callable[[Trajectory], None] | None = None,
    name: str | None = None,
) -> Trajectory:
    """Reset ``env`` with ``seed`` and let ``policy`` act until the episode ends.

    Args:
        env: The env to play.
        policy: Picks each action.
        seed: Passed to ``env.reset``.
        max_turns: A safety stop for envs without a turn limit of their own; an episode
            stopped there is ``truncated`` by ``max_turns``.
        on_turn: Called with the trajectory after the reset and after every turn
            (the CLI renders as the game goes).
        name: The policy's name in the trajectory's ``model`` field (default: its class).
    """
    started = time.perf_counter()
    obs, info = env.reset(seed)
    traj = Trajectory(
        env_id=getattr(env.spec, "id", str(env)),
        model=name or type(policy).__name__,
        seed=seed,
        tool_mode="text",
        initial_observation=obs,
        messages=[{"role": "user", "content": obs}],
    )
    if on_turn:
        on_turn(traj)
    done = False
    while not done and len(traj.steps) < max_turns:
        action = policy(obs, env)
        obs, reward, terminated, truncated, info = env.step(action)
        traj.steps.append(
            Step(
                index=len(traj.steps),
                output=ModelOutput(text=action, finish_reason="stop"),
                action=action,
                observation=obs,
                reward=reward,
                terminated=terminated,
                truncated=truncated,
                info=info,
            )
        )
        done = terminated or truncated
        traj.messages.append({"role": "assistant", "content": action})
        if not done:
            traj.messages.append({"role": "user", "content": obs})
        if on_turn:
            on_turn(traj)
    if traj.steps:  # as the agent loop decides it
        last = traj.steps[-1]
        traj.success = bool(last.info.get("success", last.terminated and last.reward > 0))
    if not done:  # as the agent loop: an env's own end is ``completed``
        traj.outcome, traj.truncated_by = "truncated", "max_turns"
    traj.duration_s = time.perf_counter() - started
    return traj
