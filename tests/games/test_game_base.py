"""GameEnv machinery that no single game's tests pin down."""

from __future__ import annotations

import random

import pytest

from gem_eval import make
from gem_eval.envs.games._base import GameEnv


@pytest.mark.parametrize("steps_before_use", [0, 3])
def test_play_rng_comes_from_the_seed_drawn_at_reset(steps_before_use: int) -> None:
    """The generator for in-play draws is made on first use, from a seed drawn at reset."""
    env = make("game:GuessTheNumber-v0")
    assert isinstance(env, GameEnv)
    env.reset(3)
    for _ in range(steps_before_use):  # play moves the episode on, not that seed
        env.step(env.oracle_action())
    reference = random.Random(random.Random(3).getrandbits(64))  # reset's first draw
    assert [env.play_rng.random() for _ in range(3)] == [reference.random() for _ in range(3)]
    env.reset()  # the next episode gets a generator of its own
    assert env.play_rng.random() != reference.random()
