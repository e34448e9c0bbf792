"""Game2048: merge rules, spawns, illegal moves, winning, losing and the oracle."""

from __future__ import annotations

import pytest

from gem_eval.envs.games._base import MoveError
from gem_eval.envs.games._parsing import DIRECTIONS
from gem_eval.envs.games.game_2048 import Game2048Env, merge_line, slide
from gem_eval.policies import OraclePolicy
from gem_eval.registration import make
from gem_eval.rollout import rollout

VARIANTS = ["", "-easy", "-hard", "-random"]


def board_of(*rows: list[int]) -> tuple[int, ...]:
    return tuple(v for row in rows for v in row)


def env_with(board: tuple[int, ...], target: int = 128) -> Game2048Env:
    env = Game2048Env(target_tile=target, max_turns=100)
    env.reset(seed=0)
    env.board = board
    return env


@pytest.mark.parametrize(
    ("line", "merged"),
    [
        ([2, 2, 2, 2], [4, 4, 0, 0]),
        ([2, 2, 4, 0], [4, 4, 0, 0]),  # the new 4 does not merge again in the same move
        ([0, 2, 0, 2], [4, 0, 0, 0]),
        ([2, 2, 2, 0], [4, 2, 0, 0]),  # the pair nearest the wall merges first
        ([8, 0, 8, 8], [16, 8, 0, 0]),
        ([4, 4, 8, 8], [8, 16, 0, 0]),
        ([2, 4, 8, 16], [2, 4, 8, 16]),
        ([0, 0, 0, 2], [2, 0, 0, 0]),
    ],
)
def test_merge_rules(line: list[int], merged: list[int]) -> None:
    assert merge_line(line) == merged


def test_slide_in_each_direction() -> None:
    board = board_of([2, 2, 0, 4], [0, 0, 0, 4], [2, 0, 0, 0], [2, 0, 0, 8])
    assert slide(board, "left") == board_of([4, 4, 0, 0], [4, 0, 0, 0], [2, 0, 0, 0], [2, 8, 0, 0])
    assert slide(board, "right") == board_of([0, 0, 4, 4], [0, 0, 0, 4], [0, 0, 0, 2], [0, 0, 2, 8])
    assert slide(board, "up") == board_of([4, 2, 0, 8], [2, 0, 0, 8], [0, 0, 0, 0], [0, 0, 0, 0])
    assert slide(board, "down") == board_of([0, 0, 0, 0], [0, 0, 0, 0], [2, 0, 0, 8], [4, 2, 0, 8])


def test_a_changing_move_spawns_exactly_one_tile_on_an_empty_cell() -> None:
    start = board_of([2, 2, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 4])
    for seed in range(20):
        env = Game2048Env(target_tile=128)
        env.reset(seed=seed)
        env.board = start
        _, _, terminated, _, info = env.step("\\boxed{left}")
        slid = slide(start, "left")
        new = [i for i in range(16) if env.board[i] != slid[i]]
        assert len(new) == 1 and slid[new[0]] == 0 and env.board[new[0]] in (2, 4)
        assert info["error"] is None and not terminated


def test_a_move_that_changes_nothing_is_illegal_and_spawns_nothing() -> None:
    board = board_of([2, 4, 0, 0], [8, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0])
    env = env_with(board)
    rng_state = env.rng.getstate()
    obs, reward, terminated, _, info = env.step("\\boxed{left}")
    assert env.board == board
    assert env.rng.getstate() == rng_state
    assert info["error"] == "illegal" and reward == pytest.approx(-0.1) and not terminated
    assert "changes nothing" in obs


def test_reaching_the_target_wins() -> None:
    env = env_with(board_of([32, 32, 0, 0], [0] * 4, [0] * 4, [2, 0, 0, 0]), target=64)
    obs, reward, terminated, truncated, info = env.step("\\boxed{left}")
    assert terminated and not truncated and info["success"]
    assert reward == pytest.approx(1.0)
    assert env.board[0] == 64 and "64 tile" in obs


def test_a_full_board_without_merges_loses() -> None:
    board = board_of(
        [0, 8, 16, 32], [64, 128, 256, 512], [1024, 2048, 4096, 8192], [2**14, 2**15, 2**16, 2**17]
    )
    env = env_with(board, target=2**18)
    assert env.step("\\boxed{right}")[4]["error"] == "illegal"
    obs, _, terminated, truncated, info = env.step("\\boxed{left}")
    assert terminated and not truncated and info["lost"] and not info["success"]
    assert 0 not in env.board and all(slide(env.board, d) == env.board for d in DIRECTIONS)
    assert "Game over" in obs


def test_progress_is_log_of_the_largest_tile() -> None:
    env = Game2048Env(target_tile=256)
    env.reset(seed=0)
    env.board = board_of([16, 2, 0, 0], [0] * 4, [0] * 4, [0] * 4)
    assert env._raw_progress() == pytest.approx(4 / 8)
    env.board = board_of([512, 0, 0, 0], [0] * 4, [0] * 4, [0] * 4)
    assert env._raw_progress() == 1.0


def test_reset_is_reproducible_and_spawns_two_tiles() -> None:
    env = Game2048Env(target_tile=64)
    boards = set()
    for seed in range(20):
        obs, _ = env.reset(seed=seed)
        assert sum(1 for v in env.board if v) == 2
        assert set(env.board) <= {0, 2, 4}
        assert env.reset(seed=seed)[0] == obs
        boards.add(env.board)
    assert len(boards) > 10


def test_render_aligns_columns() -> None:
    env = env_with(board_of([128, 2, 0, 0], [0, 16, 0, 0], [0] * 4, [0, 0, 0, 4]))
    assert env._render().splitlines() == [
        "128   2   .   .",
        "  .  16   .   .",
        "  .   .   .   .",
        "  .   .   .   4",
    ]


@pytest.mark.parametrize(("text", "move"), [("Left", "left"), ("d", "down"), ("swipe ↑", "up")])
def test_lenient_parsing(text: str, move: str) -> None:
    assert Game2048Env()._parse(text) == move


def test_unreadable_move() -> None:
    with pytest.raises(MoveError):
        Game2048Env()._parse("left or right")


def test_the_oracle_does_not_advance_the_game_rng() -> None:
    env = Game2048Env(target_tile=64)
    env.reset(seed=5)
    state = env.rng.getstate()
    env.oracle_action()
    assert env.rng.getstate() == state


@pytest.mark.parametrize("variant", VARIANTS)
def test_oracle_reaches_the_target_in_every_variant(variant: str) -> None:
    env = make(f"game:Game2048-v0{variant}")
    assert isinstance(env, Game2048Env)
    targets = set()
    for seed in range(30):
        episode = rollout(env, OraclePolicy(), seed)
        targets.add(env.target)
        assert episode.success, (seed, env.board)
        assert max(env.board) >= env.target
        # The tile sum starts at most 8 and each move adds at most 4 to it.
        assert (env.target - 8) / 4 <= len(episode.steps) <= env.max_turns
    if variant == "-random":
        assert targets == {32, 64, 128}
