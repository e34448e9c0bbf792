"""Sudoku: fill a 4x4 or 9x9 grid so that every row, column and box holds each digit once.

The boxes are 2x2 on the 4x4 grid and 3x3 on the 9x9 one. Every puzzle has exactly one
solution. A placement may not repeat a digit already in its row, column or box, nor
touch a given clue; the agent may overwrite or erase its own placements (without
erasing, two wrong digits could block each other for good). Progress is the fraction
of the originally empty cells that currently hold their solution digit, so a correct
placement earns a dense reward and replacing a correct digit with a wrong one costs it
back.
"""

from __future__ import annotations

import random

from gem_eval.envs.games._base import GameEnv, IllegalMove, MoveError, Outcome
from gem_eval.envs.games._parsing import tokenize
from gem_eval.envs.games._sudoku_solver import make_puzzle, solutions

# (row, column, value), 1-indexed as the agent writes them; value None erases the cell
Move = tuple[int, int, int | None]

_BOX = {4: 2, 9: 3}
_MIN_CLUES = {4: 4, 9: 25}  # 4 is the 4x4 minimum; below 25, 9x9 thinning gets slow
_RANDOM_CLUES = {4: (6, 10), 9: (40, 55)}
_ERASE = {"clear", "erase", "delete", "remove"}
_FILLERS = {"r", "c", "v", "row", "col", "column", "val", "value", "place", "put", "set", "at"}


class SudokuEnv(GameEnv[Move]):
    """Solve a ``scale`` x ``scale`` Sudoku with ``clues`` given cells.

    Args:
        scale: Grid side, 4 or 9. ``None`` draws one of them per episode.
        clues: Given cells (at least 4 for scale 4, 25 for scale 9). ``None`` draws
            6..10 for scale 4 and 40..55 for scale 9.
        max_turns: Moves allowed. ``None``: the empty cells plus a quarter (at least 4).
    """

    title = "Sudoku"
    example_action = "\\boxed{2 3 4}"

    def __init__(
        self,
        scale: int | None = 9,
        clues: int | None = 50,
        max_turns: int | None = 50,
        **reward_kwargs: float,
    ) -> None:
        super().__init__(max_turns=max_turns, **reward_kwargs)
        if scale is not None and scale not in _BOX:
            raise ValueError("scale must be 4 or 9")
        self.scale_setting, self.clues_setting = scale, clues
        self.n = 0
        self.puzzle: list[int] = []  # the givens, flat, 0 for empty
        self.solution: list[int] = []
        self.grid: list[int] = []  # givens plus the agent's placements
        self._solved_view: list[int] | None = None  # the oracle's own solution

    def _new_game(self) -> int:
        self.n = self.scale_setting or self.rng.choice(sorted(_BOX))
        clues = self.clues_setting
        if clues is None:
            clues = self.rng.randint(*_RANDOM_CLUES[self.n])
        if not _MIN_CLUES[self.n] <= clues < self.n * self.n:
            raise ValueError(
                f"clues must lie in {_MIN_CLUES[self.n]}..{self.n * self.n - 1} for scale {self.n}"
            )
        self.puzzle, self.solution = make_puzzle(_BOX[self.n], clues, self.rng)
        self.grid = list(self.puzzle)
        self._solved_view = None
        return _default_turns(self.n, clues)

    def _most_default_turns(self) -> int | None:
        scales = [self.scale_setting] if self.scale_setting is not None else sorted(_BOX)
        turns = [
            _default_turns(n, clues)
            for n in scales
            for clues in (
                [self.clues_setting] if self.clues_setting is not None else _RANDOM_CLUES[n]
            )
            if _MIN_CLUES[n] <= clues < n * n  # other settings fail at reset
        ]
        return max(turns, default=None)

    def _rules(self) -> str:
        box = _BOX[self.n]
        return (
            f"Sudoku: fill the {self.n}x{self.n} grid so that every row, every column and "
            f"every {box}x{box} box contains each digit 1-{self.n} exactly once. '.' marks "
            "an empty cell. You may not change a given digit or place a digit that already "
            "appears in the same row, column or box; you may overwrite your own digits. "
            f"You have {self.max_turns} moves. Answer with \\boxed{{R C V}} to write value V "
            f"at row R, column C (both numbered from 1), e.g. {self.example_action}, or "
            "with \\boxed{clear R C} to erase one of your digits."
        )

    def _render(self) -> str:
        box = _BOX[self.n]
        rule = "  +" + "+".join(["-" * (2 * box + 1)] * box) + "+"
        head = "    " + "   ".join(
            " ".join(str(c + 1) for c in range(b * box, b * box + box)) for b in range(box)
        )
        lines = [head]
        for r in range(self.n):
            if r % box == 0:
                lines.append(rule)
            row = self.grid[r * self.n : (r + 1) * self.n]
            groups = [
                " ".join(str(v or ".") for v in row[b : b + box]) for b in range(0, self.n, box)
            ]
            lines.append(f"{r + 1} | " + " | ".join(groups) + " |")
        lines.append(rule)
        return "\n".join(lines)

    def _parse(self, text: str) -> Move:
        tokens = tokenize(text, "expected 'row column value'")
        erase = [t for t in tokens if t in _ERASE]
        unknown = [t for t in tokens if t.isalpha() and t not in _FILLERS | _ERASE]
        if unknown or len(erase) > 1:
            raise MoveError("write 'row column value' or 'clear row column'")
        digits = [t for t in tokens if t.isdigit()]
        if len(digits) != (2 if erase else 3):
            wanted = "a row and a column" if erase else "three numbers: row, column and value"
            raise MoveError(f"expected {wanted}")
        numbers = [int(t) for t in digits]
        return numbers[0], numbers[1], None if erase else numbers[2]

    def _apply(self, move: Move) -> Outcome:
        r, c, v = move
        n = self.n
        if not (1 <= r <= n and 1 <= c <= n):
            raise IllegalMove(f"rows and columns run from 1 to {n}.")
        if v is not None and not 1 <= v <= n:
            raise IllegalMove(f"values run from 1 to {n}.")
        i = (r - 1) * n + (c - 1)
        if self.puzzle[i]:
            raise IllegalMove(f"row {r}, column {c} holds the given {self.puzzle[i]}.")
        if v is None:
            if not self.grid[i]:
                raise IllegalMove(f"row {r}, column {c} is already empty.")
            before, self.grid[i] = self.grid[i], 0
            return Outcome(f"Erased the {before} at row {r}, column {c}.")
        if self.grid[i] == v:
            raise IllegalMove(f"row {r}, column {c} already holds {v}.")
        clash = self._clash(i, v)
        if clash:
            raise IllegalMove(f"{v} already appears in the same {clash}.")
        before, self.grid[i] = self.grid[i], v
        if 0 not in self.grid:  # every placement was clash-free, so a full grid is valid
            return Outcome(f"Placed {v} at row {r}, column {c}: the grid is complete.", solved=True)
        replaced = f", replacing {before}" if before else ""
        return Outcome(f"Placed {v} at row {r}, column {c}{replaced}.")

    def _clash(self, i: int, v: int) -> str | None:
        """Which unit of cell ``i`` (other than ``i`` itself) already holds ``v``, if any."""
        n, box = self.n, _BOX[self.n]
        r, c = divmod(i, n)
        if any(self.grid[r * n + k] == v for k in range(n) if k != c):
            return f"row (row {r + 1})"
        if any(self.grid[k * n + c] == v for k in range(n) if k != r):
            return f"column (column {c + 1})"
        r0, c0 = r - r % box, c - c % box
        for rr in range(r0, r0 + box):
            for cc in range(c0, c0 + box):
                if (rr, cc) != (r, c) and self.grid[rr * n + cc] == v:
                    return f"box (row {rr + 1}, column {cc + 1})"
        return None

    def _raw_progress(self) -> float:
        empty = [i for i, given in enumerate(self.puzzle) if not given]
        if not empty:
            return 1.0
        return sum(self.grid[i] == self.solution[i] for i in empty) / len(empty)

    def oracle_action(self) -> str:
        """Honest: solves the givens itself (the solution is unique) and fills a cell.

        It writes the first cell, row by row, that differs from its solution and whose
        digit can be placed without a clash; when the agent's wrong digits block every
        such cell, it erases the first wrong digit.
        """
        if self._solved_view is None:
            found = solutions(self.puzzle, _BOX[self.n], limit=1)
            self._solved_view = found[0] if found else list(self.grid)
        wrong = [i for i, v in enumerate(self.grid) if v != self._solved_view[i]]
        if not wrong:
            return "\\boxed{1 1 1}"
        playable = [i for i in wrong if self._clash(i, self._solved_view[i]) is None]
        if not playable:
            i = next(i for i in wrong if self.grid[i])
            return f"\\boxed{{clear {i // self.n + 1} {i % self.n + 1}}}"
        i = playable[0]
        return f"\\boxed{{{i // self.n + 1} {i % self.n + 1} {self._solved_view[i]}}}"

    def sample_random_action(self, rng: random.Random) -> str:
        r, c, v = (rng.randint(1, self.n) for _ in range(3))
        return f"\\boxed{{{r} {c} {v}}}"


def _default_turns(n: int, clues: int) -> int:
    """The empty cells plus a quarter (at least 4)."""
    empty = n * n - clues
    return empty + max(4, empty // 4)
