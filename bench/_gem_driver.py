"""The binary-search player both sides of the GEM comparison share, and GEM's side of it.

``bench/env_throughput.py`` imports the player and the loops from here and runs them on
gem-eval's envs; it also starts this file as a script in a separate venv that holds GEM's
published package (``gem-llm``), where the same loops run on GEM's envs. So the policy and
the loop around the envs are the same code on both sides: only the envs differ.

This file imports neither ``gem_eval`` nor ``gem`` at module level (each side has only its
own), and nothing but the standard library.

Protocol (script mode): one JSON request a line on stdin, ``{"case": "single" | "sync" |
"async", "n": 64, "steps": 64000}``; one JSON reply a line on stdout, a :class:`Measurement` as a
dict (or ``{"error": "..."}``). GEM prints to stdout when it makes a vector env, so the
protocol writes to the original stdout and everything else goes to stderr.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

ENV_LOW, ENV_HIGH = 1, 10  # GuessTheNumber-easy in both packages (max_turns=4)
GEM_ENV_ID = "game:GuessTheNumber-v0-easy"
# How each package words "the secret is higher / lower than your guess".
GEM_HINTS = ("is higher than", "is lower than")

Solved = Callable[[float, bool, bool, dict[str, Any]], bool]
"""Whether a step that ended an episode solved it: (reward, terminated, truncated, info)."""


class PolicyError(Exception):
    """The env's feedback was not what a GuessTheNumber env answers to a legal guess."""


class BinarySearch:
    """Guesses the middle of the interval the feedback leaves (one per env).

    Args:
        hints: The phrases that say the secret is higher and lower than the guess.
    """

    __slots__ = ("guess", "hi", "higher", "lo", "lower", "turns")

    def __init__(self, hints: tuple[str, str]) -> None:
        self.higher, self.lower = hints
        self.lo, self.hi, self.guess, self.turns = ENV_LOW, ENV_HIGH, 0, 0

    def start(self) -> None:
        """A new episode: the whole range is open again."""
        self.lo, self.hi, self.turns = ENV_LOW, ENV_HIGH, 0

    def act(self) -> str:
        self.guess = (self.lo + self.hi) // 2
        self.turns += 1
        return f"\\boxed{{{self.guess}}}"

    def hear(self, obs: str) -> None:
        """Narrow the interval from the observation of a step that did not end the episode."""
        if self.higher in obs:
            self.lo = self.guess + 1
        elif self.lower in obs:
            self.hi = self.guess - 1
        else:
            raise PolicyError(f"no higher/lower hint in {obs!r}")
        if self.lo > self.hi:
            raise PolicyError("the hints contradict each other")


TURN_BOUND = math.ceil(math.log2(ENV_HIGH - ENV_LOW + 1))
"""Binary search finds any secret of the range within this many guesses."""


def turns_to_solve(secret: int) -> int:
    """The guesses :class:`BinarySearch` makes to find ``secret``."""
    lo, hi, turns = ENV_LOW, ENV_HIGH, 1
    while (guess := (lo + hi) // 2) != secret:
        lo, hi, turns = (guess + 1, hi, turns + 1) if guess < secret else (lo, guess - 1, turns + 1)
    return turns


def turns_mean_var() -> tuple[float, float]:
    """Mean and variance of the turns per episode, for a secret drawn uniformly."""
    turns = [turns_to_solve(s) for s in range(ENV_LOW, ENV_HIGH + 1)]
    mean = sum(turns) / len(turns)
    return mean, sum((t - mean) ** 2 for t in turns) / len(turns)


@dataclass
class Measurement:
    """What one measurement did: the work the bench checks, and its CPU time."""

    steps: int = 0
    episodes: int = 0  # episodes that ended (each one solved, or ``failure`` says why)
    max_turns: int = 0
    failure: str = ""
    cpu: float = 0.0

    def end(self, player: BinarySearch, solved: bool) -> None:
        self.episodes += 1
        self.max_turns = max(self.max_turns, player.turns)
        if not self.failure and not solved:
            self.failure = f"episode {self.episodes} ended unsolved after {player.turns} turns"
        elif not self.failure and player.turns > TURN_BOUND:
            self.failure = f"episode {self.episodes} took {player.turns} turns"


class SingleEnv(Protocol):
    def reset(self) -> Any: ...

    def step(self, action: str) -> Sequence[Any]: ...


class VectorEnv(Protocol):
    def step(self, actions: list[str]) -> Sequence[Any]: ...


def play_single(env: SingleEnv, hints: tuple[str, str], solved: Solved, steps: int) -> Measurement:
    """Play episodes back to back (unseeded resets) until ``steps`` steps are done."""
    tally, player = Measurement(), BinarySearch(hints)
    start = time.process_time()
    env.reset()
    while tally.steps < steps:
        obs, reward, terminated, truncated, info = env.step(player.act())
        tally.steps += 1
        if terminated or truncated:
            tally.end(player, solved(reward, terminated, truncated, info))
            env.reset()
            player.start()
        else:
            player.hear(obs)
    tally.cpu = time.process_time() - start
    return tally


def play_vector(
    vec: VectorEnv, n: int, hints: tuple[str, str], solved: Solved, steps: int
) -> Measurement:
    """Step all ``n`` sub-envs (same-step autoreset) until ``steps`` sub-env steps are done.

    The caller has reset ``vec`` (untimed); an episode's last step returns the next episode's first
    observation, so the player starts afresh on it.
    """
    tally, players = Measurement(), [BinarySearch(hints) for _ in range(n)]
    start = time.process_time()
    for _ in range(steps // n):
        obs, rewards, terminated, truncated, infos = vec.step([p.act() for p in players])
        tally.steps += len(obs)
        for k, player in enumerate(players):
            if terminated[k] or truncated[k]:
                tally.end(player, solved(rewards[k], terminated[k], truncated[k], infos[k]))
                player.start()
            else:
                player.hear(obs[k])
    tally.cpu = time.process_time() - start
    return tally


# --------------------------------------------------------------------- GEM's side
def gem_solved(reward: float, terminated: bool, truncated: bool, info: dict[str, Any]) -> bool:
    """GEM's GuessTheNumber pays its success reward (1.0) only for the right guess."""
    return bool(terminated) and not truncated and reward == 1.0


def _gem_case(case: str, n: int) -> Any:
    import gem  # type: ignore[import-not-found]  # only GEM's venv has it

    if case == "single":
        return gem.make(GEM_ENV_ID)
    # Same-step autoreset, GEM's default: every step of a sub-env is a game step.
    return gem.make_vec([GEM_ENV_ID] * n, async_mode=case == "async", seed=0)


def serve() -> None:
    """Answer measurement requests until stdin closes (see the module docstring)."""
    out = sys.stdout
    sys.stdout = sys.stderr  # GEM's make_vec prints; keep the protocol channel clean
    envs: dict[tuple[str, int], Any] = {}
    for line in sys.stdin:
        request = json.loads(line)
        case, n, steps = request["case"], int(request["n"]), int(request["steps"])
        try:
            env = envs.get((case, n))
            if env is None:
                env = envs[(case, n)] = _gem_case(case, n)
            if case == "single":
                tally = play_single(env, GEM_HINTS, gem_solved, steps)
            else:
                env.reset(seed=0)  # the players start afresh: so must the games
                tally = play_vector(env, n, GEM_HINTS, gem_solved, steps)
            reply: dict[str, Any] = asdict(tally)
        except Exception as exc:  # reported to the bench, which prints no GEM figure
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    serve()
