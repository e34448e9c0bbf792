"""The γ bench's training loop in tiny settings (a few seconds in all)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from bench import gamma_binary_search as bench
from gem_eval import make
from gem_eval.core import StepResult, Wrapper
from gem_eval.rl import Transitions

TINY = bench.Config(steps=3, groups=4, per_group=2, eval_episodes=10)


class RecordRewards(Wrapper):
    """Keeps the rewards the env hands out, one list per episode."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.episodes: list[list[float]] = []

    def reset(self, seed: int | None = None) -> Any:
        self.episodes.append([])
        return super().reset(seed)

    def on_step(self, action: str, result: StepResult) -> StepResult:
        self.episodes[-1].append(result[1])
        return result


def test_the_estimator_sees_the_envs_rewards_discounted(monkeypatch: pytest.MonkeyPatch) -> None:
    env = RecordRewards(make(bench.ENV_ID))
    seen: list[Transitions] = []

    def spy(name: str, batch: Transitions) -> Any:
        seen.append(batch)
        return np.zeros_like(batch.returns)

    monkeypatch.setattr(bench, "advantages", spy)
    bench.train(env, TINY, 0.9, "rebn", seed=3)
    assert len(seen) == TINY.steps
    per_batch = TINY.groups * TINY.per_group
    for k, batch in enumerate(seen):
        expected: list[float] = []
        for rewards in env.episodes[k * per_batch : (k + 1) * per_batch]:
            total, back = 0.0, []
            for r in reversed(rewards):  # G_t = r_t + 0.9 G_{t+1}, by hand
                total = r + 0.9 * total
                back.append(total)
            expected += back[::-1]
        assert batch.returns.tolist() == pytest.approx(expected, rel=1e-12)
        assert len(set(batch.episode.tolist())) == per_batch
        assert batch.group is not None and len(set(batch.group.tolist())) == TINY.groups


def test_the_policy_gradient_matches_finite_differences() -> None:
    rng = random.Random(0)
    policy = bench.SplitPolicy.near_uniform(20, np.random.default_rng(1))
    policy.theta = policy.theta + np.random.default_rng(2).normal(0, 1, policy.theta.shape)
    policy.refresh()
    env = make(bench.ENV_ID)
    episodes = [bench.play(env, policy, seed, rng) for seed in range(6)]
    n = sum(len(e.rewards) for e in episodes)
    adv = np.random.default_rng(3).normal(0, 1, n)
    buckets = [b for e in episodes for b in e.buckets]
    actions = [a for e in episodes for a in e.actions]

    def surrogate(theta: np.ndarray) -> float:  # sum_t A_t log pi(a_t | b_t) / episodes
        logp = theta - np.log(np.exp(theta).sum(axis=1, keepdims=True))
        return float((adv * logp[buckets, actions]).sum() / len(episodes))

    numeric = np.zeros_like(policy.theta)
    for index in np.ndindex(*policy.theta.shape):
        step = np.zeros_like(policy.theta)
        step[index] = 1e-6
        numeric[index] = (surrogate(policy.theta + step) - surrogate(policy.theta - step)) / 2e-6
    analytic = bench.policy_gradient(policy, episodes, adv)
    assert np.abs(analytic).max() > 0.05
    np.testing.assert_allclose(analytic, numeric, atol=1e-7)


def test_the_interval_read_from_feedback_agrees_with_the_env() -> None:
    # The observation repeats earlier hints ("5 (too low)"): only the first line answers.
    env = make(bench.ENV_ID)
    policy = bench.SplitPolicy.near_uniform(20, np.random.default_rng(0))
    rng = random.Random(0)
    for seed in range(200):
        bench.play(env, policy, seed, rng, audit=True)  # raises BenchError on disagreement


def test_rebn_at_gamma_0_9_learns_fewer_turns_in_a_few_steps() -> None:
    env = make(bench.ENV_ID)
    cfg = bench.Config(steps=40, eval_episodes=400)
    untrained = bench.SplitPolicy.near_uniform(20, np.random.default_rng(0))
    _, before = bench.evaluate(env, untrained, cfg.eval_episodes, random.Random(0))
    run, _ = bench.train(env, cfg, 0.9, "rebn", seed=0)
    assert run.final_success == 1.0
    assert run.final_turns < before - 0.4  # binary search is ~3.7, the untrained ~4.6
    assert run.p_middle > 0.15  # the uniform start has 1/9 on the middle split


def test_grpo_at_gamma_1_without_truncation_does_not_move_the_policy() -> None:
    # Every episode is solved and every solved episode returns exactly 1: each group's
    # returns are all equal, so GRPO gives no signal at all.
    env = make(bench.ENV_ID, max_turns=20)
    run, policy = bench.train(env, TINY, 1.0, "grpo", seed=0)
    start = bench.SplitPolicy.near_uniform(20, np.random.default_rng(0))
    assert run.truncated == 0
    np.testing.assert_array_equal(policy.theta, start.theta)
