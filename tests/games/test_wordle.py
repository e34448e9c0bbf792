"""Tests for the Wordle game: letter marks, parsing, illegal guesses, progress, oracle."""

from __future__ import annotations

import contextlib
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gem_eval.envs.games._base import IllegalMove, MoveError
from gem_eval.envs.games._words import words
from gem_eval.envs.games.wordle import WordleEnv, feedback
from gem_eval.registration import make

VARIANTS = ["game:Wordle-v0", "game:Wordle-v0-easy", "game:Wordle-v0-hard", "game:Wordle-v0-random"]


def _env(secret: str = "abbey") -> WordleEnv:
    env = WordleEnv(word_length=len(secret))
    env.reset(seed=0)
    env.secret = secret
    return env


@pytest.mark.parametrize(
    ("guess", "secret", "marks"),
    [
        ("abbey", "abbey", "GGGGG"),
        ("babes", "abbey", "YYGGX"),
        # one 'e' in the secret: only the first guessed 'e' is yellow
        ("keeps", "abbey", "XYXXX"),
        # greens are marked before yellows: the green 'e' uses up the only 'e'
        ("geese", "those", "XXXGG"),
        ("eerie", "lever", "YGYXX"),
        ("crane", "slate", "XXGXG"),
        ("stats", "toast", "YYGYX"),
    ],
)
def test_feedback(guess: str, secret: str, marks: str) -> None:
    assert feedback(guess, secret) == marks


def test_step_renders_history_and_solves() -> None:
    env = _env("abbey")
    obs, reward, terminated, _, info = env.step("\\boxed{babes}")
    assert "BABES  Y Y G G X" in obs
    assert info["error"] is None and not terminated and reward > 0
    obs, _, _, _, _ = env.step("\\boxed{keeps}")
    assert "BABES  Y Y G G X\nKEEPS  X Y X X X" in obs
    obs, _, terminated, _, info = env.step("\\boxed{abbey}")
    assert terminated and info["success"] and "Correct" in obs


@pytest.mark.parametrize("text", ["crane", "  CRANE ", '"crane"', "'Crane'", "`cRaNe`."])
def test_lenient_parse(text: str) -> None:
    assert _env()._parse(text) == "crane"


@pytest.mark.parametrize("text", ["", "two words", "cr4ne", "crâne", "c-r-a-n-e"])
def test_unreadable_guesses(text: str) -> None:
    with pytest.raises(MoveError):
        _env()._parse(text)


@pytest.mark.parametrize(
    ("guess", "why"),
    [("xyzzy", "not in the word list"), ("cranes", "5 letters"), ("cat", "5 letters")],
)
def test_illegal_guesses(guess: str, why: str) -> None:
    env = _env()
    obs, reward, _, _, info = env.step(f"\\boxed{{{guess}}}")
    assert info["error"] == "illegal"
    assert reward == pytest.approx(-0.1)
    assert why in obs
    assert env.history == [] and env.turn == 1


def test_repeated_guess_is_illegal() -> None:
    env = _env()
    env.step("\\boxed{crane}")
    obs, _, _, _, info = env.step("\\boxed{CRANE}")
    assert info["error"] == "illegal" and "already guessed" in obs


def test_progress_counts_consistent_words() -> None:
    env = _env("abbey")
    _, reward, _, _, info = env.step("\\boxed{babes}")
    consistent = [w for w in words(5) if feedback("babes", w) == "YYGGX"]
    assert "abbey" in consistent
    assert env.candidates == consistent
    expected = 1 - math.log(len(consistent)) / math.log(len(words(5)))
    assert info["progress"] == pytest.approx(expected)
    assert reward == pytest.approx(0.5 * expected)


def test_reset_is_reproducible_and_random_variant_draws_lengths() -> None:
    env = make("game:Wordle-v0-random")
    assert isinstance(env, WordleEnv)
    lengths = set()
    for seed in range(30):
        obs, _ = env.reset(seed=seed)
        secret = env.secret
        assert 3 <= env.word_length <= 6 and len(secret) == env.word_length
        assert env.reset(seed=seed)[0] == obs and env.secret == secret
        lengths.add(env.word_length)
    assert lengths == {3, 4, 5, 6}


@pytest.mark.parametrize("secret", ["wills", "tight", "vat"])
def test_oracle_handles_letter_families(secret: str) -> None:
    # "_ills", "_ight", "_at" have 8-11 words each: guessing them one by one would be slow
    env = _env(secret)
    while not env.done:
        env.step(env.oracle_action())
    assert env.history[-1] == (secret, "G" * len(secret))
    assert len(env.history) <= 6


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parse_and_apply_only_raise_game_errors(text: str) -> None:
    env = _env()
    with contextlib.suppress(MoveError, IllegalMove):
        env._apply(env._parse(text))
