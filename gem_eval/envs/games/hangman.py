"""Hangman: reveal a hidden word one letter at a time before the lives run out.

A move is one letter or a guess of the whole word. A letter in the word reveals every copy
of it; a letter not in the word, or a wrong word, costs a life. Revealing every letter or
naming the word solves the game; losing the last life loses it. Trying a letter twice,
repeating a wrong word, or a guess of neither one letter nor the word's length is illegal.

Progress is the fraction of the word's distinct letters revealed so far.
"""

from __future__ import annotations

import random
from collections import Counter

from gem_eval.envs.games._base import GameEnv, IllegalMove, MoveError, Outcome
from gem_eval.envs.games._words import words

_ALPHABET = "abcdefghijklmnopqrstuvwxyz"
_STRIP = " \t\r\n'\"`.!"
_RANDOM_LENGTHS = (3, 7)  # the range word_length=None draws from


class HangmanEnv(GameEnv[str]):
    """Find a hidden word of ``word_length`` letters, losing a life per wrong guess.

    Args:
        word_length: Letters in the word. ``None`` draws one in 3..7 per episode.
        max_turns: Guesses allowed. ``None``: twice the word length, plus five.
        lives: Wrong guesses that end the game.
    """

    title = "Hangman"
    example_action = "\\boxed{e}"

    def __init__(
        self,
        word_length: int | None = 5,
        max_turns: int | None = 15,
        lives: int = 6,
        **reward_kwargs: float,
    ) -> None:
        super().__init__(max_turns=max_turns, **reward_kwargs)
        if lives < 1:
            raise ValueError("lives must be at least 1")
        self.length_setting = word_length
        self.lives = lives
        self.word_length = self.lives_left = 0
        self.secret = ""
        self.tried: list[str] = []  # letters, in the order tried
        self.wrong_words: list[str] = []
        self.candidates: list[str] = []  # words consistent with everything seen, sorted

    def _new_game(self) -> int:
        length = self.length_setting
        self.word_length = length if length is not None else self.rng.randint(*_RANDOM_LENGTHS)
        vocabulary = words(self.word_length)
        self.secret = self.rng.choice(vocabulary)
        self.candidates = list(vocabulary)
        self.lives_left = self.lives
        self.tried, self.wrong_words = [], []
        return 2 * self.word_length + 5

    def _most_default_turns(self) -> int:
        length = self.length_setting
        return 2 * (length if length is not None else _RANDOM_LENGTHS[1]) + 5

    def _rules(self) -> str:
        return (
            f"Find the hidden {self.word_length}-letter English word. Guess one letter at a "
            f"time, or the whole word. A letter in the word is revealed everywhere it occurs; "
            f"a wrong letter or a wrong word costs one of your {self.lives} lives, and losing "
            f"them all loses the game. You have {self.max_turns} guesses. Answer with a letter "
            f"or a word in \\boxed{{}}, e.g. {self.example_action}."
        )

    def _render(self) -> str:
        lines = [
            f"Word: {' '.join(self._mask())}",
            f"Lives left: {self.lives_left} of {self.lives}",
            f"Letters tried: {', '.join(sorted(self.tried)) or 'none'}",
        ]
        if self.wrong_words:
            lines.append(f"Wrong words: {', '.join(self.wrong_words)}")
        return "\n".join(lines)

    def _mask(self) -> str:
        return "".join(c if c in self.tried else "_" for c in self.secret)

    def _parse(self, text: str) -> str:
        guess = text.strip(_STRIP)
        if not (guess.isascii() and guess.isalpha()):
            raise MoveError("expected one letter or a whole word, in letters only")
        return guess.lower()

    def _apply(self, move: str) -> Outcome:
        if len(move) == 1:
            return self._guess_letter(move)
        if len(move) != self.word_length:
            raise IllegalMove(
                f"guess one letter or the whole {self.word_length}-letter word, "
                f"not {len(move)} letters."
            )
        if move in self.wrong_words:
            raise IllegalMove(f"you already guessed {move!r}.")
        if move == self.secret:
            self.tried.extend(c for c in dict.fromkeys(move) if c not in self.tried)
            return Outcome(f"Correct! The word was {move!r}.", solved=True)
        self.wrong_words.append(move)
        return self._lose_life(f"{move!r} is not the word.")

    def _guess_letter(self, letter: str) -> Outcome:
        if letter in self.tried:
            raise IllegalMove(f"you already tried {letter!r}.")
        self.tried.append(letter)
        if letter not in self.secret:
            return self._lose_life(f"There is no {letter!r} in the word.")
        self._update_candidates()
        if "_" not in self._mask():
            return Outcome(f"Correct! The word was {self.secret!r}.", solved=True)
        return Outcome(f"Yes, {letter!r} occurs {self.secret.count(letter)} time(s).")

    def _lose_life(self, message: str) -> Outcome:
        self.lives_left -= 1
        self._update_candidates()
        if self.lives_left <= 0:
            return Outcome(f"{message} No lives left: the word was {self.secret!r}.", lost=True)
        return Outcome(f"{message} Lives left: {self.lives_left}.")

    def _update_candidates(self) -> None:
        mask, tried = self._mask(), set(self.tried)
        self.candidates = [
            w
            for w in self.candidates
            if w not in self.wrong_words
            and all(c == m if m != "_" else c not in tried for c, m in zip(w, mask))
        ]

    def _raw_progress(self) -> float:
        distinct = set(self.secret)
        return len(distinct.intersection(self.tried)) / len(distinct)

    def oracle_action(self) -> str:
        """Privileged: it reads ``self.secret``, so it never loses a life.

        An honest letter-frequency solver cannot promise a win: a three-letter word such as
        ``_at`` has a dozen completions, more than the lives. So this oracle ranks the
        untried letters honestly, by how many consistent words contain them, but plays the
        best-ranked letter that is in the secret; it names the word once only one fits.
        """
        if len(self.candidates) == 1:
            return f"\\boxed{{{self.candidates[0]}}}"
        counts = Counter(c for w in self.candidates for c in set(w) if c not in self.tried)
        hits = [c for c in set(self.secret) if c not in self.tried]
        return f"\\boxed{{{max(hits, key=lambda c: (counts[c], -ord(c)))}}}"

    def sample_random_action(self, rng: random.Random) -> str:
        if rng.random() < 0.1:
            return f"\\boxed{{{rng.choice(words(self.word_length))}}}"
        return f"\\boxed{{{rng.choice(_ALPHABET)}}}"
