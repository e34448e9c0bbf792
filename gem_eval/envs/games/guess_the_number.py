"""GuessTheNumber: find a secret integer from "too high / too low" feedback.

Progress is the share of the (log-scaled) search space ruled out, so every informative
guess earns a dense reward and binary search earns it fastest.
"""

from __future__ import annotations

import math
import random
import re

from gem_eval.envs.games._base import GameEnv, IllegalMove, MoveError, Outcome
from gem_eval.envs.games._parsing import MAX_DIGITS

_INT = re.compile(r"-?\d+")


class GuessTheNumberEnv(GameEnv[int]):
    """Guess a number in ``[min_number, max_number]``.

    Args:
        min_number: Lowest possible secret. ``None`` draws 1.
        max_number: Highest possible secret. ``None`` draws one in 10..100 per episode.
        max_turns: Guesses allowed. ``None``: enough for binary search, plus one.
    """

    title = "GuessTheNumber"
    example_action = "\\boxed{7}"

    def __init__(
        self,
        min_number: int | None = 1,
        max_number: int | None = 20,
        max_turns: int | None = 10,
        **reward_kwargs: float,
    ) -> None:
        super().__init__(max_turns=max_turns, **reward_kwargs)
        self.min_setting, self.max_setting = min_number, max_number
        self.low = self.high = self.secret = 0
        self.lo = self.hi = 0  # the interval still consistent with the feedback
        self.guesses: list[tuple[int, str]] = []

    def _new_game(self) -> int:
        self.low = self.min_setting if self.min_setting is not None else 1
        self.high = self.max_setting if self.max_setting is not None else self.rng.randint(10, 100)
        if self.high < self.low:
            raise ValueError("max_number must be >= min_number")
        self.secret = self.rng.randint(self.low, self.high)
        self.lo, self.hi = self.low, self.high
        self.guesses = []
        return math.ceil(math.log2(self.high - self.low + 2)) + 1

    def _rules(self) -> str:
        return (
            f"Guess the secret number between {self.low} and {self.high} (inclusive). "
            f"After each guess you are told whether the secret is higher or lower. "
            f"You have {self.max_turns} guesses. "
            f"Answer with one number in \\boxed{{}}, e.g. {self.example_action}."
        )

    def _render(self) -> str:
        if not self.guesses:
            return ""
        return "Your guesses so far: " + ", ".join(f"{g} ({hint})" for g, hint in self.guesses)

    def _parse(self, text: str) -> int:
        numbers = _INT.findall(text.replace(",", ""))
        if len(numbers) != 1 or len(numbers[0].lstrip("-")) > MAX_DIGITS:
            raise MoveError("expected exactly one whole number")
        return int(numbers[0])

    def _apply(self, move: int) -> Outcome:
        if not self.low <= move <= self.high:
            raise IllegalMove(f"the number lies between {self.low} and {self.high}.")
        if any(g == move for g, _ in self.guesses):
            raise IllegalMove(f"you already guessed {move}.")
        if move == self.secret:
            self.guesses.append((move, "correct"))
            self.lo = self.hi = move
            return Outcome(f"Correct! The number was {move}.", solved=True)
        if move < self.secret:
            self.guesses.append((move, "too low"))
            self.lo = max(self.lo, move + 1)
            return Outcome(f"{move} is too low: the secret is higher.")
        self.guesses.append((move, "too high"))
        self.hi = min(self.hi, move - 1)
        return Outcome(f"{move} is too high: the secret is lower.")

    def _raw_progress(self) -> float:
        total = self.high - self.low + 1
        if total <= 1:
            return 1.0
        return 1.0 - math.log(self.hi - self.lo + 1) / math.log(total)

    def oracle_action(self) -> str:
        return f"\\boxed{{{(self.lo + self.hi) // 2}}}"

    def sample_random_action(self, rng: random.Random) -> str:
        return f"\\boxed{{{rng.randint(self.low, self.high)}}}"
