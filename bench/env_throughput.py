"""Env throughput: sync vs async vector envs, and the cost of the wrapper stack.

Run: ``.venv/bin/python bench/env_throughput.py``. Prints figures measured in this one
run; compare the ratios, not the absolute numbers. The two sides of each ratio run
alternately, best of REPEATS each, timed in process CPU time, so that load from other
processes on this shared machine skews neither side.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from gem_eval import make, make_vec
from gem_eval.core import Env
from gem_eval.wrappers import ChatHistory, EpisodeStats, MaxTurns

ENV_ID = "game:GuessTheNumber-v0"
MAX_TURNS = 10  # the env's default
REPEATS = 5
# Guesses have at most 6 digits (games/_parsing.py MAX_DIGITS): larger secrets cannot be won.
LONG = {"max_number": 999_999, "max_turns": 25}


def best_of_alternating(a: Callable[[], int], b: Callable[[], int]) -> tuple[float, float]:
    """Highest steps per CPU-second of ``a`` and of ``b`` (each returns its step count)."""
    best = [0.0, 0.0]
    for _ in range(REPEATS):
        for k, fn in enumerate((a, b)):
            start = time.process_time()
            steps = fn()
            best[k] = max(best[k], steps / max(time.process_time() - start, 1e-9))
    return best[0], best[1]


class BenchError(Exception):
    """The envs did not do the intended work: no figure is printed."""


class Tally:
    """Counts a vector loop's episode ends, and checks the oracle won every one."""

    def __init__(self) -> None:
        self.wins = 0

    def add(self, result: Sequence[Any]) -> None:
        _, _, terminated, truncated, infos = result
        if any(truncated):
            raise BenchError("the oracle ran out of turns")
        for done, info in zip(terminated, infos):
            if done and not info.get("success"):
                raise BenchError(f"the oracle ended an episode without winning: {info}")
            self.wins += bool(done)

    def check(self, steps: int, max_turns: int) -> None:
        """An episode takes at most ``max_turns`` steps and a reset step."""
        if self.wins < steps // (max_turns + 1):
            raise BenchError(f"{self.wins} episodes won in {steps} sub-env steps")


def vector_loop(mode: str, n: int, total: int = 20_000) -> Callable[[], int]:
    vec = make_vec(ENV_ID, n, seed=0, mode=mode)  # type: ignore[arg-type]
    vec.reset()
    oracles = [env.unwrapped.oracle_action for env in vec.envs]  # type: ignore[attr-defined]

    def run() -> int:
        tally = Tally()
        for _ in range(total // n):
            tally.add(vec.step([oracle() for oracle in oracles]))
        tally.check((total // n) * n, MAX_TURNS)
        return (total // n) * n

    return run


def awaited_vector_loop(n: int, total: int = 20_000) -> Callable[[], int]:
    """The async vector env driven from a caller's own event loop (``await astep``)."""
    vec = make_vec(ENV_ID, n, seed=0, mode="async")
    vec.reset()
    oracles = [env.unwrapped.oracle_action for env in vec.envs]  # type: ignore[attr-defined]

    async def drive() -> None:
        tally = Tally()
        for _ in range(total // n):
            tally.add(await vec.astep([oracle() for oracle in oracles]))  # type: ignore[attr-defined]
        tally.check((total // n) * n, MAX_TURNS)

    def run() -> int:
        asyncio.run(drive())
        return (total // n) * n

    return run


def episode_steps(env: Env, episodes: int = 1_000) -> Callable[[], int]:
    oracle = env.unwrapped.oracle_action  # type: ignore[attr-defined]

    def run() -> int:
        steps = 0
        for seed in range(episodes):
            env.reset(seed)
            while True:
                steps += 1
                *_, terminated, truncated, info = env.step(oracle())
                if terminated or truncated:
                    break
            if not (terminated and info.get("success")):
                raise BenchError(f"the oracle did not win episode {seed}: {info}")
        return steps

    return run


def main() -> None:
    print(f"vector throughput, {ENV_ID} driven by its oracle (sub-env steps per second)")
    header = f"{'n':>4} {'sync':>9} {'async':>9} {'ratio':>6} {'awaited':>9} {'ratio':>6}"
    print(header + "   (ratio: async/sync; awaited: `await astep` in a caller's loop)")
    for n in (1, 8, 64):
        sync, asyn = best_of_alternating(vector_loop("sync", n), vector_loop("async", n))
        _, awaited = best_of_alternating(vector_loop("sync", n), awaited_vector_loop(n))
        print(
            f"{n:>4} {sync:>9.0f} {asyn:>9.0f} {asyn / sync:>6.2f} "
            f"{awaited:>9.0f} {awaited / sync:>6.2f}"
        )

    print("\nwrapper stack MaxTurns(EpisodeStats(ChatHistory(env))), one env, oracle loop")
    print("(extra time per step over the bare env; resets and episode summaries included)")
    for label, settings in [
        (f"{ENV_ID} (~4 steps per episode)", {}),
        (f"{ENV_ID}, numbers up to 999,999 (~20 steps per episode)", LONG),
    ]:
        stack = MaxTurns(EpisodeStats(ChatHistory(make(ENV_ID, **settings)), 0.99), 50)
        bare, wrapped = best_of_alternating(
            episode_steps(make(ENV_ID, **settings)), episode_steps(stack)
        )
        print(f"  {label}: bare {bare:.0f}/s, wrapped {wrapped:.0f}/s, +{bare / wrapped - 1:.1%}")


if __name__ == "__main__":
    try:
        main()
    except BenchError as exc:
        sys.exit(f"bench: no figures: {exc}")
