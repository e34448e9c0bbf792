"""Minesweeper: reveal every safe cell of a grid without stepping on a mine.

A revealed cell shows how many of its (up to 8) neighbours hide a mine; revealing a cell
with no neighbouring mine also reveals its neighbours, flood-filling the empty region.
The first reveal of an episode is always safe. Revealing a mine loses the game. Flags
are notes for the agent and change nothing else. Progress is the fraction of safe cells
revealed, so every reveal earns a dense reward in proportion to what it uncovered.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from gem_eval.envs.games._base import GameEnv, IllegalMove, MoveError, Outcome
from gem_eval.envs.games._parsing import tokenize

Cell = tuple[int, int]
Move = tuple[str, int, int]  # (verb, row, column); verb is "reveal", "flag" or "unflag"

_VERBS = {"reveal": "reveal", "open": "reveal", "click": "reveal", "dig": "reveal"}
_VERBS |= {"flag": "flag", "mark": "flag", "unflag": "unflag", "unmark": "unflag"}
_FILLERS = {"r", "c", "row", "col", "column", "at", "cell"}
_RANDOM_SIDES = (5, 8)  # the range rows=None and cols=None draw from


class MinesweeperEnv(GameEnv[Move]):
    """Clear a ``rows`` x ``cols`` mine field hiding ``num_mines`` mines.

    Args:
        rows: Board height. ``None`` draws one in 5..8 per episode.
        cols: Board width. ``None`` draws one in 5..8 per episode.
        num_mines: Mines on the board. ``None`` draws 15-20% of the cells.
        max_turns: Moves allowed. ``None``: one per cell.
    """

    title = "Minesweeper"
    example_action = "\\boxed{reveal 3 4}"

    def __init__(
        self,
        rows: int | None = 8,
        cols: int | None = 8,
        num_mines: int | None = 10,
        max_turns: int | None = 64,
        **reward_kwargs: float,
    ) -> None:
        super().__init__(max_turns=max_turns, **reward_kwargs)
        self.rows_setting, self.cols_setting, self.mines_setting = rows, cols, num_mines
        self.rows = self.cols = 0
        self.mines: set[Cell] = set()
        self.adjacent: dict[Cell, int] = {}  # safe cell -> mines among its neighbours
        self.revealed: set[Cell] = set()
        self.flags: set[Cell] = set()
        self.exploded: Cell | None = None
        self.first_reveal = True

    def _new_game(self) -> int:
        rows, cols = self.rows_setting, self.cols_setting
        self.rows = rows if rows is not None else self.rng.randint(*_RANDOM_SIDES)
        self.cols = cols if cols is not None else self.rng.randint(*_RANDOM_SIDES)
        cells = self.rows * self.cols
        mines = self.mines_setting
        if mines is None:
            mines = self.rng.randint(round(0.15 * cells), round(0.20 * cells))
        if self.rows < 1 or self.cols < 1 or not 1 <= mines < cells:
            raise ValueError("need rows, cols >= 1 and 1 <= num_mines < rows * cols")
        self.set_mines(self.rng.sample(self._all_cells(), mines))
        self.revealed, self.flags = set(), set()
        self.exploded, self.first_reveal = None, True
        return cells

    def _most_default_turns(self) -> int:
        rows, cols, most = self.rows_setting, self.cols_setting, _RANDOM_SIDES[1]
        return (rows if rows is not None else most) * (cols if cols is not None else most)

    def set_mines(self, mines: Iterable[Cell]) -> None:
        """Place the mines (at reset, or to build a board by hand) and recount neighbours."""
        self.mines = set(mines)
        self.adjacent = {
            cell: sum(n in self.mines for n in self._neighbours(cell))
            for cell in self._all_cells()
            if cell not in self.mines
        }

    def _rules(self) -> str:
        return (
            f"Minesweeper: a {self.rows}x{self.cols} board hides {len(self.mines)} mines. "
            "Reveal every cell that has no mine. A revealed cell shows how many of its 8 "
            "neighbours hide a mine (blank: none, and its neighbours open automatically). "
            "Revealing a mine loses the game; your first reveal is always safe. "
            f"Rows and columns are numbered from 0. You have {self.max_turns} moves. "
            "Answer with \\boxed{reveal R C}, or \\boxed{flag R C} to mark or unmark a "
            f"suspected mine (flags are notes only), e.g. {self.example_action}."
        )

    def _render(self) -> str:
        width = len(str(max(self.rows, self.cols) - 1))
        lines = [" " * width + " | " + " ".join(str(c).rjust(width) for c in range(self.cols))]
        lines.append("-" * len(lines[0]))
        for r in range(self.rows):
            symbols = [self._symbol((r, c)).rjust(width) for c in range(self.cols)]
            lines.append(str(r).rjust(width) + " | " + " ".join(symbols))
        safe_left = len(self.adjacent) - len(self.revealed)
        lines.append(
            f"Mines: {len(self.mines)}  Flags: {len(self.flags)}  Safe cells left: {safe_left}"
            "  ('.' hidden, 'F' flag, digit: neighbouring mines, blank: none)"
        )
        return "\n".join(lines)

    def _symbol(self, cell: Cell) -> str:
        if cell in self.revealed:
            return str(self.adjacent[cell] or " ")
        if self.exploded is not None and cell in self.mines:
            return "X" if cell == self.exploded else "*"
        return "F" if cell in self.flags else "."

    def _parse(self, text: str) -> Move:
        tokens = tokenize(text, "expected 'reveal R C' or 'flag R C'")
        words = [t for t in tokens if t.isalpha() and t not in _FILLERS]
        numbers = [t for t in tokens if t.isdigit()]
        if any(w not in _VERBS for w in words) or len(words) > 1:
            raise MoveError("the only actions are 'reveal R C' and 'flag R C'")
        if len(numbers) != 2:
            raise MoveError("expected a row and a column number")
        verb = _VERBS[words[0]] if words else "reveal"
        return verb, int(numbers[0]), int(numbers[1])

    def _apply(self, move: Move) -> Outcome:
        verb, r, c = move
        cell = (r, c)
        if not (0 <= r < self.rows and 0 <= c < self.cols):
            raise IllegalMove(
                f"({r}, {c}) is off the board: rows 0..{self.rows - 1}, cols 0..{self.cols - 1}."
            )
        if cell in self.revealed:
            raise IllegalMove(f"({r}, {c}) is already revealed.")
        if verb == "unflag" or (verb == "flag" and cell in self.flags):
            if cell not in self.flags:
                raise IllegalMove(f"({r}, {c}) has no flag to remove.")
            self.flags.discard(cell)
            return Outcome(f"Removed the flag at ({r}, {c}).")
        if verb == "flag":
            self.flags.add(cell)
            return Outcome(f"Flagged ({r}, {c}).")
        if cell in self.flags:
            raise IllegalMove(f"({r}, {c}) is flagged; unflag it before revealing it.")
        if self.first_reveal and cell in self.mines:
            spare = sorted(set(self._all_cells()) - self.mines - {cell})
            self.set_mines((self.mines - {cell}) | {self.play_rng.choice(spare)})
        self.first_reveal = False
        if cell in self.mines:
            self.exploded = cell
            return Outcome(f"Boom! ({r}, {c}) hid a mine.", lost=True)
        opened = self._flood(cell)
        if len(self.revealed) == len(self.adjacent):
            return Outcome(f"Revealed ({r}, {c}): every safe cell is open.", solved=True)
        extra = f" and opened {opened - 1} more" if opened > 1 else ""
        return Outcome(f"Revealed ({r}, {c}){extra}.")

    def _flood(self, start: Cell) -> int:
        """Reveal ``start`` and, through cells with no neighbouring mine, their neighbours."""
        stack, opened = [start], 0
        while stack:
            cell = stack.pop()
            if cell in self.revealed:
                continue
            self.revealed.add(cell)
            self.flags.discard(cell)  # a flag here was wrong: the cell is safe
            opened += 1
            if self.adjacent[cell] == 0:
                stack.extend(n for n in self._neighbours(cell) if n not in self.revealed)
        return opened

    def _raw_progress(self) -> float:
        return len(self.revealed) / len(self.adjacent) if self.adjacent else 1.0

    def oracle_action(self) -> str:
        """Privileged: reads the mine positions and reveals a safe hidden cell.

        Cells with no neighbouring mine come first, as each one flood-fills its region,
        so a board is cleared in far fewer moves than it has safe cells. A flag on the
        chosen cell is removed first.
        """
        hidden = [cell for cell in self.adjacent if cell not in self.revealed]
        if not hidden:
            return "\\boxed{reveal 0 0}"
        r, c = min(hidden, key=lambda cell: (cell in self.flags, self.adjacent[cell] > 0, cell))
        verb = "unflag" if (r, c) in self.flags else "reveal"
        return f"\\boxed{{{verb} {r} {c}}}"

    def sample_random_action(self, rng: random.Random) -> str:
        verb = "flag" if rng.random() < 0.2 else "reveal"
        return f"\\boxed{{{verb} {rng.randrange(self.rows)} {rng.randrange(self.cols)}}}"

    def _all_cells(self) -> list[Cell]:
        return [(r, c) for r in range(self.rows) for c in range(self.cols)]

    def _neighbours(self, cell: Cell) -> list[Cell]:
        r, c = cell
        return [
            (r + dr, c + dc)
            for dr in (-1, 0, 1)
            for dc in (-1, 0, 1)
            if (dr or dc) and 0 <= r + dr < self.rows and 0 <= c + dc < self.cols
        ]
