"""Tests for the Hangman game: reveals, lives, illegal guesses, progress, oracle."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gem_eval.envs.games._base import IllegalMove, MoveError
from gem_eval.envs.games.hangman import HangmanEnv
from gem_eval.policies import OraclePolicy
from gem_eval.registration import make
from gem_eval.rollout import rollout

VARIANTS = [
    "game:Hangman-v0",
    "game:Hangman-v0-easy",
    "game:Hangman-v0-hard",
    "game:Hangman-v0-random",
]


def _env(secret: str = "apple", lives: int = 6) -> HangmanEnv:
    env = HangmanEnv(word_length=len(secret), lives=lives)
    env.reset(seed=0)
    env.secret = secret
    return env


def test_letters_reveal_every_copy_and_progress_counts_distinct_letters() -> None:
    env = _env("apple")
    obs, reward, terminated, _, info = env.step("\\boxed{p}")
    assert "Word: _ p p _ _" in obs
    assert "occurs 2 time(s)" in obs
    assert info["progress"] == pytest.approx(1 / 4)  # a, p, l, e
    assert reward == pytest.approx(0.5 * 1 / 4)
    obs, _, _, _, info = env.step("\\boxed{E}")
    assert "Word: _ p p _ e" in obs
    assert "Lives left: 6 of 6" in obs and "Letters tried: e, p" in obs
    assert info["progress"] == pytest.approx(2 / 4)
    env.step("\\boxed{a}")
    _, reward, terminated, _, info = env.step("\\boxed{l}")
    assert terminated and info["success"]
    assert reward == pytest.approx(0.5 * 1 / 4 + 0.5)


def test_wrong_guesses_cost_lives_until_lost() -> None:
    env = _env("apple", lives=3)
    obs, reward, terminated, _, _ = env.step("\\boxed{z}")
    assert "Lives left: 2 of 3" in obs and not terminated and reward == 0.0
    obs, _, terminated, _, _ = env.step("\\boxed{angle}")
    assert "Lives left: 1 of 3" in obs and "Wrong words: angle" in obs and not terminated
    obs, reward, terminated, truncated, info = env.step("\\boxed{q}")
    assert terminated and not truncated
    assert info["lost"] and not info["success"]
    assert "the word was 'apple'" in obs and "you lost" in obs
    assert reward == 0.0


def test_whole_word_guess_solves() -> None:
    env = _env("apple")
    env.step("\\boxed{p}")
    _, reward, terminated, _, info = env.step("\\boxed{ Apple }")
    assert terminated and info["success"]
    assert reward == pytest.approx(0.5 * 3 / 4 + 0.5)


@pytest.mark.parametrize("text", ["e", " E ", '"e"', "'apple'", "APPLE."])
def test_lenient_parse(text: str) -> None:
    assert _env()._parse(text) in {"e", "apple"}


@pytest.mark.parametrize("text", ["", "1", "e1", "a b", "é", "a-p-p-l-e"])
def test_unreadable_guesses(text: str) -> None:
    with pytest.raises(MoveError):
        _env()._parse(text)


def test_illegal_guesses() -> None:
    env = _env("apple")
    env.step("\\boxed{e}")
    env.step("\\boxed{angle}")
    for guess, why in [("e", "already tried"), ("angle", "already guessed"), ("ap", "5-letter")]:
        obs, reward, _, _, info = env.step(f"\\boxed{{{guess}}}")
        assert info["error"] == "illegal", guess
        assert why in obs
        assert reward == pytest.approx(-0.1)
    assert env.lives_left == 5  # illegal moves cost a turn, not a life


def test_candidates_follow_mask_and_misses() -> None:
    env = _env("apple")
    env.step("\\boxed{p}")
    env.step("\\boxed{s}")
    assert "apple" in env.candidates
    assert all(w[1:3] == "pp" and "s" not in w for w in env.candidates)
    assert all(w[0] != "p" and w[3] != "p" and w[4] != "p" for w in env.candidates)


def test_reset_is_reproducible_and_random_variant_draws_lengths() -> None:
    env = make("game:Hangman-v0-random")
    assert isinstance(env, HangmanEnv)
    lengths = set()
    for seed in range(40):
        obs, _ = env.reset(seed=seed)
        secret = env.secret
        assert 3 <= env.word_length <= 7 and len(secret) == env.word_length
        assert env.max_turns == 2 * env.word_length + 5
        assert env.reset(seed=seed)[0] == obs and env.secret == secret
        lengths.add(env.word_length)
    assert lengths == {3, 4, 5, 6, 7}


@pytest.mark.parametrize("env_id", VARIANTS)
def test_oracle_solves_every_variant_without_losing_a_life(env_id: str) -> None:
    env = make(env_id)
    assert isinstance(env, HangmanEnv)
    for seed in range(40):
        assert rollout(env, OraclePolicy(), seed).success, (env_id, seed)
        assert env.lives_left == env.lives
        assert env.turn <= min(env.max_turns, env.word_length)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parse_and_apply_only_raise_game_errors(text: str) -> None:
    env = _env()
    with contextlib.suppress(MoveError, IllegalMove):
        env._apply(env._parse(text))
