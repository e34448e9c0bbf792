"""Game2048: slide and merge tiles on a 4x4 board until one reaches the target tile.

Each move slides every tile as far as it goes in one direction; two equal tiles that meet
merge into their sum, at most once per move. After each move that changes the board a new
2 (90%) or 4 (10%) appears on a random empty cell. The game is lost when no move changes
the board. Progress is ``log2(largest tile) / log2(target)``.

The oracle is privileged: it replays a copy of the env's random generator, so its
lookahead sees exactly where and which new tiles will appear.
"""

from __future__ import annotations

import functools
import math
import random

from gem_eval.envs.games._base import GameEnv, IllegalMove, Outcome
from gem_eval.envs.games._parsing import DIRECTIONS, parse_direction

SIZE = 4
_RANDOM_TARGETS = (32, 64, 128)  # what target_tile=None draws from
Board = tuple[int, ...]  # row-major, 0 is an empty cell


def _lines(direction: str) -> list[list[int]]:
    """The cells of each row or column, listed from the side the tiles slide towards."""
    rows = [[r * SIZE + c for c in range(SIZE)] for r in range(SIZE)]
    cols = [[r * SIZE + c for r in range(SIZE)] for c in range(SIZE)]
    return {
        "left": rows,
        "right": [line[::-1] for line in rows],
        "up": cols,
        "down": [line[::-1] for line in cols],
    }[direction]


LINES = {d: _lines(d) for d in DIRECTIONS}
# The oracle's board score rewards large tiles along a snake that starts in the top-left.
_SNAKE = [0, 1, 2, 3, 7, 6, 5, 4, 8, 9, 10, 11, 15, 14, 13, 12]
_WEIGHTS = [4.0 ** -_SNAKE.index(cell) for cell in range(SIZE * SIZE)]


def merge_line(values: list[int]) -> list[int]:
    """Slide one line towards index 0, merging each pair of equal neighbours once.

    ``[2, 2, 2, 2]`` gives ``[4, 4, 0, 0]``; ``[2, 2, 4, 0]`` gives ``[4, 4, 0, 0]``.
    """
    tiles = [v for v in values if v]
    merged: list[int] = []
    i = 0
    while i < len(tiles):
        if i + 1 < len(tiles) and tiles[i] == tiles[i + 1]:
            merged.append(2 * tiles[i])
            i += 2
        else:
            merged.append(tiles[i])
            i += 1
    return merged + [0] * (len(values) - len(merged))


@functools.lru_cache(maxsize=1 << 16)
def _merged(values: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(merge_line(list(values)))


def slide(board: Board, direction: str) -> Board:
    """The board after sliding all tiles ``direction`` (before any new tile appears)."""
    cells = list(board)
    for line in LINES[direction]:
        for cell, value in zip(line, _merged(tuple(board[i] for i in line))):
            cells[cell] = value
    return tuple(cells)


def spawn(board: Board, rng: random.Random) -> Board:
    """Put a 2 (90%) or a 4 (10%) on a random empty cell drawn from ``rng``."""
    empty = [i for i, v in enumerate(board) if v == 0]
    if not empty:
        return board
    cells = list(board)
    cells[rng.choice(empty)] = 4 if rng.random() < 0.1 else 2
    return tuple(cells)


class Game2048Env(GameEnv[str]):
    """2048 on a 4x4 board, won by making a tile of at least ``target_tile``.

    Args:
        target_tile: The tile to reach (a power of two). ``None`` draws 32, 64 or 128.
        max_turns: Moves allowed. ``None``: ``target_tile`` moves (a tile of ``T`` takes
            at least about ``T / 2.2`` moves, since each new tile adds 2.2 on average).
    """

    title = "Game2048"
    example_action = "\\boxed{left}"

    def __init__(
        self,
        target_tile: int | None = 128,
        max_turns: int | None = 100,
        **reward_kwargs: float,
    ) -> None:
        super().__init__(max_turns=max_turns, **reward_kwargs)
        if target_tile is not None and (target_tile < 8 or target_tile & (target_tile - 1)):
            raise ValueError("target_tile must be a power of two, at least 8")
        self.target_setting = target_tile
        self.target = 0
        self.board: Board = ()
        self.search_depth = 3  # the oracle's lookahead, in moves
        self._replay = random.Random(0)  # the oracle's copy of self.play_rng, reloaded per branch

    def _new_game(self) -> int:
        self.target = self.target_setting or self.rng.choice(_RANDOM_TARGETS)
        self.board = spawn(spawn((0,) * (SIZE * SIZE), self.rng), self.rng)
        return self.target

    def _most_default_turns(self) -> int:
        return self.target_setting or max(_RANDOM_TARGETS)

    def _rules(self) -> str:
        return (
            f"2048 on a {SIZE}x{SIZE} board. A move slides every tile up, down, left or "
            f"right as far as it goes; two equal tiles that meet merge into one tile of "
            f"their sum (each tile merges at most once per move). After every move that "
            f"changes the board, a 2 or a 4 appears on a random empty cell. Reach a "
            f"{self.target} tile within {self.max_turns} moves; you lose when no move "
            f"changes the board. A move that changes nothing is illegal. "
            f"Answer with one direction in \\boxed{{}}, e.g. {self.example_action}."
        )

    def _render(self) -> str:
        width = max(len(str(v)) for v in self.board)
        cells = [str(v).rjust(width) if v else ".".rjust(width) for v in self.board]
        return "\n".join(" ".join(cells[r * SIZE : (r + 1) * SIZE]) for r in range(SIZE))

    def _parse(self, text: str) -> str:
        return parse_direction(text)

    def _apply(self, move: str) -> Outcome:
        after = slide(self.board, move)
        if after == self.board:
            raise IllegalMove(f"sliding {move} changes nothing.")
        self.board = spawn(after, self.play_rng)
        best = max(self.board)
        if best >= self.target:
            return Outcome(f"Slid {move}: you made a {best} tile!", solved=True)
        if all(slide(self.board, d) == self.board for d in DIRECTIONS):
            return Outcome(f"Slid {move}: no move is left.", lost=True)
        return Outcome(f"Slid {move}. Largest tile: {best}.")

    def _raw_progress(self) -> float:
        return min(1.0, math.log2(max(self.board)) / math.log2(self.target))

    def oracle_action(self) -> str:
        """The best move of a lookahead search that sees the true future tiles.

        Privileged: the search replays ``self.play_rng`` (copied, never advanced), so it knows
        where and which new tiles will appear. It is a test oracle, not a fair player.
        """
        _, move = self._search(self.board, self.play_rng.getstate(), self.search_depth)
        return f"\\boxed{{{move or 'left'}}}"

    def sample_random_action(self, rng: random.Random) -> str:
        return f"\\boxed{{{rng.choice(DIRECTIONS)}}}"

    # ------------------------------------------------------------- helpers
    def _search(
        self, board: Board, state: tuple[object, ...], depth: int
    ) -> tuple[float, str | None]:
        """Best score reachable in ``depth`` moves and the first move towards it."""
        best_score, best_move = -math.inf, None
        for move in DIRECTIONS:
            after = slide(board, move)
            if after == board:
                continue
            self._replay.setstate(state)
            after = spawn(after, self._replay)
            if max(after) >= self.target:
                score = 1e9 * (depth + 1)  # reaching the target sooner is better
            elif depth > 1:
                score, _ = self._search(after, self._replay.getstate(), depth - 1)
            else:
                score = _score(after)
            if best_move is None or score > best_score:
                best_score, best_move = score, move
        return best_score, best_move


def _score(board: Board) -> float:
    """How promising a board is: big tiles along the snake, and room to move."""
    return sum(v * w for v, w in zip(board, _WEIGHTS)) + 0.1 * board.count(0)
