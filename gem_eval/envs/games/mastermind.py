"""Mastermind: crack a secret code from black and white peg feedback.

The secret is ``code_length`` numbers from 1 to ``num_numbers`` (all different unless
``duplicate_numbers``). Each guess is answered with black pegs (right number, right place)
and white pegs (right number, wrong place); all black pegs solves the game. A guess of the
wrong length, with a number out of range, with a repeated number (when duplicates are off)
or that was already played is illegal.

Progress is the share of the (log-scaled) code space ruled out so far:
``1 - log(#codes consistent with the feedback) / log(#codes)``.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from collections import Counter
from functools import cache

from gem_eval.envs.games._base import GameEnv, IllegalMove, MoveError, Outcome

Code = tuple[int, ...]

_SEPARATORS = re.compile(r"[\s,;]+")
_RANDOM_LENGTHS = (2, 4)  # the range code_length=None draws from
_MAX_DIGITS = 6  # longer numbers are out of range anyway, and int() of huge strings is slow


def pegs(guess: Code, secret: Code) -> tuple[int, int]:
    """The ``(black, white)`` pegs that ``guess`` earns against ``secret``."""
    black = sum(g == s for g, s in zip(guess, secret))
    common = sum((Counter(guess) & Counter(secret)).values())
    return black, common - black


@cache
def all_codes(code_length: int, num_numbers: int, duplicates: bool) -> tuple[Code, ...]:
    """Every possible code, in lexicographic order."""
    numbers = range(1, num_numbers + 1)
    if duplicates:
        return tuple(itertools.product(numbers, repeat=code_length))
    return tuple(itertools.permutations(numbers, code_length))


def _spell(code: Code) -> str:
    return " ".join(map(str, code))


class MastermindEnv(GameEnv[Code]):
    """Find a code of ``code_length`` numbers in ``1..num_numbers``.

    Args:
        code_length: Numbers in the code. ``None`` draws one in 2..4 per episode.
        num_numbers: Numbers run from 1 to this. ``None`` draws one in 6..8 per episode.
        max_turns: Guesses allowed. ``None``: five per number in the code.
        duplicate_numbers: Whether a number may occur more than once in the code.
    """

    title = "Mastermind"
    example_action = "\\boxed{1 2 3 4}"

    def __init__(
        self,
        code_length: int | None = 4,
        num_numbers: int | None = 6,
        max_turns: int | None = 20,
        duplicate_numbers: bool = False,
        **reward_kwargs: float,
    ) -> None:
        super().__init__(max_turns=max_turns, **reward_kwargs)
        self.length_setting, self.numbers_setting = code_length, num_numbers
        self.duplicates = duplicate_numbers
        self.code_length = self.num_numbers = 0
        self.secret: Code = ()
        self.history: list[tuple[Code, int, int]] = []
        self.candidates: list[Code] = []  # codes consistent with all feedback, in order

    def _new_game(self) -> int:
        length = self.length_setting
        self.code_length = length if length is not None else self.rng.randint(*_RANDOM_LENGTHS)
        numbers = self.numbers_setting
        self.num_numbers = numbers if numbers is not None else self.rng.randint(6, 8)
        if self.code_length < 1 or self.num_numbers < 1:
            raise ValueError("code_length and num_numbers must be positive")
        if not self.duplicates and self.code_length > self.num_numbers:
            raise ValueError("without duplicates, code_length must be <= num_numbers")
        codes = all_codes(self.code_length, self.num_numbers, self.duplicates)
        self.secret = self.rng.choice(codes)
        self.candidates = list(codes)
        self.history = []
        self.example_action = f"\\boxed{{{_spell(tuple(range(1, self.code_length + 1)))}}}"
        return 5 * self.code_length

    def _most_default_turns(self) -> int:
        length = self.length_setting
        return 5 * (length if length is not None else _RANDOM_LENGTHS[1])

    def _rules(self) -> str:
        repeats = "numbers may repeat" if self.duplicates else "all different"
        return (
            f"Crack the secret code: {self.code_length} numbers, each from 1 to "
            f"{self.num_numbers} ({repeats}). Each guess earns black pegs (right number in "
            f"the right place) and white pegs (right number in the wrong place). "
            f"You have {self.max_turns} guesses. Answer with the numbers separated by "
            f"spaces in \\boxed{{}}, e.g. {self.example_action}."
        )

    def _render(self) -> str:
        if not self.history:
            return ""
        lines = [f"{_spell(g)}  -> {b} black, {w} white" for g, b, w in self.history]
        return "Your guesses so far:\n" + "\n".join(lines)

    def _parse(self, text: str) -> Code:
        tokens = [t for t in _SEPARATORS.split(text.strip().strip("[](){}<>")) if t]
        if not tokens or not all(t.isascii() and t.isdigit() for t in tokens):
            raise MoveError("expected whole numbers separated by spaces")
        if len(tokens) == 1 and self.num_numbers <= 9:
            tokens = list(tokens[0])  # "1234": each digit is one number
        if any(len(t) > _MAX_DIGITS for t in tokens):
            raise IllegalMove(f"the numbers run from 1 to {self.num_numbers}.")
        return tuple(int(t) for t in tokens)

    def _apply(self, move: Code) -> Outcome:
        if len(move) != self.code_length:
            raise IllegalMove(f"the code has {self.code_length} numbers, not {len(move)}.")
        if not all(1 <= n <= self.num_numbers for n in move):
            raise IllegalMove(f"the numbers run from 1 to {self.num_numbers}.")
        if not self.duplicates and len(set(move)) < len(move):
            raise IllegalMove("the numbers in the code are all different.")
        if any(move == g for g, _, _ in self.history):
            raise IllegalMove(f"you already guessed {_spell(move)}.")
        black, white = pegs(move, self.secret)
        self.history.append((move, black, white))
        self.candidates = [c for c in self.candidates if pegs(move, c) == (black, white)]
        if black == self.code_length:
            return Outcome(f"Correct! The code was {_spell(move)}.", solved=True)
        return Outcome(f"{_spell(move)}: {black} black, {white} white.")

    def _raw_progress(self) -> float:
        total = len(all_codes(self.code_length, self.num_numbers, self.duplicates))
        if total <= 1:
            return 1.0
        return 1.0 - math.log(len(self.candidates)) / math.log(total)

    def oracle_action(self) -> str:
        """Honest: the first code, in lexicographic order, consistent with all feedback."""
        return f"\\boxed{{{_spell(self.candidates[0])}}}"

    def sample_random_action(self, rng: random.Random) -> str:
        numbers = range(1, self.num_numbers + 1)
        if self.duplicates:
            code = tuple(rng.choices(numbers, k=self.code_length))
        else:
            code = tuple(rng.sample(numbers, self.code_length))
        return f"\\boxed{{{_spell(code)}}}"
