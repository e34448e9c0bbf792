"""Tests of the Sudoku game: unique generation, the rules of placement, parsing, oracle."""

from __future__ import annotations

import contextlib
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gem_eval.envs.games._base import IllegalMove, MoveError
from gem_eval.envs.games._sudoku_solver import solutions
from gem_eval.envs.games.sudoku import SudokuEnv
from gem_eval.policies import OraclePolicy
from gem_eval.registration import make
from gem_eval.rollout import rollout

VARIANTS = ["game:Sudoku-v0", "game:Sudoku-v0-easy", "game:Sudoku-v0-hard", "game:Sudoku-v0-random"]


def made(env_id: str) -> SudokuEnv:
    env = make(env_id)
    assert isinstance(env, SudokuEnv)
    return env


def units(n: int, box: int) -> list[list[int]]:
    """The flat indices of every row, column and box of an n x n grid."""
    rows = [[r * n + c for c in range(n)] for r in range(n)]
    cols = [[r * n + c for r in range(n)] for c in range(n)]
    boxes = [
        [(br + r) * n + bc + c for r in range(box) for c in range(box)]
        for br in range(0, n, box)
        for bc in range(0, n, box)
    ]
    return rows + cols + boxes


def first_empty(env: SudokuEnv) -> tuple[int, int]:
    """1-indexed (row, column) of the first empty cell."""
    i = env.grid.index(0)
    return i // env.n + 1, i % env.n + 1


@pytest.mark.parametrize(("scale", "clues"), [(4, 4), (4, 10), (9, 25), (9, 50), (9, 55)])
def test_generated_puzzles_are_unique_and_valid(scale: int, clues: int) -> None:
    env = SudokuEnv(scale=scale, clues=clues)
    box = 2 if scale == 4 else 3
    for seed in range(8):
        env.reset(seed=seed)
        assert sum(1 for v in env.puzzle if v) == clues
        assert all(g in (0, s) for g, s in zip(env.puzzle, env.solution))
        for unit in units(scale, box):
            assert sorted(env.solution[i] for i in unit) == list(range(1, scale + 1))
        assert solutions(env.puzzle, box, limit=2) == [env.solution]


def test_solver_counts_and_rejects() -> None:
    assert len(solutions([0] * 16, 2, limit=2)) == 2
    assert len(solutions([0] * 16, 2, limit=500)) == 288  # all 4x4 Sudoku grids
    assert solutions([1, 1] + [0] * 14, 2) == []
    # Consistent givens with no completion: row 1 needs a 4 that column 4 already holds.
    assert solutions([1, 2, 3, 0] + [0] * 7 + [4] + [0] * 4, 2) == []


def test_reset_is_reproducible() -> None:
    env = SudokuEnv()
    obs, _ = env.reset(seed=11)
    puzzle = list(env.puzzle)
    assert env.reset(seed=11)[0] == obs and env.puzzle == puzzle
    env.reset(seed=12)
    assert env.puzzle != puzzle


def test_generation_is_fast() -> None:
    env = SudokuEnv(scale=9, clues=50)
    start = time.perf_counter()
    for seed in range(20):
        env.reset(seed=seed)
    assert (time.perf_counter() - start) / 20 < 0.1


def test_clue_cells_are_protected() -> None:
    env = SudokuEnv(scale=9, clues=50)
    env.reset(seed=0)
    i = next(i for i, v in enumerate(env.puzzle) if v)
    r, c = i // 9 + 1, i % 9 + 1
    for value in range(1, 10):
        obs, reward, _, _, info = env.step(f"\\boxed{{{r} {c} {value}}}")
        assert info["error"] == "illegal" and reward == pytest.approx(-0.1)
        assert "given" in obs
    assert env.grid == env.puzzle


@pytest.mark.parametrize("unit", ["row", "column", "box"])
def test_conflicts_are_illegal(unit: str) -> None:
    env = SudokuEnv(scale=9, clues=50)
    env.reset(seed=4)
    n = 9
    for i in (i for i, v in enumerate(env.grid) if not v):
        r, c = divmod(i, n)
        cells = {
            "row": [r * n + k for k in range(n)],
            "column": [k * n + c for k in range(n)],
            "box": [(r - r % 3 + dr) * n + c - c % 3 + dc for dr in range(3) for dc in range(3)],
        }
        others = [j for name, js in cells.items() if name != unit for j in js]
        only_here = {env.grid[j] for j in cells[unit]} - {env.grid[j] for j in others} - {0}
        if only_here:
            value = min(only_here)
            break
    else:
        pytest.fail(f"no empty cell whose {unit} alone holds a digit")
    obs, reward, _, _, info = env.step(f"\\boxed{{{r + 1} {c + 1} {value}}}")
    assert info["error"] == "illegal" and reward == pytest.approx(-0.1)
    assert f"same {unit}" in obs
    assert env.grid[i] == 0


@pytest.mark.parametrize("move", ["0 1 1", "1 10 1", "5 5 0", "5 5 10"])
def test_out_of_range_moves_are_illegal(move: str) -> None:
    env = SudokuEnv(scale=9, clues=50)
    env.reset(seed=0)
    with pytest.raises(IllegalMove):
        env._apply(env._parse(move))


def test_overwriting_own_placements() -> None:
    env = SudokuEnv(scale=9, clues=50)
    env.reset(seed=2)
    n, empties = 9, [i for i, v in enumerate(env.puzzle) if not v]
    for i in empties:
        r, c = i // n + 1, i % n + 1
        wrong = [v for v in range(1, 10) if v != env.solution[i] and env._clash(i, v) is None]
        if wrong:
            break
    else:
        pytest.fail("no cell with a legal wrong digit")
    step = 0.5 / len(empties)
    _, reward, _, _, info = env.step(f"\\boxed{{{r} {c} {wrong[0]}}}")
    assert info["error"] is None and reward == pytest.approx(0.0)
    _, reward, _, _, _ = env.step(f"\\boxed{{{r} {c} {env.solution[i]}}}")
    assert reward == pytest.approx(step) and env.grid[i] == env.solution[i]
    _, reward, _, _, info = env.step(f"\\boxed{{{r} {c} {env.solution[i]}}}")
    assert info["error"] == "illegal"
    _, reward, _, _, _ = env.step(f"\\boxed{{{r} {c} {wrong[0]}}}")
    assert reward == pytest.approx(-step)


def test_erasing_own_digits() -> None:
    env = SudokuEnv(scale=9, clues=50)
    env.reset(seed=3)
    given = next(i for i, v in enumerate(env.puzzle) if v)
    obs, _, _, _, info = env.step(f"\\boxed{{clear {given // 9 + 1} {given % 9 + 1}}}")
    assert info["error"] == "illegal" and "given" in obs
    r, c = first_empty(env)
    _, _, _, _, info = env.step(f"\\boxed{{clear {r} {c}}}")
    assert info["error"] == "illegal"
    i = (r - 1) * 9 + c - 1
    _, reward, _, _, _ = env.step(f"\\boxed{{{r} {c} {env.solution[i]}}}")
    assert reward > 0
    obs, reward, _, _, info = env.step(f"\\boxed{{clear {r} {c}}}")
    assert info["error"] is None and env.grid[i] == 0
    assert reward == pytest.approx(-0.5 / env.puzzle.count(0)) and "Erased" in obs


def test_completing_the_grid_solves() -> None:
    env = SudokuEnv(scale=4, clues=10, max_turns=10)
    env.reset(seed=5)
    empties = [i for i, v in enumerate(env.puzzle) if not v]
    total = 0.0
    for k, i in enumerate(empties):
        _, reward, terminated, _, info = env.step(
            f"\\boxed{{{i // 4 + 1} {i % 4 + 1} {env.solution[i]}}}"
        )
        total += reward
        assert terminated == (k == len(empties) - 1)
    assert info["success"] and total == pytest.approx(1.0)


@pytest.mark.parametrize(
    "text",
    ["1 2 3", "(1, 2, 3)", "[1,2,3]", "r1c2=3", "R1 C2 3", "row 1, col 2: 3", "r1 c2 v3"],
)
def test_lenient_parsing(text: str) -> None:
    assert SudokuEnv()._parse(text) == (1, 2, 3)


@pytest.mark.parametrize("text", ["clear 1 2", "Erase (1, 2)", "r1c2 delete", "CLEAR r1 c2"])
def test_parsing_erase(text: str) -> None:
    assert SudokuEnv()._parse(text) == (1, 2, None)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1 2",
        "1 2 3 4",
        "r1c2",
        "one two three",
        "1 2 -3",
        "123",
        "clear 1 2 3",
        "clear erase 1 2",
    ],
)
def test_unreadable_moves(text: str) -> None:
    with pytest.raises(MoveError):
        SudokuEnv()._parse(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_parse_and_apply_only_raise_move_errors(text: str) -> None:
    env = SudokuEnv(scale=4, clues=8)
    env.reset(seed=1)
    with contextlib.suppress(MoveError, IllegalMove):
        env._apply(env._parse(text))


def test_random_variant_draws_both_scales() -> None:
    env = made("game:Sudoku-v0-random")
    seen = set()
    for seed in range(20):
        env.reset(seed=seed)
        clues = sum(1 for v in env.puzzle if v)
        low, high = {4: (6, 10), 9: (40, 55)}[env.n]
        assert low <= clues <= high
        empty = env.n * env.n - clues
        assert empty < env.max_turns <= empty + max(4, empty // 4)
        seen.add(env.n)
    assert seen == {4, 9}


@pytest.mark.parametrize("env_id", VARIANTS)
def test_oracle_fills_in_the_unique_solution(env_id: str) -> None:
    env = made(env_id)
    for seed in range(10):
        assert rollout(env, OraclePolicy(), seed).success, (env_id, seed)
        assert env.grid == env.solution


def plant_swap(env: SudokuEnv) -> bool:
    """Write the solution digits of two empty cells of one row the wrong way round.

    Each wrong digit then blocks the other cell's right one. Returns False when no pair
    of cells allows both placements.
    """
    n = env.n
    for a in range(n * n):
        for b in range(a + 1, (a // n + 1) * n):
            if env.puzzle[a] or env.puzzle[b]:
                continue
            env.grid[a] = env.solution[b]
            if env._clash(a, env.grid[a]) is None and env._clash(b, env.solution[a]) is None:
                env.grid[b] = env.solution[a]
                return True
            env.grid[a] = 0
    return False


def test_oracle_breaks_a_deadlock_by_erasing() -> None:
    env = SudokuEnv(scale=4, clues=6, max_turns=40)
    for seed in range(50):
        env.reset(seed=seed)
        if plant_swap(env):
            break
    else:
        pytest.fail("no row where two wrong digits block each other")
    actions, info = [], dict[str, Any]()
    while not env.done:
        actions.append(env.oracle_action())
        _, _, _, _, info = env.step(actions[-1])
        assert info["error"] is None, actions[-1]
    assert info["success"] and env.grid == env.solution
    assert any(action.startswith("\\boxed{clear") for action in actions)
