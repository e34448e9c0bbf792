"""FifteenPuzzle: slides, illegal moves, parsing, scrambles and the solver oracle."""

from __future__ import annotations

import random
from collections import deque
from typing import Any

import pytest

from gem_eval.envs.games import fifteen_puzzle
from gem_eval.envs.games._base import MoveError
from gem_eval.envs.games._parsing import parse_direction
from gem_eval.envs.games.fifteen_puzzle import FifteenPuzzleEnv
from gem_eval.registration import make

VARIANTS = ["", "-easy", "-hard", "-random"]
SOLVED_3: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 8, 0)


def env_with(board: tuple[int, ...]) -> FifteenPuzzleEnv:
    env = FifteenPuzzleEnv(num_rows=round(len(board) ** 0.5), max_turns=30)
    env.reset(seed=0)
    env.board = board
    return env


def play(env: FifteenPuzzleEnv, moves: list[str]) -> tuple[int, ...]:
    board = env.board
    for move in moves:
        board = env._slide(board, move) or pytest.fail(f"{move} is illegal on {board}")
    return board


def run_oracle(env: FifteenPuzzleEnv) -> tuple[float, int, dict[str, Any]]:
    total, turns = 0.0, 0
    while True:
        _, reward, terminated, truncated, info = env.step(env.oracle_action())
        total += reward
        turns += 1
        if terminated or truncated:
            return total, turns, info


@pytest.mark.parametrize(
    ("move", "after"),
    [
        ("up", (1, 2, 3, 4, 8, 5, 6, 0, 7)),  # the tile below the blank (8) slides up
        ("down", (1, 0, 3, 4, 2, 5, 6, 8, 7)),
        ("left", (1, 2, 3, 4, 5, 0, 6, 8, 7)),
        ("right", (1, 2, 3, 0, 4, 5, 6, 8, 7)),
    ],
)
def test_a_move_slides_a_tile_into_the_blank(move: str, after: tuple[int, ...]) -> None:
    env = env_with((1, 2, 3, 4, 0, 5, 6, 8, 7))
    obs, _, terminated, _, info = env.step(f"\\boxed{{{move}}}")
    assert env.board == after
    assert info["error"] is None and not terminated
    assert f"Slid tile {after[4]} {move}." in obs


def test_the_solving_move_ends_the_episode_with_the_full_reward() -> None:
    env = env_with((1, 2, 3, 4, 5, 6, 7, 0, 8))
    obs, reward, terminated, truncated, info = env.step("\\boxed{left}")
    assert env.board == SOLVED_3
    assert terminated and not truncated and info["success"]
    assert reward == pytest.approx(1.0)  # 0.5 for all the progress + 0.5 for solving
    assert "Slid tile 8 left" in obs


@pytest.mark.parametrize("move", ["up", "left"])
def test_moves_off_the_board_are_illegal(move: str) -> None:
    env = env_with((1, 2, 3, 4, 5, 6, 8, 7, 0))  # blank in the bottom-right corner
    before = env.board
    obs, reward, terminated, _, info = env.step(f"\\boxed{{{move}}}")
    assert env.board == before
    assert info["error"] == "illegal" and reward == pytest.approx(-0.1) and not terminated
    assert "edge" in obs


@pytest.mark.parametrize(
    ("text", "move"),
    [
        ("up", "up"),
        ("UP", "up"),
        (" Down ", "down"),
        ("l", "left"),
        ("R", "right"),
        ("move up", "up"),
        ("slide the tile left", "left"),
        ("↑", "up"),
        ("→", "right"),
        ("up up", "up"),
    ],
)
def test_lenient_parsing(text: str, move: str) -> None:
    assert parse_direction(text) == move


@pytest.mark.parametrize("text", ["", "north", "up down", "5", "upward", "left ↑"])
def test_unreadable_moves(text: str) -> None:
    with pytest.raises(MoveError):
        parse_direction(text)


def test_render_aligns_the_numbers() -> None:
    env = FifteenPuzzleEnv(num_rows=4)
    env.reset(seed=3)
    env.board = (*range(1, 16), 0)
    rows = env._render().splitlines()
    assert rows == [" 1  2  3  4", " 5  6  7  8", " 9 10 11 12", "13 14 15  _"]


def test_progress_is_the_share_of_manhattan_distance_removed() -> None:
    env = FifteenPuzzleEnv(num_rows=3, max_turns=30)
    env.reset(seed=1)
    start = env._distance(env.board)
    assert start > 0 and env._raw_progress() == 0.0
    env.board = (1, 2, 3, 4, 5, 6, 7, 0, 8)  # one tile one step away
    assert env._raw_progress() == pytest.approx(1 - 1 / start)
    env.board = SOLVED_3
    assert env._raw_progress() == 1.0


@pytest.mark.parametrize(("rows", "turns"), [(2, 10), (3, 30), (4, 50)])
def test_scrambles_are_unsolved_reproducible_and_short(rows: int, turns: int) -> None:
    env = FifteenPuzzleEnv(num_rows=rows, max_turns=turns)
    boards = set()
    for seed in range(30):
        obs, _ = env.reset(seed=seed)
        assert env.board != env.goal
        assert sorted(env.board) == list(range(rows * rows))
        assert env.reset(seed=seed)[0] == obs
        boards.add(env.board)
        path = fifteen_puzzle._ida_star(env.board, rows, 10**7)
        assert path is not None and 1 <= len(path) <= turns // 2
    assert len(boards) > (5 if rows == 2 else 25)


def test_ida_star_finds_shortest_solutions() -> None:
    # Breadth-first distances from the solved 3x3 board, up to 12 moves.
    env = FifteenPuzzleEnv(num_rows=3)
    env.reset(seed=0)
    dist = {SOLVED_3: 0}
    queue = deque([SOLVED_3])
    while queue:
        board = queue.popleft()
        if dist[board] == 12:
            continue
        for move in fifteen_puzzle.DIRECTIONS:
            child = env._slide(board, move)
            if child is not None and child not in dist:
                dist[child] = dist[board] + 1
                queue.append(child)
    far = sorted(b for b, d in dist.items() if d == 12)
    for board in random.Random(0).sample(far, 20):
        path = fifteen_puzzle._ida_star(board, 3, 10**6)
        assert path is not None and len(path) == 12
        env.board = board
        assert play(env, path) == SOLVED_3


def test_weighted_a_star_fallback_solves_within_twice_the_optimum() -> None:
    env = FifteenPuzzleEnv(num_rows=4, max_turns=50)
    for seed in range(5):
        env.reset(seed=seed)
        optimal = fifteen_puzzle._ida_star(env.board, 4, 10**7)
        path = fifteen_puzzle._weighted_a_star(env.board, 4)
        assert optimal is not None and len(path) <= 2 * len(optimal)
        assert play(env, path) == env.goal


def test_oracle_falls_back_when_the_search_budget_runs_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(fifteen_puzzle, "_SEARCH_BUDGET", 0)
    env = make("game:FifteenPuzzle-v0-hard")
    assert isinstance(env, FifteenPuzzleEnv)
    for seed in range(5):
        env.reset(seed=seed)
        total, turns, info = run_oracle(env)
        assert info["success"] and total == pytest.approx(1.0) and turns <= env.max_turns


def test_oracle_recovers_after_detours() -> None:
    env = FifteenPuzzleEnv(num_rows=4, max_turns=100)
    rng = random.Random(7)
    for seed in range(5):
        env.reset(seed=seed)
        env.oracle_action()  # caches a plan that the detours below leave
        total, errors = 0.0, 0
        for _ in range(10):
            _, reward, _, _, info = env.step(env.sample_random_action(rng))
            total += reward
            errors += info["error"] is not None
        rest, _, info = run_oracle(env)
        assert info["success"] and info["turn"] < env.max_turns
        # Progress rewards telescope: detours cost exactly what they earned.
        assert total + rest == pytest.approx(1.0 - 0.1 * errors)


@pytest.mark.parametrize("variant", VARIANTS)
def test_oracle_solves_every_variant(variant: str) -> None:
    env = make(f"game:FifteenPuzzle-v0{variant}")
    assert isinstance(env, FifteenPuzzleEnv)
    sizes = set()
    for seed in range(30):
        env.reset(seed=seed)
        sizes.add(env.n)
        total, turns, info = run_oracle(env)
        assert info["success"], seed
        assert turns <= env.max_turns // 2
        assert total == pytest.approx(1.0)
    if variant == "-random":
        assert sizes == {2, 3, 4}
