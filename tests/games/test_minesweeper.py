"""Tests of the Minesweeper game: flood fill, the safe first reveal, flags, parsing, oracle."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gem_eval.envs.games._base import IllegalMove, MoveError
from gem_eval.envs.games.minesweeper import MinesweeperEnv
from gem_eval.registration import make

VARIANTS = [
    "game:Minesweeper-v0",
    "game:Minesweeper-v0-easy",
    "game:Minesweeper-v0-hard",
    "game:Minesweeper-v0-random",
]
WALL = {(0, 2), (1, 2), (2, 2), (3, 2)}  # mines down column 2, open at the bottom


def made(env_id: str) -> MinesweeperEnv:
    env = make(env_id)
    assert isinstance(env, MinesweeperEnv)
    return env


def walled_board() -> MinesweeperEnv:
    """A 5x5 board with the WALL mines and the free first reveal already used."""
    env = MinesweeperEnv(rows=5, cols=5, num_mines=4, max_turns=10)
    env.reset(seed=0)
    env.set_mines(WALL)
    env.first_reveal = False
    return env


def test_flood_fill_stops_at_numbers() -> None:
    env = walled_board()
    obs, reward, terminated, _, info = env.step("\\boxed{reveal 0 0}")
    left = {(r, c) for r in range(5) for c in range(2)}
    assert env.revealed == left
    assert [env.adjacent[(r, 1)] for r in range(5)] == [2, 3, 3, 2, 1]
    assert reward == pytest.approx(0.5 * 10 / 21)
    assert not terminated and info["error"] is None
    assert "0 |   2 . . ." in obs
    assert "opened 9 more" in obs

    _, reward, _, _, _ = env.step("\\boxed{reveal 4 4}")
    right = {(r, c) for r in range(5) for c in (3, 4)}
    assert env.revealed == left | right
    assert reward == pytest.approx(0.5 * 10 / 21)

    _, reward, terminated, _, info = env.step("\\boxed{reveal 4 2}")
    assert terminated and info["success"] and not info["lost"]
    assert reward == pytest.approx(0.5 * 1 / 21 + 0.5)


def test_flood_fill_clears_wrong_flags() -> None:
    env = walled_board()
    env.step("\\boxed{flag 4 0}")
    env.step("\\boxed{reveal 0 0}")
    assert (4, 0) in env.revealed and not env.flags


def test_first_reveal_is_always_safe() -> None:
    for seed in range(20):
        env = MinesweeperEnv()
        env.reset(seed=seed)
        mine = min(env.mines)
        before = set(env.mines)
        _, _, terminated, _, info = env.step(f"\\boxed{{reveal {mine[0]} {mine[1]}}}")
        assert not terminated and info["error"] is None
        assert mine in env.revealed and mine not in env.mines
        assert len(env.mines) == 10 and len(env.mines & before) == 9
        assert sum(1 for cell in env.adjacent if cell not in env.mines) == 54


def test_first_reveal_relocation_is_reproducible() -> None:
    boards = []
    for _ in range(2):
        env = MinesweeperEnv()
        env.reset(seed=3)
        mine = min(env.mines)
        env.step(f"\\boxed{{reveal {mine[0]} {mine[1]}}}")
        boards.append(frozenset(env.mines))
    assert boards[0] == boards[1]


def test_revealing_a_mine_after_the_first_move_loses() -> None:
    env = walled_board()
    env.step("\\boxed{reveal 0 0}")
    obs, reward, terminated, truncated, info = env.step("\\boxed{reveal 1 2}")
    assert terminated and not truncated
    assert info["lost"] and not info["success"]
    assert reward == 0.0
    assert "X" in obs and obs.count("*") == 3 and "you lost" in obs
    _, _, _, _, info = env.step("\\boxed{reveal 4 4}")
    assert info["error"] == "episode_over"


def test_flag_toggles_and_blocks_reveal() -> None:
    env = walled_board()
    _, reward, _, _, info = env.step("\\boxed{flag 3 3}")
    assert env.flags == {(3, 3)} and reward == 0.0 and info["error"] is None
    obs, _, _, _, info = env.step("\\boxed{reveal 3 3}")
    assert info["error"] == "illegal" and "unflag" in obs
    assert (3, 3) not in env.revealed
    env.step("\\boxed{flag 3 3}")
    assert env.flags == set()
    env.step("\\boxed{flag 3 3}")
    env.step("\\boxed{unflag 3 3}")
    assert env.flags == set()
    _, reward, _, _, info = env.step("\\boxed{unflag 3 3}")
    assert info["error"] == "illegal" and reward == pytest.approx(-0.1)


@pytest.mark.parametrize(
    "action",
    ["\\boxed{reveal 5 0}", "\\boxed{reveal 0 5}", "\\boxed{flag 9 9}", "\\boxed{reveal 0 1}"],
)
def test_illegal_moves(action: str) -> None:
    env = walled_board()
    env.step("\\boxed{reveal 0 0}")
    revealed = set(env.revealed)
    _, reward, terminated, _, info = env.step(action)
    assert info["error"] == "illegal" and reward == pytest.approx(-0.1)
    assert not terminated and env.revealed == revealed
    with pytest.raises(IllegalMove):
        env._apply(env._parse(action[7:-1]))


@pytest.mark.parametrize(
    ("text", "move"),
    [
        ("reveal 3 4", ("reveal", 3, 4)),
        ("REVEAL (3, 4)", ("reveal", 3, 4)),
        ("3, 4", ("reveal", 3, 4)),
        ("(3,4)", ("reveal", 3, 4)),
        ("open row 3 col 4", ("reveal", 3, 4)),
        ("r3 c4", ("reveal", 3, 4)),
        ("Flag(1,2)", ("flag", 1, 2)),
        ("flag: 1, 2", ("flag", 1, 2)),
        ("unflag 1 2", ("unflag", 1, 2)),
    ],
)
def test_lenient_parsing(text: str, move: tuple[str, int, int]) -> None:
    assert MinesweeperEnv()._parse(text) == move


@pytest.mark.parametrize(
    "text", ["", "reveal", "reveal 1", "reveal 1 2 3", "explode 1 2", "flag reveal 1 2", "1.5 2"]
)
def test_unreadable_moves(text: str) -> None:
    with pytest.raises(MoveError):
        MinesweeperEnv()._parse(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_parse_and_apply_only_raise_move_errors(text: str) -> None:
    env = MinesweeperEnv(rows=5, cols=5, num_mines=4)
    env.reset(seed=1)
    with contextlib.suppress(MoveError, IllegalMove):
        env._apply(env._parse(text))


def test_reset_is_reproducible_and_random_variant_in_range() -> None:
    env = made("game:Minesweeper-v0-random")
    shapes = set()
    for seed in range(30):
        obs, _ = env.reset(seed=seed)
        mines = set(env.mines)
        assert env.reset(seed=seed)[0] == obs and env.mines == mines
        cells = env.rows * env.cols
        assert 5 <= env.rows <= 8 and 5 <= env.cols <= 8
        assert round(0.15 * cells) <= len(mines) <= round(0.20 * cells)
        assert env.max_turns == cells
        shapes.add((env.rows, env.cols))
    assert len(shapes) > 5


def test_oracle_unflags_a_safe_flagged_cell() -> None:
    env = walled_board()
    env.step("\\boxed{reveal 0 0}")
    env.step("\\boxed{reveal 4 4}")
    env.step("\\boxed{flag 4 2}")
    assert env.oracle_action() == "\\boxed{unflag 4 2}"
