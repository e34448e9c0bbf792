"""TowerofHanoi: move a tower of disks from peg A to peg C, never a larger disk on a smaller.

Progress is ``1 - d / (2**n - 1)``, where ``d`` is the fewest moves still needed to finish
from the current position (computed exactly for any legal position). Every move of the
optimal solution therefore earns the same dense reward, and a detour costs what it earns.
"""

from __future__ import annotations

import random
import re

from gem_eval.envs.games._base import GameEnv, IllegalMove, MoveError, Outcome

PEGS = "ABC"
_LETTER = re.compile(r"(?<![a-z])[abc](?![a-z])")
_LETTER_PAIR = re.compile(r"(?<![a-z])([abc])([abc])(?![a-z])")
_DIGIT = re.compile(r"(?<!\d)\d+(?!\d)")
_RANDOM_DISKS = (3, 5)  # the range num_disks=None draws from

Move = tuple[int, int]  # (source peg, target peg), 0..2 for A..C


class TowerofHanoiEnv(GameEnv[Move]):
    """Move ``num_disks`` disks from peg A to peg C.

    Disks are numbered by size, 1 the smallest. A move names a source and a target peg,
    as letters (``A C``) or as the digits 1-3 (``1 3``; 1 = A, 2 = B, 3 = C).

    Args:
        num_disks: Height of the tower. ``None`` draws one in 3..5 per episode.
        max_turns: Moves allowed. ``None``: the optimal ``2**n - 1`` plus ``n``.
    """

    title = "TowerofHanoi"
    example_action = "\\boxed{A C}"

    def __init__(
        self,
        num_disks: int | None = 4,
        max_turns: int | None = 20,
        **reward_kwargs: float,
    ) -> None:
        super().__init__(max_turns=max_turns, **reward_kwargs)
        if num_disks is not None and num_disks < 1:
            raise ValueError("num_disks must be at least 1")
        self.disks_setting = num_disks
        self.num_disks = 0
        self.pegs: list[list[int]] = [[], [], []]  # each peg bottom to top

    def _new_game(self) -> int:
        n = self.disks_setting
        if n is None:
            n = self.rng.randint(*_RANDOM_DISKS)
        self.num_disks = n
        self.pegs = [list(range(n, 0, -1)), [], []]
        return (1 << n) - 1 + n

    def _most_default_turns(self) -> int:
        n = self.disks_setting if self.disks_setting is not None else _RANDOM_DISKS[1]
        return (1 << n) - 1 + n

    def _rules(self) -> str:
        n = self.num_disks
        return (
            f"Tower of Hanoi with {n} disks, numbered by size (1 is the smallest). "
            f"All disks start on peg A; move the whole tower to peg C. "
            f"Each move takes the top disk of one peg and puts it on top of another peg; "
            f"a disk may never be placed on a smaller disk. "
            f"The shortest solution takes {(1 << n) - 1} moves; you have {self.max_turns}. "
            f"Answer with the source and target pegs in \\boxed{{}}, e.g. {self.example_action} "
            f"(pegs may also be written 1, 2, 3 for A, B, C)."
        )

    def _render(self) -> str:
        lines = ["Pegs (bottom to top):"]
        lines += [f"{name}: {peg}" for name, peg in zip(PEGS, self.pegs)]
        return "\n".join(lines)

    def _parse(self, text: str) -> Move:
        lowered = text.lower()
        letters = _LETTER.findall(lowered)
        if len(letters) != 2:
            letters = [c for pair in _LETTER_PAIR.findall(lowered) for c in pair]
        if len(letters) == 2:
            return PEGS.index(letters[0].upper()), PEGS.index(letters[1].upper())
        digits = _DIGIT.findall(lowered)
        if len(digits) == 2:
            if not all(d in ("1", "2", "3") for d in digits):
                raise MoveError("pegs are A, B, C (or 1, 2, 3)")
            return int(digits[0]) - 1, int(digits[1]) - 1
        raise MoveError("expected a source and a target peg, like A C")

    def _apply(self, move: Move) -> Outcome:
        source, target = move
        name_from, name_to = PEGS[source], PEGS[target]
        if source == target:
            raise IllegalMove(f"the source and target peg are both {name_from}.")
        if not self.pegs[source]:
            raise IllegalMove(f"peg {name_from} is empty.")
        disk = self.pegs[source][-1]
        if self.pegs[target] and self.pegs[target][-1] < disk:
            raise IllegalMove(
                f"disk {disk} cannot go on the smaller disk {self.pegs[target][-1]} "
                f"on peg {name_to}."
            )
        self.pegs[target].append(self.pegs[source].pop())
        message = f"Moved disk {disk} from {name_from} to {name_to}."
        return Outcome(message, solved=len(self.pegs[2]) == self.num_disks)

    def _raw_progress(self) -> float:
        return 1.0 - self._moves_left() / ((1 << self.num_disks) - 1)

    def oracle_action(self) -> str:
        # The smallest disk that is off its target in the chain of targets computed in
        # _moves_left is the one the optimal solution moves next, from any position.
        move = None
        location = self._locations()
        target = 2
        for disk in range(self.num_disks, 0, -1):
            if location[disk] != target:
                move = (location[disk], target)
                target = 3 - location[disk] - target
        if move is None:  # already solved: any well-formed move will do
            move = (0, 2)
        return f"\\boxed{{{PEGS[move[0]]} {PEGS[move[1]]}}}"

    def sample_random_action(self, rng: random.Random) -> str:
        source, target = rng.sample(PEGS, 2)
        return f"\\boxed{{{source} {target}}}"

    # ------------------------------------------------------------- helpers
    def _locations(self) -> dict[int, int]:
        return {disk: i for i, peg in enumerate(self.pegs) for disk in peg}

    def _moves_left(self) -> int:
        """Fewest moves from here to the whole tower on C.

        Going from the largest disk down: a disk already on its target keeps the target
        for the smaller disks; a disk that must still move costs ``2**(k-1)`` moves (itself
        plus the ``k-1`` smaller disks rebuilt on top) and sends the smaller ones to the
        third peg first.
        """
        location = self._locations()
        moves, target = 0, 2
        for disk in range(self.num_disks, 0, -1):
            if location[disk] != target:
                moves += 1 << (disk - 1)
                target = 3 - location[disk] - target
        return moves


TowerOfHanoiEnv = TowerofHanoiEnv
