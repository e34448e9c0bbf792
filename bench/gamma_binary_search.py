"""The GEM paper's γ experiment on CPU: does a discount < 1 teach binary search?

Run: ``.venv/bin/python bench/gamma_binary_search.py [--quick] [--out PLOT.png]``.

A small numpy policy plays gem-eval's own GuessTheNumber env through ``env.step`` with
``\\boxed{N}`` actions. It knows only the interval ``[lo, hi]`` that the env's text
feedback ("too low" / "too high") leaves, and picks a split point: a softmax over
``POSITIONS`` (0, 1/8, ..., 1 of the way from ``lo`` to ``hi``), one row of logits per
interval-width bucket ``ceil(log2(hi - lo + 1))``. The position 1/2 is binary search;
the logits start at (nearly) zero, i.e. near uniform-random guessing in the interval.

It is trained by REINFORCE-style policy gradient: per-turn rewards from the env, returns
from :func:`gem_eval.returns.returns_to_go`, advantages from :mod:`gem_eval.rl`, for each
γ and estimator over several seeds. Before printing anything the bench checks that it did
the intended work (episodes counted through the env, its interval tracking agrees with
the env, the hand-coded binary search wins every secret within the bound through the same
code path); otherwise it raises :class:`BenchError` and prints no figure.
"""

from __future__ import annotations

import argparse
import math
import random
import re
import sys
import time
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from gem_eval import make
from gem_eval.core import Env, ResetResult, StepResult, Wrapper
from gem_eval.rl import Transitions, advantages

ENV_ID = "game:GuessTheNumber-v0"  # secrets 1..20, 10 guesses
POSITIONS = np.linspace(0.0, 1.0, 9)
MIDDLE = 4  # POSITIONS[MIDDLE] == 0.5: binary search
SMOOTH = 10  # training steps per point of the plot and of "steps to" (batch means are noisy)
_RANGE = re.compile(r"between (-?\d+) and (-?\d+)")


class BenchError(Exception):
    """The bench did not do the intended work: no figure is printed."""


@dataclass(frozen=True)
class Config:
    """One experiment: the env, the grid of settings and the training budget."""

    env_id: str = ENV_ID
    gammas: tuple[float, ...] = (1.0, 0.99, 0.9, 0.7)
    estimators: tuple[str, ...] = ("rebn", "reinforce", "reinforce_baseline", "grpo")
    seeds: int = 5
    steps: int = 250
    groups: int = 16  # secrets per batch (GRPO's groups) ...
    per_group: int = 4  # ... each played this many times
    lr: float = 2.0  # plain gradient ascent, the same for every estimator
    eval_episodes: int = 400
    max_turns: int | None = None  # None: the env's own limit


# ---------------------------------------------------------------- the policy
class SplitPolicy:
    """Softmax over relative split points, one row of logits per interval-width bucket."""

    def __init__(self, theta: NDArray[np.float64]) -> None:
        self.theta = theta
        self.refresh()

    @classmethod
    def near_uniform(cls, span: int, rng: np.random.Generator) -> SplitPolicy:
        buckets = math.ceil(math.log2(span)) + 1
        return cls(rng.normal(0.0, 0.01, size=(buckets, POSITIONS.size)))

    @classmethod
    def binary_search(cls, span: int) -> SplitPolicy:
        theta = np.full((math.ceil(math.log2(span)) + 1, POSITIONS.size), -np.inf)
        theta[:, MIDDLE] = 0.0
        return cls(theta)

    def probs(self) -> NDArray[np.float64]:
        z = np.exp(self.theta - self.theta.max(axis=1, keepdims=True))
        out: NDArray[np.float64] = z / z.sum(axis=1, keepdims=True)
        return out

    def refresh(self) -> None:
        """Cache the cumulative probabilities that :meth:`act` samples from."""
        self._cum = [row.tolist() for row in np.cumsum(self.probs(), axis=1)]

    def act(self, lo: int, hi: int, rng: random.Random) -> tuple[int, int, int]:
        """``(bucket, position index, guess)`` for the interval ``[lo, hi]``."""
        bucket = min((hi - lo).bit_length(), len(self._cum) - 1)  # == ceil(log2(width))
        index = min(bisect_right(self._cum[bucket], rng.random()), POSITIONS.size - 1)
        return bucket, index, lo + int(POSITIONS[index] * (hi - lo) + 0.5)


# ------------------------------------------------------------------ playing
class Counting(Wrapper):
    """Counts the resets and steps that reach the env."""

    def __init__(self, env: Env) -> None:
        super().__init__(env)
        self.resets = self.steps = 0

    def on_reset(self, result: ResetResult) -> ResetResult:
        self.resets += 1
        return result

    def on_step(self, action: str, result: StepResult) -> StepResult:
        self.steps += 1
        return result


@dataclass
class Episode:
    """What one episode left behind: the policy's choices and the env's rewards."""

    buckets: list[int] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    solved: bool = False


def play(
    env: Env, policy: SplitPolicy, seed: int, rng: random.Random, audit: bool = False
) -> Episode:
    """One episode through ``env.step``; the interval is read from the env's text only.

    ``audit`` compares that interval with the env's own after every step.
    """
    obs, _ = env.reset(seed)
    found = _RANGE.search(obs)
    if found is None:
        raise BenchError(f"no range in the first observation: {obs!r}")
    lo, hi = int(found[1]), int(found[2])
    episode = Episode()
    while True:
        bucket, index, guess = policy.act(lo, hi, rng)
        obs, reward, terminated, truncated, _ = env.step(f"\\boxed{{{guess}}}")
        episode.buckets.append(bucket)
        episode.actions.append(index)
        episode.rewards.append(reward)
        # The first line answers this guess; the lines after it repeat earlier hints.
        feedback = obs.split("\n", 1)[0]
        if feedback.startswith(f"{guess} is too low"):
            lo = guess + 1
        elif feedback.startswith(f"{guess} is too high"):
            hi = guess - 1
        elif feedback.startswith("Correct!"):
            lo = hi = guess
            episode.solved = True
        else:
            raise BenchError(f"unexpected feedback to {guess} in [{lo}, {hi}]: {obs[:80]!r}")
        if audit:
            game = env.unwrapped
            if (lo, hi) != (game.lo, game.hi):  # type: ignore[attr-defined]
                raise BenchError(f"tracked [{lo}, {hi}], env has [{game.lo}, {game.hi}]")  # type: ignore[attr-defined]
        if terminated or truncated:
            return episode


def span_of(env: Env) -> int:
    """How many numbers the secret may be (the env's setting)."""
    game = env.unwrapped
    return int(game.max_setting - game.min_setting + 1)  # type: ignore[attr-defined]


# ----------------------------------------------------------------- training
def policy_gradient(
    policy: SplitPolicy, episodes: Sequence[Episode], adv: NDArray[np.float64]
) -> NDArray[np.float64]:
    """``sum_t A_t * grad log pi(a_t | s_t)`` over the batch, per episode.

    For a softmax row ``pi = softmax(theta[b])`` the gradient of ``log pi[a]`` is
    ``onehot(a) - pi``, added to row ``b`` only.
    """
    buckets = np.fromiter((b for e in episodes for b in e.buckets), dtype=np.int64)
    actions = np.fromiter((a for e in episodes for a in e.actions), dtype=np.int64)
    grad = np.zeros_like(policy.theta)
    np.add.at(grad, (buckets, actions), adv)
    weight = np.bincount(buckets, weights=adv, minlength=grad.shape[0])
    grad -= weight[:, None] * policy.probs()
    out: NDArray[np.float64] = grad / len(episodes)
    return out


@dataclass
class Run:
    """One training run: mean turns and success per step, then the final evaluation."""

    gamma: float
    estimator: str
    seed: int
    turns: list[float] = field(default_factory=list)
    success: list[float] = field(default_factory=list)
    final_success: float = 0.0
    final_turns: float = 0.0  # mean turns of the solved episodes
    truncated: int = 0  # training episodes that ran out of turns
    p_middle: float = 0.0  # mean probability of the middle split, widths > 2
    p_ends: float = 0.0  # ... and of the two end positions (guess lo or hi)


def batch_of(episodes: Sequence[Episode], groups: Sequence[int], gamma: float) -> Transitions:
    """The estimator's input: the env's rewards, discounted by the package's returns."""
    return Transitions.from_episodes([e.rewards for e in episodes], gamma, groups)


def train(
    env: Env, cfg: Config, gamma: float, estimator: str, seed: int, steps: int | None = None
) -> tuple[Run, SplitPolicy]:
    """Train one policy from near-uniform; ``env`` is reused (seeded per episode)."""
    nprng = np.random.default_rng(seed)
    rng = random.Random(seed)
    policy = SplitPolicy.near_uniform(span_of(env), nprng)
    run = Run(gamma, estimator, seed)
    for _ in range(cfg.steps if steps is None else steps):
        secrets = [rng.randrange(2**31) for _ in range(cfg.groups)]
        groups = [s for s in secrets for _ in range(cfg.per_group)]
        episodes = [play(env, policy, s, rng) for s in groups]
        adv = advantages(estimator, batch_of(episodes, groups, gamma))
        policy.theta = policy.theta + cfg.lr * policy_gradient(policy, episodes, adv)
        policy.refresh()
        run.turns.append(float(np.mean([len(e.rewards) for e in episodes])))
        run.success.append(float(np.mean([e.solved for e in episodes])))
        run.truncated += sum(not e.solved for e in episodes)
    run.final_success, run.final_turns = evaluate(env, policy, cfg.eval_episodes, rng)
    wide = policy.probs()[2:]  # widths >= 3, where the split point matters
    run.p_middle = float(wide[:, MIDDLE].mean())
    run.p_ends = float((wide[:, 0] + wide[:, -1]).mean())
    return run, policy


def evaluate(
    env: Env, policy: SplitPolicy, episodes: int, rng: random.Random, audit: bool = False
) -> tuple[float, float]:
    """Success rate and mean turns of the solved episodes, on fixed env seeds."""
    played = [play(env, policy, 10**6 + k, rng, audit) for k in range(episodes)]
    solved = [len(e.rewards) for e in played if e.solved]
    return len(solved) / episodes, float(np.mean(solved)) if solved else math.nan


# ------------------------------------------------------------------- checks
def check_binary_search(env: Env) -> tuple[float, int]:
    """The hand-coded binary search, through :func:`play`, wins every secret in the bound.

    Returns its mean turns and the bound ``ceil(log2(span))``.
    """
    span = span_of(env)
    bound = math.ceil(math.log2(span))
    policy, rng = SplitPolicy.binary_search(span), random.Random(0)
    secrets: set[int] = set()
    turns = []
    for seed in range(50 * span):
        episode = play(env, policy, seed, rng, audit=True)
        secrets.add(env.unwrapped.secret)  # type: ignore[attr-defined]
        if not episode.solved or len(episode.rewards) > bound:
            raise BenchError(f"binary search failed seed {seed}: {len(episode.rewards)} turns")
        if abs(sum(episode.rewards) - 1.0) > 1e-9:  # the env's documented solved return
            raise BenchError(f"a solved episode's undiscounted return is {sum(episode.rewards)}")
        turns.append(len(episode.rewards))
    if len(secrets) != span:
        raise BenchError(f"binary search met {len(secrets)} of {span} secrets")
    return float(np.mean(turns)), bound


def steps_to(turns: Sequence[float], threshold: float, window: int = SMOOTH) -> int | None:
    """First step whose trailing ``window``-step mean turns is at or below ``threshold``."""
    smooth = np.convolve(turns, np.ones(window) / window, mode="valid")
    hits = np.nonzero(smooth <= threshold)[0]
    return int(hits[0]) + window if hits.size else None


# --------------------------------------------------------------------- main
@dataclass
class Reference:
    """The figures every run is read against, measured through the same code path."""

    binary_turns: float  # the hand-coded binary search's mean turns
    bound: int  # ceil(log2(range))
    initial_turns: float  # the untrained (near-uniform) policy's mean turns
    initial_success: float
    episodes: int = 0  # counted where they reach the env
    steps: int = 0

    @property
    def threshold(self) -> float:
        """A quarter of the way from binary search back to the untrained policy."""
        return self.binary_turns + 0.25 * (self.initial_turns - self.binary_turns)


def make_env(cfg: Config) -> Counting:
    overrides = {} if cfg.max_turns is None else {"max_turns": cfg.max_turns}
    return Counting(make(cfg.env_id, **overrides))


def run_all(cfg: Config) -> tuple[list[Run], Reference]:
    """Every (γ, estimator, seed) run, plus the reference figures; checked."""
    env = make_env(cfg)
    binary_turns, bound = check_binary_search(env)
    untrained = SplitPolicy.near_uniform(span_of(env), np.random.default_rng(0))
    success, turns = evaluate(env, untrained, cfg.eval_episodes, random.Random(0), audit=True)
    if not turns > binary_turns:
        raise BenchError(f"the untrained policy ({turns:.2f} turns) is as good as binary search")
    ref = Reference(binary_turns, bound, turns, success)
    env.resets = env.steps = 0
    runs = [
        train(env, cfg, gamma, name, seed)[0]
        for gamma in cfg.gammas
        for name in cfg.estimators
        for seed in range(cfg.seeds)
    ]
    expected = len(runs) * (cfg.steps * cfg.groups * cfg.per_group + cfg.eval_episodes)
    if env.resets != expected:
        raise BenchError(f"{env.resets} episodes reached the env, expected {expected}")
    trained = round(sum(sum(r.turns) * cfg.groups * cfg.per_group for r in runs))
    if env.steps <= trained:  # the evaluation episodes add their steps on top
        raise BenchError(f"{env.steps} env steps for {trained} training transitions")
    ref.episodes, ref.steps = env.resets, env.steps
    return runs, ref


def table(runs: Sequence[Run], cfg: Config, ref: Reference) -> list[str]:
    """One line per (γ, estimator): means over seeds (turns: ± sd over seeds)."""
    lines = [
        f"{'gamma':>5} {'estimator':<18} {'success':>7} {'turns':>10} {'p(mid)':>6} "
        f"{'p(ends)':>7} {'truncated':>9} {f'steps to <= {ref.threshold:.2f}':>18}"
    ]
    for gamma in cfg.gammas:
        for name in cfg.estimators:
            rs = [r for r in runs if r.gamma == gamma and r.estimator == name]
            turns = np.array([r.final_turns for r in rs])
            p_mid, p_ends = np.mean([r.p_middle for r in rs]), np.mean([r.p_ends for r in rs])
            hits = [s for r in rs if (s := steps_to(r.turns, ref.threshold)) is not None]
            reach = f"{np.median(hits):.0f} ({len(hits)}/{len(rs)} seeds)" if hits else "never"
            lines.append(
                f"{gamma:>5} {name:<18} {np.mean([r.final_success for r in rs]):>7.3f} "
                f"{turns.mean():>5.2f}±{turns.std():<4.2f} "
                f"{p_mid:>6.2f} {p_ends:>7.2f} "
                f"{sum(r.truncated for r in rs):>9} {reach:>18}"
            )
    return lines


def plot(runs: Sequence[Run], cfg: Config, ref: Reference, out: Path) -> None:
    """Mean turns per training batch vs step, one panel per estimator, one line per γ."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = min(2, len(cfg.estimators))
    rows = math.ceil(len(cfg.estimators) / cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(5.2 * cols, 3.4 * rows), sharex=True, sharey=True, squeeze=False
    )
    window = min(SMOOTH, cfg.steps)
    for ax, name in zip(axes.flat, cfg.estimators):
        for gamma in cfg.gammas:
            curves = np.array(
                [
                    np.convolve(r.turns, np.ones(window) / window, mode="valid")
                    for r in runs
                    if r.gamma == gamma and r.estimator == name
                ]
            )
            mean, sd = curves.mean(axis=0), curves.std(axis=0)
            x = np.arange(window, window + mean.size)
            (line,) = ax.plot(x, mean, lw=1.2, label=f"γ = {gamma}")
            ax.fill_between(x, mean - sd, mean + sd, alpha=0.15, color=line.get_color())
        ax.axhline(ref.binary_turns, ls="--", c="k", lw=1, label="binary search")
        ax.axhline(ref.bound, ls=":", c="gray", lw=1, label="⌈log2 range⌉")
        ax.set_title(name, fontsize=10)
    for ax in axes[-1]:
        ax.set_xlabel("training step")
    for ax in axes[:, 0]:
        ax.set_ylabel(f"turns ({window}-step mean)")
    axes[0][0].legend(fontsize=7, ncol=2)
    fig.suptitle(
        f"{cfg.env_id}: mean turns per training batch, {cfg.seeds} seeds (band: ±1 sd)",
        fontsize=10,
    )
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def report(title: str, runs: Sequence[Run], cfg: Config, ref: Reference) -> None:
    print(title)
    print(
        f"  range {span_of(make_env(cfg))}, bound ceil(log2 range) = {ref.bound}; binary "
        f"search {ref.binary_turns:.2f} turns; untrained policy {ref.initial_turns:.2f} turns "
        f"(success {ref.initial_success:.3f})"
    )
    print("\n".join("  " + line for line in table(runs, cfg, ref)))
    print(f"  {ref.episodes} episodes ({ref.steps} env steps) counted through the env")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="The GEM γ experiment on CPU.")
    parser.add_argument("--quick", action="store_true", help="a small smoke setting")
    parser.add_argument("--out", type=Path, default=Path("results/gamma_binary_search.png"))
    parser.add_argument("--env", default=ENV_ID)
    parser.add_argument("--seeds", type=int, default=Config.seeds)
    parser.add_argument("--steps", type=int, default=Config.steps)
    parser.add_argument("--lr", type=float, default=Config.lr)
    parser.add_argument("--gammas", type=float, nargs="+", default=list(Config.gammas))
    parser.add_argument("--estimators", nargs="+", default=list(Config.estimators))
    parser.add_argument(
        "--no-control", action="store_true", help="skip the γ = 1 control with twice the turn limit"
    )
    args = parser.parse_args(argv)
    cfg = Config(
        env_id=args.env,
        gammas=tuple(args.gammas),
        estimators=tuple(args.estimators),
        seeds=args.seeds,
        steps=args.steps,
        lr=args.lr,
    )
    if args.quick:
        cfg = replace(
            cfg,
            gammas=(1.0, 0.9),
            estimators=("rebn", "reinforce"),
            seeds=2,
            steps=40,
            eval_episodes=100,
        )
    wall, cpu = time.perf_counter(), time.process_time()
    runs, ref = run_all(cfg)
    # The control: with twice the turn limit the untrained policy never runs out of turns,
    # so at γ = 1 no action changes the return of its turn (see docs/rl.md).
    limit = make_env(cfg).unwrapped.max_turns_setting  # type: ignore[attr-defined]
    control = replace(cfg, gammas=(1.0,), max_turns=2 * limit)
    control_runs, control_ref = ([], None) if args.no_control else run_all(control)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    plot(runs, cfg, ref, args.out)
    print(
        f"{cfg.seeds} seeds x {cfg.steps} steps x {cfg.groups} secrets x {cfg.per_group} "
        f"episodes, lr {cfg.lr}; final: {cfg.eval_episodes} episodes of the sampled policy"
    )
    report(f"{cfg.env_id} (turn limit {limit})", runs, cfg, ref)
    if control_ref is not None:
        report(f"control: turn limit {control.max_turns}", control_runs, control, control_ref)
    print(f"{wall:.1f} s wall, {cpu:.1f} s CPU (one process); plot: {args.out}")


if __name__ == "__main__":
    try:
        main()
    except BenchError as exc:
        sys.exit(f"bench refused to print figures: {exc}")
