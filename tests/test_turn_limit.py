"""``Env.turn_limit``: an env's own turn limit, known once it is built (before any reset),
which every episode keeps to; wrappers pass it on or change it."""

from __future__ import annotations

import pytest

from gem_eval import list_envs, make
from gem_eval.core import Env
from gem_eval.envs import GAME_VARIANTS
from gem_eval.wrappers import ChatHistory, EpisodeStats, MaxTurns, ToolEnv
from tests.fakes import FakeEnv

SEEDS = 200
"""Resets per ``-random`` variant: enough to draw its largest limit (the rarest, a 9x9
Sudoku with the fewest clues, comes about once in 32)."""


def drawn_limits(env: Env, seeds: int) -> set[int]:
    """The turn limit of each episode reset with seeds ``0 .. seeds - 1``."""
    found = set()
    for seed in range(seeds):
        _, info = env.reset(seed)
        found.add(info["max_turns"])
    return found


@pytest.mark.parametrize("env_id", list_envs("game"))
def test_a_game_declares_the_largest_limit_its_episodes_have(env_id: str) -> None:
    env = make(env_id)
    declared = env.turn_limit()
    assert declared is not None
    random = env_id.endswith("-random")
    drawn = drawn_limits(env, SEEDS if random else 5)
    assert max(drawn) == declared
    if not random:  # one fixed limit: the variant's setting
        name, variant = env_id.removeprefix("game:").split("-v0")
        assert drawn == {GAME_VARIANTS[name][2][variant.lstrip("-")]["max_turns"]}
    assert env.turn_limit() == declared  # resets do not change it


@pytest.mark.parametrize(
    ("env_id", "settings", "limit"),
    [
        ("game:GuessTheNumber-v0", {"max_number": None, "max_turns": None}, 8),
        ("game:GuessTheNumber-v0", {"max_number": 1000, "max_turns": None}, 11),
        ("game:Wordle-v0", {"word_length": 3, "max_turns": None}, 15),
        ("game:Hangman-v0", {"word_length": None, "max_turns": None}, 19),
        ("game:Minesweeper-v0", {"rows": 6, "cols": None, "max_turns": None}, 48),
        ("game:Sudoku-v0", {"scale": None, "clues": 10, "max_turns": None}, 10),  # 4x4 only
        ("game:Game2048-v0", {"target_tile": 256, "max_turns": None}, 256),
        ("game:Wordle-v0-random", {"max_turns": 3}, 3),  # a setting wins
    ],
)
def test_a_game_limit_follows_its_settings(
    env_id: str, settings: dict[str, object], limit: int
) -> None:
    assert make(env_id, **settings).turn_limit() == limit


def test_a_question_env_allows_max_turns_answers() -> None:
    question = {"question": "What is 6 * 7?", "answer": "42"}
    assert make("math:Math-v0", **question).turn_limit() == 1
    env = make("math:Math-v0", **question, max_turns=3)
    assert env.turn_limit() == 3
    env.reset(0)
    steps = [env.step("no answer here") for _ in range(3)]
    assert steps[-1][2] and not any(s[2] for s in steps[:-1])  # the third one ends it
    assert make("qa:QA-v0", question="Who?", answer="x").turn_limit() == 1


def test_wrappers_pass_the_limit_on_or_change_it() -> None:
    game = make("game:GuessTheNumber-v0-easy")  # 4 guesses
    assert FakeEnv().turn_limit() is None
    assert ChatHistory(EpisodeStats(game)).turn_limit() == 4
    assert MaxTurns(game, 2).turn_limit() == 2
    assert MaxTurns(game, 9).turn_limit() == 4
    assert MaxTurns(FakeEnv(), 5).turn_limit() == 5
    # Tool steps never reach the game, and there may be any number of them.
    assert ToolEnv(game, tools=[]).turn_limit() is None
