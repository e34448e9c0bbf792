"""FifteenPuzzle: slide numbered tiles on an n x n board into order, blank last.

The board is scrambled by random moves of the blank from the solved position (never
straight back), at most half the turn limit of them, so a solution always fits twice over.
Progress is ``1 - m / m0``, clipped to ``[0, 1]``, where ``m`` is the total Manhattan
distance of the tiles from their goal cells and ``m0`` its value at reset: 1 only when solved.
"""

from __future__ import annotations

import heapq
import random
from itertools import count

from gem_eval.envs.games._base import GameEnv, IllegalMove, Outcome
from gem_eval.envs.games._parsing import DIRECTIONS, parse_direction

# Where the blank goes when a tile slides in a direction: the tile comes from the opposite side.
_BLANK_STEP = {"up": (1, 0), "down": (-1, 0), "left": (0, 1), "right": (0, -1)}
_RANDOM_ROWS = (2, 4)  # the range num_rows=None draws from
_SEARCH_BUDGET = 200_000  # IDA* node expansions per oracle call before weighted A* takes over

Board = tuple[int, ...]  # row-major, 0 is the blank


class FifteenPuzzleEnv(GameEnv[str]):
    """An ``n x n`` sliding puzzle with tiles ``1 .. n*n - 1``.

    A move names the direction a tile slides into the blank: ``up`` moves the tile below
    the blank up (the blank goes down).

    Args:
        num_rows: Side of the board. ``None`` draws one in 2..4 per episode.
        max_turns: Moves allowed. ``None``: ``20 * n - 30`` (10, 30, 50 for n = 2, 3, 4).
    """

    title = "FifteenPuzzle"
    example_action = "\\boxed{up}"

    def __init__(
        self,
        num_rows: int | None = 4,
        max_turns: int | None = 50,
        **reward_kwargs: float,
    ) -> None:
        super().__init__(max_turns=max_turns, **reward_kwargs)
        if num_rows is not None and num_rows < 2:
            raise ValueError("num_rows must be at least 2")
        self.rows_setting = num_rows
        self.n = 0
        self.board: Board = ()
        self.goal: Board = ()
        self._start_distance = 1
        self._plan: dict[Board, str] = {}  # oracle cache: state -> next move of its solution

    def _new_game(self) -> int:
        n = self.rows_setting if self.rows_setting is not None else self.rng.randint(*_RANDOM_ROWS)
        default_turns = 20 * n - 30
        most = max(1, default_turns // 2)  # the board depends on the size alone
        self.n = n
        self.goal = (*range(1, n * n), 0)
        self.board = self.goal
        while self.board == self.goal:
            self.board = self._scramble(self.rng.randint(max(1, most // 2), most))
        self._start_distance = self._distance(self.board)
        self._plan = {}
        return default_turns

    def _most_default_turns(self) -> int:
        n = self.rows_setting if self.rows_setting is not None else _RANDOM_ROWS[1]
        return 20 * n - 30

    def _rules(self) -> str:
        return (
            f"Sliding puzzle on a {self.n}x{self.n} board. Slide tiles into the blank (_) "
            f"until they read 1 to {self.n * self.n - 1} row by row, with the blank in the "
            f"bottom-right corner. A move names the direction a tile slides into the blank: "
            f"up, down, left or right (up moves the tile below the blank up). "
            f"You have {self.max_turns} moves. "
            f"Answer with one direction in \\boxed{{}}, e.g. {self.example_action}."
        )

    def _render(self) -> str:
        width = len(str(self.n * self.n - 1))
        cells = [str(t).rjust(width) if t else "_".rjust(width) for t in self.board]
        return "\n".join(" ".join(cells[r * self.n : (r + 1) * self.n]) for r in range(self.n))

    def _parse(self, text: str) -> str:
        return parse_direction(text)

    def _apply(self, move: str) -> Outcome:
        after = self._slide(self.board, move)
        if after is None:
            raise IllegalMove(f"no tile can slide {move}: the blank is at the edge.")
        tile = self.board[after.index(0)]
        self.board = after
        return Outcome(f"Slid tile {tile} {move}.", solved=after == self.goal)

    def _raw_progress(self) -> float:
        return min(1.0, max(0.0, 1.0 - self._distance(self.board) / self._start_distance))

    def oracle_action(self) -> str:
        if self.board not in self._plan:
            self._plan = self._solve(self.board)
        return f"\\boxed{{{self._plan.get(self.board, 'up')}}}"

    def sample_random_action(self, rng: random.Random) -> str:
        return f"\\boxed{{{rng.choice(DIRECTIONS)}}}"

    # ------------------------------------------------------------- helpers
    def _slide(self, board: Board, move: str) -> Board | None:
        """The board after sliding a tile in direction ``move``; ``None`` if none can."""
        blank = board.index(0)
        dr, dc = _BLANK_STEP[move]
        row, col = blank // self.n + dr, blank % self.n + dc
        if not (0 <= row < self.n and 0 <= col < self.n):
            return None
        cells = list(board)
        cells[blank], cells[row * self.n + col] = cells[row * self.n + col], 0
        return tuple(cells)

    def _scramble(self, moves: int) -> Board:
        board, last = self.goal, ""
        opposite = {"up": "down", "down": "up", "left": "right", "right": "left"}
        for _ in range(moves):
            options = [m for m in DIRECTIONS if m != opposite.get(last)]
            legal = [(m, b) for m in options if (b := self._slide(board, m)) is not None]
            last, board = self.rng.choice(legal)
        return board

    def _distance(self, board: Board) -> int:
        n = self.n
        return sum(
            abs(i // n - (t - 1) // n) + abs(i % n - (t - 1) % n) for i, t in enumerate(board) if t
        )

    def _solve(self, board: Board) -> dict[Board, str]:
        """A shortest solution (IDA*); if that search runs long, a near-shortest one."""
        path = _ida_star(board, self.n, _SEARCH_BUDGET)
        if path is None:
            path = _weighted_a_star(board, self.n)
        plan, state = {}, board
        for move in path:
            plan[state] = move
            state = self._slide(state, move) or state
        return plan


def _tables(n: int) -> tuple[list[list[int]], list[list[tuple[int, str]]]]:
    """Manhattan distance ``dist[tile][cell]`` and the blank's ``(cell, move)`` steps."""
    dist = [[0] * (n * n)] + [
        [abs(c // n - (t - 1) // n) + abs(c % n - (t - 1) % n) for c in range(n * n)]
        for t in range(1, n * n)
    ]
    steps: list[list[tuple[int, str]]] = []
    for cell in range(n * n):
        row, col = divmod(cell, n)
        options = []
        for move, (dr, dc) in _BLANK_STEP.items():
            if 0 <= row + dr < n and 0 <= col + dc < n:
                options.append(((row + dr) * n + col + dc, move))
        steps.append(options)
    return dist, steps


def _ida_star(board: Board, n: int, budget: int) -> list[str] | None:
    """Shortest move list from ``board`` to solved, or ``None`` after ``budget`` expansions."""
    dist, steps = _tables(n)
    cells = list(board)
    path: list[str] = []
    expanded = 0

    def search(g: int, h: int, blank: int, previous: int, bound: int) -> int:
        # Returns -1 when solved, else the smallest f-value that exceeded ``bound``.
        nonlocal expanded
        if h == 0:
            return -1
        expanded += 1
        if expanded > budget:
            raise TimeoutError
        least = 1 << 30
        for cell, move in steps[blank]:
            if cell == previous:
                continue
            tile = cells[cell]
            child_h = h - dist[tile][cell] + dist[tile][blank]
            if g + 1 + child_h > bound:
                least = min(least, g + 1 + child_h)
                continue
            cells[blank], cells[cell] = tile, 0
            path.append(move)
            found = search(g + 1, child_h, cell, blank, bound)
            if found < 0:
                return found
            path.pop()
            cells[blank], cells[cell] = 0, tile
            least = min(least, found)
        return least

    h = sum(dist[t][c] for c, t in enumerate(cells))
    bound = h
    try:
        while (bound := search(0, h, cells.index(0), -1, bound)) >= 0:
            pass
    except TimeoutError:
        return None
    return path


def _weighted_a_star(board: Board, n: int, weight: float = 2.0) -> list[str]:
    """A solution at most ``weight`` times longer than the shortest (A* on ``g + w * h``)."""
    dist, steps = _tables(n)
    goal = (*range(1, n * n), 0)
    tie = count()
    start_h = sum(dist[t][c] for c, t in enumerate(board))
    frontier = [(weight * start_h, next(tie), 0, start_h, board)]
    parent: dict[Board, tuple[Board, str] | None] = {board: None}
    best_g = {board: 0}
    while frontier:
        _, _, g, h, state = heapq.heappop(frontier)
        if state == goal:
            break
        if g > best_g[state]:
            continue
        blank = state.index(0)
        for cell, move in steps[blank]:
            tile = state[cell]
            cells = list(state)
            cells[blank], cells[cell] = tile, 0
            child = tuple(cells)
            if child in best_g and best_g[child] <= g + 1:
                continue
            child_h = h - dist[tile][cell] + dist[tile][blank]
            best_g[child] = g + 1
            parent[child] = (state, move)
            heapq.heappush(frontier, (g + 1 + weight * child_h, next(tie), g + 1, child_h, child))
    moves: list[str] = []
    link = parent.get(goal)
    while link is not None:
        state, move = link
        moves.append(move)
        link = parent[state]
    return moves[::-1]
