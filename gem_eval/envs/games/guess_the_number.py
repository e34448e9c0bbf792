"""GuessTheNumber: find a secret integer from "too high / too low" feedback.

Progress is the share of the (log-scaled) search space ruled out, so every informative
guess earns a dense reward and binary search earns it fastest.
"""

from __future__ import annotations

import functools
import math
import random
import re
from typing import Any

from gem_eval.boxed import last_boxed
from gem_eval.core import StepResult
from gem_eval.envs.games._base import GameEnv, IllegalMove, MoveError, Outcome
from gem_eval.envs.games._parsing import MAX_DIGITS

_INT = re.compile(r"-?\d+")
_RANDOM_HIGH = (10, 100)  # the range max_number=None draws from


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
        # Derived from the guesses, kept up to date so a step stays a few microseconds.
        self._guessed: set[int] = set()
        self._board = ""
        self._log_total = 0.0

    def _new_game(self) -> int:
        self.low = self.min_setting if self.min_setting is not None else 1
        high = self.max_setting
        self.high = high if high is not None else self.rng.randint(*_RANDOM_HIGH)
        if self.high < self.low:
            raise ValueError("max_number must be >= min_number")
        # randint(low, high) is randrange(low, high + 1): the same draw, one call less.
        self.secret = self.rng.randrange(self.low, self.high + 1)
        self.lo, self.hi = self.low, self.high
        self.guesses = []
        self._guessed = set()
        self._board = ""
        self._log_total, default_turns = _range_facts(self.low, self.high)
        return default_turns

    def _most_default_turns(self) -> int:
        low = self.min_setting if self.min_setting is not None else 1
        high = self.max_setting if self.max_setting is not None else _RANDOM_HIGH[1]
        return _range_facts(low, max(low, high))[1]  # more numbers, more turns

    def _rules(self) -> str:
        return _rules(self.low, self.high, self.max_turns, self.example_action)

    def _render(self) -> str:
        return self._board

    def _parse(self, text: str) -> int:
        if text.isdecimal() and len(text) <= MAX_DIGITS:  # the usual answer: skip the regex
            return int(text)
        numbers = _INT.findall(text.replace(",", ""))
        if len(numbers) != 1 or len(numbers[0].lstrip("-")) > MAX_DIGITS:
            raise MoveError("expected exactly one whole number")
        return int(numbers[0])

    def _apply(self, move: int) -> Outcome:
        if not self.low <= move <= self.high:
            raise IllegalMove(f"the number lies between {self.low} and {self.high}.")
        if move in self._guessed:
            raise IllegalMove(f"you already guessed {move}.")
        message, solved = self._play(move)
        return Outcome(message, solved=solved)

    def _play(self, move: int) -> tuple[str, bool]:
        """Play a legal move; the feedback, and whether it found the secret."""
        said = str(move)  # formatted once, for the message and the board
        if move == self.secret:
            hint, message = "correct", f"Correct! The number was {said}."
            self.lo = self.hi = move
        elif move < self.secret:
            hint, message = "too low", f"{said} is too low: the secret is higher."
            if move >= self.lo:  # a legal guess may lie outside the interval left
                self.lo = move + 1
        else:
            hint, message = "too high", f"{said} is too high: the secret is lower."
            if move <= self.hi:
                self.hi = move - 1
        self.guesses.append((move, hint))
        self._guessed.add(move)
        sep = ", " if self._board else "Your guesses so far: "
        self._board = f"{self._board}{sep}{said} ({hint})"
        return message, move == self.secret

    def step(self, action: str) -> StepResult:
        """:meth:`GameEnv.step`, with the usual move played without its generic hooks.

        The usual move is one new whole number in range, alone in the last ``\\boxed{}``.
        Anything else, and any step after the end, takes the generic path. Both give the
        same results (tests/games/test_guess_the_number.py holds them to it); this one
        costs a quarter less, which matters to RL loops and vector envs that step little
        else. (A subclass overriding ``_observation``, ``_info`` or ``_progress_reward``
        should override this too.)
        """
        text = last_boxed(action)
        if self.done or text is None or not text.isdecimal() or len(text) > MAX_DIGITS:
            return super().step(action)
        move = int(text)
        if not self.low <= move <= self.high or move in self._guessed:
            return super().step(action)
        self.turn += 1
        message, solved = self._play(move)
        # What GameEnv._progress_reward, _observation and _info make of a legal move,
        # written out for this game: the same values for a third of the calls.
        weight = self.progress_weight
        if solved:
            now, truncated = 1.0, False
            reward = weight * (1.0 - self._progress_now)
            reward += 1.0 - weight
            status = f"Solved in {self.turn} turn(s)."
        else:
            span = 1.0 - self._p0
            now = (self._raw_progress() - self._p0) / span if span > 0 else 0.0
            reward = weight * (now - self._progress_now)
            truncated = self.turn >= self.max_turns
            if truncated:
                status = f"Out of turns ({self.max_turns}): game over."
            else:
                status = f"Turns left: {self.max_turns - self.turn}."
        self._progress_now = now
        self.done = solved or truncated
        self._final = (solved, truncated, solved, False)
        info: dict[str, Any] = {
            "turn": self.turn,
            "max_turns": self.max_turns,
            "progress": now,
            "error": None,
        }
        if self.done:
            info["success"], info["lost"] = solved, False
        return f"{message}\n\n{self._board}\n\n{status}", reward, solved, truncated, info

    def _raw_progress(self) -> float:
        if not self._log_total:  # a range of one number
            return 1.0
        return 1.0 - math.log(self.hi - self.lo + 1) / self._log_total

    def oracle_action(self) -> str:
        return f"\\boxed{{{(self.lo + self.hi) // 2}}}"

    def sample_random_action(self, rng: random.Random) -> str:
        return f"\\boxed{{{rng.randint(self.low, self.high)}}}"


# Every episode of a variant has the same range and turns: these are computed once.
@functools.lru_cache(maxsize=256)
def _range_facts(low: int, high: int) -> tuple[float, int]:
    """``log`` of the range's size (0.0 for one number), and its default turn limit."""
    total = high - low + 1
    return (math.log(total) if total > 1 else 0.0), math.ceil(math.log2(total + 1)) + 1


@functools.lru_cache(maxsize=256)
def _rules(low: int, high: int, max_turns: int, example: str) -> str:
    return (
        f"Guess the secret number between {low} and {high} (inclusive). "
        f"After each guess you are told whether the secret is higher or lower. "
        f"You have {max_turns} guesses. "
        f"Answer with one number in \\boxed{{}}, e.g. {example}."
    )
