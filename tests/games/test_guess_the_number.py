"""GuessTheNumber's own step (a fast path for the usual move) against GameEnv's generic one."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gem_eval import make
from gem_eval.envs.games._base import GameEnv
from gem_eval.envs.games.guess_the_number import GuessTheNumberEnv

VARIANTS = [
    "game:GuessTheNumber-v0",
    "game:GuessTheNumber-v0-easy",
    "game:GuessTheNumber-v0-random",
]


def twins(env_id: str, **overrides: Any) -> tuple[GuessTheNumberEnv, GuessTheNumberEnv]:
    a, b = make(env_id, **overrides), make(env_id, **overrides)
    assert isinstance(a, GuessTheNumberEnv) and isinstance(b, GuessTheNumberEnv)
    return a, b


def state(env: GuessTheNumberEnv) -> tuple[Any, ...]:
    return (env.guesses, env.lo, env.hi, env.turn, env.done, env._render(), env._final)


def action_for(env: GuessTheNumberEnv, rng: random.Random) -> str:
    """Mostly moves the fast path plays (new numbers in range); also every kind it must not."""
    number = rng.randint(env.low - 2, env.high + 2)
    return rng.choice(
        [
            env.oracle_action(),
            f"\\boxed{{{number}}}",
            f"I think it is \\boxed{{{number}}}.",
            f"\\boxed{{ {number} }}",  # spaces: the generic path
            f"\\boxed{{0{number}}}",  # a leading zero
            f"\\boxed{{{rng.choice(env.guesses)[0] if env.guesses else number}}}",  # a repeat
            "\\boxed{٣}",  # a decimal digit int() reads, outside ASCII
            "\\boxed{1234567}",  # longer than a move may be
            "\\boxed{-3}",
            "\\boxed{\\frac{1}{2}}",
            "no box",
        ]
    )


def play_both(env_id: str, seed: int, steps: int, **overrides: Any) -> int:
    """Step twins with the same actions, one by its own step, one by GameEnv.step."""
    fast, generic = twins(env_id, **overrides)
    rng = random.Random(seed)
    assert fast.reset(seed) == generic.reset(seed)
    fast_moves = 0
    for _ in range(steps):
        action = action_for(fast, rng)
        before = fast.turn
        got = fast.step(action)
        want = GameEnv.step(generic, action)
        assert got == want, action
        assert list(got[4]) == list(want[4])  # the info keys in the same order, too
        assert state(fast) == state(generic), action
        fast_moves += got[4]["error"] is None and fast.turn > before
        if got[2] or got[3]:
            if rng.random() < 0.5:  # also a step after the end, before the reset
                assert fast.step(action) == GameEnv.step(generic, action)
            assert fast.reset() == generic.reset()
    return fast_moves


@pytest.mark.parametrize("env_id", VARIANTS)
def test_the_fast_step_gives_what_the_generic_step_gives(env_id: str) -> None:
    legal_moves = sum(play_both(env_id, seed, 60) for seed in range(20))
    assert legal_moves > 200  # the fast path was taken, not only the fallbacks


def test_a_range_of_one_number_and_other_reward_settings() -> None:
    play_both("game:GuessTheNumber-v0", 1, 30, min_number=4, max_number=4)
    play_both("game:GuessTheNumber-v0", 2, 60, progress_weight=0.0, max_turns=3)
    play_both("game:GuessTheNumber-v0", 3, 60, progress_weight=1.0, max_number=999_999)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10_000), actions=st.lists(st.text(max_size=14), max_size=12))
def test_any_text_gives_the_same_step(seed: int, actions: list[str]) -> None:
    fast, generic = twins("game:GuessTheNumber-v0-easy")
    fast.reset(seed)
    generic.reset(seed)
    for text in actions:
        action = f"\\boxed{{{text}}}" if seed % 2 else text
        assert fast.step(action) == GameEnv.step(generic, action)
        assert state(fast) == state(generic)


def test_rules_follow_each_episodes_drawn_range() -> None:
    env = make("game:GuessTheNumber-v0-random")
    assert isinstance(env, GuessTheNumberEnv)
    ranges = set()
    for seed in range(30):
        obs, _ = env.reset(seed)
        ranges.add(env.high)
        assert f"between {env.low} and {env.high} " in obs
        assert f"You have {env.max_turns} guesses." in obs
    assert len(ranges) > 5


def test_a_guess_outside_the_interval_left_narrows_nothing() -> None:
    env = make("game:GuessTheNumber-v0", max_number=100)
    assert isinstance(env, GuessTheNumberEnv)
    for seed in range(100):  # an episode whose secret lies inside 6..94
        env.reset(seed)
        if 10 < env.secret < 90:
            break
    env.step("\\boxed{5}")  # too low: the interval becomes 6..100
    env.step("\\boxed{95}")  # too high: 6..94
    for wide in ("\\boxed{2}", "\\boxed{99}"):  # legal, new, and outside 6..94
        obs, reward, *_ = env.step(wide)
        assert (env.lo, env.hi) == (6, 94), wide
        assert reward == 0.0
        assert "the secret is" in obs
