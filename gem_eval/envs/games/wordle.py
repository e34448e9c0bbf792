"""Wordle: find a hidden word from green / yellow / gray letter feedback.

Each guess must be a word of the right length from the word list, not guessed before. Every
letter is marked ``G`` (right letter, right spot), ``Y`` (in the word, elsewhere) or ``X``
(not in the word, or all its copies already marked). Greens are marked first, then yellows
left to right, each limited by the copies of the letter left in the secret.

Progress is the share of the (log-scaled) word list ruled out so far:
``1 - log(#words consistent with the feedback) / log(#words)``.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence
from functools import cache

from gem_eval.envs.games._base import GameEnv, IllegalMove, MoveError, Outcome
from gem_eval.envs.games._words import word_set, words

_ALPHABET = "abcdefghijklmnopqrstuvwxyz"
_STRIP = " \t\r\n'\"`.!"
_BUDGET = 12_000  # feedback evaluations per oracle move, to keep it fast
_POOL_MAX = 60  # guesses scored per oracle move
_RANDOM_LENGTHS = (3, 6)  # the range word_length=None draws from


def feedback(guess: str, secret: str) -> str:
    """The ``G``/``Y``/``X`` marks of ``guess`` against ``secret`` (same length)."""
    marks = ["X"] * len(guess)
    unmatched: dict[str, int] = {}
    for i, (g, s) in enumerate(zip(guess, secret)):
        if g == s:
            marks[i] = "G"
        else:
            unmatched[s] = unmatched.get(s, 0) + 1
    for i, g in enumerate(guess):
        if marks[i] == "X" and unmatched.get(g, 0) > 0:
            marks[i] = "Y"
            unmatched[g] -= 1
    return "".join(marks)


def best_guess(candidates: Sequence[str], length: int, played: Sequence[str] = ()) -> str:
    """A guess that splits ``candidates`` well: the smallest worst-case feedback group.

    Scoring every word against every candidate is too slow, so the guesses scored are the
    words (and the candidates) that best split the candidates' letters, as many as
    :data:`_BUDGET` allows.
    """
    if len(candidates) <= 2:
        return candidates[0]
    n = len(candidates)
    # A letter that all or none of the candidates share tells nothing: value min(k, n - k).
    letters = Counter(c for word in candidates for c in set(word))
    value = {c: min(letters[c], n - letters[c]) for c in _ALPHABET}
    places = [Counter(word[i] for word in candidates) for i in range(length)]
    place_value = [{c: 0.5 * min(p[c], n - p[c]) for c in _ALPHABET} for p in places]

    def split(word: str) -> float:
        return sum(map(value.__getitem__, set(word))) + sum(
            map(dict.__getitem__, place_value, word)
        )

    size = max(2, min(_POOL_MAX, _BUDGET // n))
    fresh = [w for w in words(length) if w not in played]
    pool = dict.fromkeys(sorted(fresh, key=split, reverse=True)[:size])
    pool.update(dict.fromkeys(sorted(candidates, key=split, reverse=True)[: size // 2]))
    is_candidate = set(candidates)

    def cost(guess: str) -> tuple[int, int, bool]:
        groups = Counter(feedback(guess, secret) for secret in candidates)
        return max(groups.values()), sum(v * v for v in groups.values()), guess not in is_candidate

    return min(pool, key=cost)


def _default_turns(length: int) -> int:
    return 15 if length <= 3 else 20


@cache
def _opening(length: int) -> str:
    """The oracle's first guess, which depends only on the word length."""
    return best_guess(words(length), length)


class WordleEnv(GameEnv[str]):
    """Find a hidden word of ``word_length`` letters.

    Args:
        word_length: Letters in the word. ``None`` draws one in 3..6 per episode.
        max_turns: Guesses allowed. ``None``: 15 for three-letter words, else 20.
    """

    title = "Wordle"
    example_action = "\\boxed{crane}"

    def __init__(
        self,
        word_length: int | None = 5,
        max_turns: int | None = 20,
        **reward_kwargs: float,
    ) -> None:
        super().__init__(max_turns=max_turns, **reward_kwargs)
        self.length_setting = word_length
        self.word_length = 0
        self.secret = ""
        self.history: list[tuple[str, str]] = []
        self.candidates: list[str] = []  # words consistent with all feedback, sorted

    def _new_game(self) -> int:
        length = self.length_setting
        self.word_length = length if length is not None else self.rng.randint(*_RANDOM_LENGTHS)
        vocabulary = words(self.word_length)
        self.secret = self.rng.choice(vocabulary)
        self.candidates = list(vocabulary)
        self.history = []
        self.example_action = f"\\boxed{{{vocabulary[len(vocabulary) // 2]}}}"
        return _default_turns(self.word_length)

    def _most_default_turns(self) -> int:
        length = self.length_setting
        return _default_turns(length if length is not None else _RANDOM_LENGTHS[1])

    def _rules(self) -> str:
        return (
            f"Find the hidden {self.word_length}-letter English word. After each guess every "
            f"letter is marked G (right letter, right spot), Y (in the word but elsewhere) or "
            f"X (not in the word, or no more copies of it). Guesses must be words from the "
            f"word list. You have {self.max_turns} guesses. Answer with one word in "
            f"\\boxed{{}}, e.g. {self.example_action}."
        )

    def _render(self) -> str:
        if not self.history:
            return ""
        lines = [f"{g.upper()}  {' '.join(marks)}" for g, marks in self.history]
        return "Your guesses so far:\n" + "\n".join(lines)

    def _parse(self, text: str) -> str:
        word = text.strip(_STRIP)
        if not (word.isascii() and word.isalpha()):
            raise MoveError("expected one word made of letters")
        return word.lower()

    def _apply(self, move: str) -> Outcome:
        if len(move) != self.word_length:
            raise IllegalMove(f"the word has {self.word_length} letters, not {len(move)}.")
        if move not in word_set(self.word_length):
            raise IllegalMove(f"{move!r} is not in the word list.")
        if any(move == g for g, _ in self.history):
            raise IllegalMove(f"you already guessed {move!r}.")
        marks = feedback(move, self.secret)
        self.history.append((move, marks))
        self.candidates = [w for w in self.candidates if feedback(move, w) == marks]
        if move == self.secret:
            return Outcome(f"Correct! The word was {move!r}.", solved=True)
        return Outcome(f"{move.upper()}  {' '.join(marks)}")

    def _raw_progress(self) -> float:
        return 1.0 - math.log(len(self.candidates)) / math.log(len(words(self.word_length)))

    def oracle_action(self) -> str:
        """Honest: minimax over the feedback, using only the guesses and their marks."""
        if not self.history:
            return f"\\boxed{{{_opening(self.word_length)}}}"
        played = [g for g, _ in self.history]
        return f"\\boxed{{{best_guess(self.candidates, self.word_length, played)}}}"

    def sample_random_action(self, rng: random.Random) -> str:
        return f"\\boxed{{{rng.choice(words(self.word_length))}}}"
