"""Tests for the Mastermind game: peg feedback, parsing, illegal moves, progress, oracle."""

from __future__ import annotations

import contextlib
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gem_eval.envs.games._base import IllegalMove, MoveError
from gem_eval.envs.games.mastermind import MastermindEnv, all_codes, pegs
from gem_eval.registration import make

VARIANTS = [
    "game:Mastermind-v0",
    "game:Mastermind-v0-easy",
    "game:Mastermind-v0-hard",
    "game:Mastermind-v0-random",
]


def _env(
    secret: tuple[int, ...] = (1, 2, 3, 4), num_numbers: int = 6, duplicate_numbers: bool = False
) -> MastermindEnv:
    env = MastermindEnv(num_numbers=num_numbers, duplicate_numbers=duplicate_numbers)
    env.reset(seed=0)
    env.secret = secret
    return env


@pytest.mark.parametrize(
    ("guess", "secret", "expected"),
    [
        ((1, 2, 3, 4), (1, 2, 3, 4), (4, 0)),
        ((4, 3, 2, 1), (1, 2, 3, 4), (0, 4)),
        ((1, 3, 2, 5), (1, 2, 3, 4), (1, 2)),
        ((5, 6, 5, 6), (1, 2, 3, 4), (0, 0)),
        # duplicates: each secret number pairs with at most one guessed copy
        ((1, 1, 2, 2), (1, 2, 1, 3), (1, 2)),
        ((2, 2, 2, 2), (1, 2, 1, 3), (1, 0)),
        ((1, 1, 1, 3), (3, 1, 1, 1), (2, 2)),
    ],
)
def test_pegs(guess: tuple[int, ...], secret: tuple[int, ...], expected: tuple[int, int]) -> None:
    assert pegs(guess, secret) == expected


def test_code_space_sizes() -> None:
    assert len(all_codes(4, 6, False)) == 360
    assert len(all_codes(4, 8, False)) == 1680
    assert len(all_codes(2, 6, True)) == 36
    assert all_codes(2, 3, False)[:3] == ((1, 2), (1, 3), (2, 1))


def test_step_reports_pegs_and_renders_history() -> None:
    env = _env((1, 2, 3, 4))
    obs, reward, terminated, truncated, info = env.step("I try \\boxed{1 3 2 5}")
    assert "1 black, 2 white" in obs
    assert "1 3 2 5  -> 1 black, 2 white" in obs
    assert info["error"] is None and not terminated and not truncated
    assert reward > 0
    obs, reward, terminated, _, info = env.step("\\boxed{1 2 3 4}")
    assert terminated and info["success"]
    assert "Correct" in obs


@pytest.mark.parametrize("text", ["1 2 3 4", "1234", "1,2,3,4", "[1, 2, 3, 4]", " (1; 2; 3; 4) "])
def test_lenient_parse(text: str) -> None:
    assert _env()._parse(text) == (1, 2, 3, 4)


def test_compact_form_is_not_split_when_numbers_exceed_nine() -> None:
    env = _env((1, 2, 3, 4), num_numbers=12)
    assert env._parse("10 11 12 1") == (10, 11, 12, 1)
    assert env._parse("1234") == (1234,)
    with pytest.raises(IllegalMove):
        env._apply(env._parse("1234"))


@pytest.mark.parametrize("text", ["", "a b c d", "1 2 x 4", "1.5 2 3 4", "-1 2 3 4", "١٢٣٤"])
def test_unreadable_moves(text: str) -> None:
    with pytest.raises(MoveError):
        _env()._parse(text)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("1 2 3", "4 numbers"),
        ("1 2 3 4 5", "4 numbers"),
        ("0 1 2 3", "from 1 to 6"),
        ("1 2 3 7", "from 1 to 6"),
        ("1 2 3 99999999999", "from 1 to 6"),
        ("1 1 2 3", "all different"),
    ],
)
def test_illegal_moves(text: str, why: str) -> None:
    env = _env()
    obs, reward, _, _, info = env.step(f"\\boxed{{{text}}}")
    assert info["error"] == "illegal"
    assert reward == pytest.approx(-0.1)
    assert why in obs
    assert env.turn == 1 and env.history == []


def test_repeated_guess_is_illegal() -> None:
    env = _env()
    env.step("\\boxed{5 6 1 2}")
    obs, _, _, _, info = env.step("\\boxed{5612}")
    assert info["error"] == "illegal" and "already guessed" in obs


def test_duplicates_allowed_when_enabled() -> None:
    env = _env((1, 1, 2, 2), duplicate_numbers=True)
    _, _, _, _, info = env.step("\\boxed{1 1 3 3}")
    assert info["error"] is None
    assert env.history == [((1, 1, 3, 3), 2, 0)]


def test_progress_counts_consistent_codes() -> None:
    env = _env((1, 2, 3, 4))
    _, reward, _, _, info = env.step("\\boxed{1 3 2 5}")
    consistent = [c for c in all_codes(4, 6, False) if pegs((1, 3, 2, 5), c) == (1, 2)]
    assert env.candidates == consistent
    expected = 1 - math.log(len(consistent)) / math.log(360)
    assert info["progress"] == pytest.approx(expected)
    assert reward == pytest.approx(0.5 * expected)


def test_reset_is_reproducible_and_random_variant_draws_parameters() -> None:
    env = make("game:Mastermind-v0-random")
    assert isinstance(env, MastermindEnv)
    seen = set()
    for seed in range(30):
        obs, _ = env.reset(seed=seed)
        secret, shape = env.secret, (env.code_length, env.num_numbers)
        assert 2 <= env.code_length <= 4 and 6 <= env.num_numbers <= 8
        assert env.max_turns == 5 * env.code_length
        assert env.reset(seed=seed)[0] == obs and env.secret == secret
        seen.add(shape)
    assert len(seen) >= 5


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parse_and_apply_only_raise_game_errors(text: str) -> None:
    env = _env()
    with contextlib.suppress(MoveError, IllegalMove):
        env._apply(env._parse(text))


def test_random_actions_are_readable() -> None:
    env = make("game:Mastermind-v0-random")
    assert isinstance(env, MastermindEnv)
    for seed in range(20):
        env.reset(seed=seed)
        _, _, _, _, info = env.step(env.sample_random_action(env.rng))
        assert info["error"] is None
