"""A small exact Sudoku solver: bitmask candidates, most-constrained cell first.

Grids are flat lists of ``n * n`` ints read row by row, ``0`` for an empty cell, where
``n = box * box`` (4 for 2x2 boxes, 9 for 3x3 boxes).
"""

from __future__ import annotations

import random
from collections.abc import Sequence


def solutions(
    grid: Sequence[int], box: int, limit: int = 2, rng: random.Random | None = None
) -> list[list[int]]:
    """Find up to ``limit`` completions of ``grid``.

    Args:
        grid: The puzzle, flat, ``0`` for empty.
        box: Side of a box (2 or 3).
        limit: Stop after this many solutions; ``2`` is enough to test uniqueness.
        rng: When given, candidates are tried in random order (to generate grids).

    Returns:
        The solutions found, at most ``limit``; empty when the givens conflict or the
        puzzle has no solution.
    """
    n = box * box
    full = (1 << n) - 1
    cells = list(grid)
    unit_of = [
        (i // n, n + i % n, 2 * n + (i // n // box) * box + i % n // box) for i in range(n * n)
    ]
    used = [0] * (3 * n)  # row masks, then column masks, then box masks
    for i, value in enumerate(cells):
        if value:
            bit = 1 << (value - 1)
            if any(used[u] & bit for u in unit_of[i]):
                return []
            for u in unit_of[i]:
                used[u] |= bit
    empties = [i for i, value in enumerate(cells) if not value]
    found: list[list[int]] = []

    def search() -> None:
        best, best_mask, best_count = -1, 0, n + 1
        for i in empties:
            if cells[i]:
                continue
            r, c, b = unit_of[i]
            mask = full & ~(used[r] | used[c] | used[b])
            count = mask.bit_count()
            if count < best_count:
                best, best_mask, best_count = i, mask, count
                if count <= 1:
                    break
        if best < 0:
            found.append(list(cells))
            return
        digits = [d for d in range(n) if best_mask >> d & 1]
        if rng is not None:
            rng.shuffle(digits)
        r, c, b = unit_of[best]
        for d in digits:
            bit = 1 << d
            used[r] |= bit
            used[c] |= bit
            used[b] |= bit
            cells[best] = d + 1
            search()
            cells[best] = 0
            used[r] &= ~bit
            used[c] &= ~bit
            used[b] &= ~bit
            if len(found) >= limit:
                return

    search()
    return found


def random_full_grid(box: int, rng: random.Random) -> list[int]:
    """A complete valid grid drawn by randomised backtracking from an empty one."""
    return solutions([0] * box**4, box, limit=1, rng=rng)[0]


def make_puzzle(
    box: int, clues: int, rng: random.Random, attempts: int = 50
) -> tuple[list[int], list[int]]:
    """Draw a puzzle with exactly ``clues`` givens and a unique solution.

    Cells are emptied in random order, each only if the solution stays unique; a grid
    that cannot be thinned to ``clues`` this way is replaced by a fresh one.

    Returns:
        ``(puzzle, solution)``, both flat.

    Raises:
        ValueError: No unique puzzle with that many clues was found in ``attempts`` grids.
    """
    for _ in range(attempts):
        solution = random_full_grid(box, rng)
        puzzle = list(solution)
        order = list(range(len(puzzle)))
        rng.shuffle(order)
        filled = len(puzzle)
        for i in order:
            if filled == clues:
                return puzzle, solution
            puzzle[i] = 0
            if len(solutions(puzzle, box, limit=2)) == 1:
                filled -= 1
            else:
                puzzle[i] = solution[i]
        if filled == clues:
            return puzzle, solution
    raise ValueError(f"could not make a unique {box * box}x{box * box} puzzle with {clues} clues")
