"""Env throughput: gem-eval against GEM, sync vs async vector envs, the wrapper stack.

Run: ``.venv/bin/python bench/env_throughput.py [--no-gem]``. Prints figures measured in
this one run; compare the ratios, not the absolute numbers. The two sides of each ratio
run alternately, best of REPEATS each, timed in process CPU time, so that load from other
processes on this shared machine skews neither side.

Against GEM: GEM's published package (``gem-llm``) is installed once into a venv of its
own (``bench/_gem_venv.py``), where ``bench/_gem_driver.py`` plays GuessTheNumber-easy
(numbers 1..10, 4 turns) with GEM's envs; the same file's player and loops play it here
with gem-eval's. Columns: one env (unseeded resets between episodes), and 64 envs in a
sync and in an async vector env (same-step autoreset, GEM's default, so every sub-env
step is a game step). Each measurement is STEPS sub-env steps of binary search. Before
printing, the bench checks both sides made exactly STEPS steps, solved every episode
that ended within ceil(log2(10)) = 4 guesses, and ended as many episodes as each other
(within 5 standard deviations of the difference that the secrets' draw alone makes: each
package draws its own secrets, so their counts differ by a few dozen in ~22,000).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from _gem_driver import (
    TURN_BOUND,
    Measurement,
    PolicyError,
    play_single,
    play_vector,
    turns_mean_var,
)
from _gem_venv import GEM_PACKAGE, GemDriver, GemUnavailable, gem_venv

from gem_eval import make, make_vec
from gem_eval.core import Env
from gem_eval.vector import VectorEnv
from gem_eval.wrappers import ChatHistory, EpisodeStats, MaxTurns

ENV_ID = "game:GuessTheNumber-v0"
MAX_TURNS = 10  # the env's default
REPEATS = 5
# Guesses have at most 6 digits (games/_parsing.py MAX_DIGITS): larger secrets cannot be won.
LONG = {"max_number": 999_999, "max_turns": 25}
EASY_ID = "game:GuessTheNumber-v0-easy"
HINTS = ("the secret is higher", "the secret is lower")  # gem-eval's wording
STEPS = 64_000
COLUMNS = [("single", 1), ("sync", 64), ("async", 64)]


def best_of_alternating(
    a: Callable[[], int], b: Callable[[], int], repeats: int = REPEATS
) -> tuple[float, float]:
    """Highest steps per CPU-second of ``a`` and of ``b`` (each returns its step count)."""
    best = [0.0, 0.0]
    for _ in range(repeats):
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


# ------------------------------------------------------------------ against GEM
def single_solved(reward: float, terminated: bool, truncated: bool, info: dict[str, Any]) -> bool:
    return bool(info.get("success"))


def vector_solved(reward: float, terminated: bool, truncated: bool, info: dict[str, Any]) -> bool:
    return bool(info["final_info"].get("success"))  # same-step autoreset keeps it here


class Ours:
    """gem-eval's side of the comparison, its envs made once per column."""

    def __init__(self) -> None:
        self._single = make(EASY_ID)
        self._vectors: dict[str, VectorEnv] = {}

    def measure(self, case: str, n: int, steps: int) -> Measurement:
        if case == "single":
            return play_single(self._single, HINTS, single_solved, steps)
        vec = self._vectors.get(case)
        if vec is None:
            mode: Any = case
            vec = self._vectors[case] = make_vec(EASY_ID, n, mode=mode, autoreset_mode="same_step")
        vec.reset(seed=0)  # the players start afresh: so must the games (untimed)
        return play_vector(vec, n, HINTS, vector_solved, steps)


def check_work(column: str, ours: Measurement, gem: Measurement | None, steps: int) -> None:
    """Refuse the figures unless each side did the intended work (module docstring)."""
    for side, tally in [("gem-eval", ours), ("GEM", gem)]:
        if tally is None:
            continue
        if tally.failure:
            raise BenchError(f"{column}, {side}: {tally.failure}")
        if tally.steps != steps:
            raise BenchError(f"{column}, {side}: {tally.steps} steps, not {steps}")
        if tally.episodes < steps // TURN_BOUND - 64:  # 64: episodes still in play
            raise BenchError(f"{column}, {side}: only {tally.episodes} episodes ended")
    if gem is not None:
        mean, var = turns_mean_var()
        slack = 5 * math.sqrt(2 * steps * var / mean**3)  # renewal-count variance, two sides
        if abs(ours.episodes - gem.episodes) > slack:
            raise BenchError(
                f"{column}: {ours.episodes} episodes (gem-eval) vs {gem.episodes} (GEM)"
            )


def against_gem(repeats: int, with_gem: bool) -> None:
    driver, why = None, ""
    if with_gem:
        try:
            driver = GemDriver(gem_venv())
        except GemUnavailable as exc:
            why = str(exc)
    else:
        why = "--no-gem"
    ours = Ours()
    print(f"gem-eval vs GEM ({GEM_PACKAGE}, its own venv): {EASY_ID}, binary search,")
    print(f"{STEPS:,} sub-env steps a measurement, best of {repeats} alternating (steps/CPU-s)")
    if driver is None:
        print(f"GEM: not measured: {why}")
    print(f"{'':>10} {'gem-eval':>9} {'GEM':>9} {'ratio':>6} {'episodes':>15}")
    try:
        for case, n in COLUMNS:
            best_ours, best_gem, last = 0.0, 0.0, (Measurement(), Measurement())
            for _ in range(repeats):
                gem = driver.measure(case, n, STEPS) if driver is not None else None
                mine = ours.measure(case, n, STEPS)
                check_work(case, mine, gem, STEPS)
                best_ours = max(best_ours, mine.steps / max(mine.cpu, 1e-9))
                if gem is not None:
                    best_gem = max(best_gem, gem.steps / max(gem.cpu, 1e-9))
                last = (mine, gem or Measurement())
            label = case if n == 1 else f"{case} n={n}"
            if driver is None:
                print(f"{label:>10} {best_ours:>9.0f} {'-':>9} {'-':>6} {last[0].episodes:>15}")
            else:
                episodes = f"{last[0].episodes}/{last[1].episodes}"
                print(
                    f"{label:>10} {best_ours:>9.0f} {best_gem:>9.0f} "
                    f"{best_ours / best_gem:>6.2f} {episodes:>15}"
                )
    except (GemUnavailable, PolicyError) as exc:
        raise BenchError(str(exc)) from exc
    finally:
        if driver is not None:
            driver.close()
    if driver is not None:
        print("(ratio: gem-eval/GEM; episodes: ended in the last measurement, gem-eval/GEM)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--no-gem", action="store_true", help="skip installing and running GEM")
    parser.add_argument("--gem-only", action="store_true", help="only the comparison with GEM")
    parser.add_argument("--repeats", type=int, default=REPEATS)
    args = parser.parse_args()
    against_gem(args.repeats, not args.no_gem)
    if args.gem_only:
        return
    repeats = args.repeats

    print(f"\nvector throughput, {ENV_ID} driven by its oracle (sub-env steps per second)")
    header = f"{'n':>4} {'sync':>9} {'async':>9} {'ratio':>6} {'awaited':>9} {'ratio':>6}"
    print(header + "   (ratio: async/sync; awaited: `await astep` in a caller's loop)")
    for n in (1, 8, 64):
        sync, asyn = best_of_alternating(vector_loop("sync", n), vector_loop("async", n), repeats)
        _, awaited = best_of_alternating(vector_loop("sync", n), awaited_vector_loop(n), repeats)
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
            episode_steps(make(ENV_ID, **settings)), episode_steps(stack), repeats
        )
        print(f"  {label}: bare {bare:.0f}/s, wrapped {wrapped:.0f}/s, +{bare / wrapped - 1:.1%}")


if __name__ == "__main__":
    try:
        main()
    except BenchError as exc:
        sys.exit(f"bench: no figures: {exc}")
