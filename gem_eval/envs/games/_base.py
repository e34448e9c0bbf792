"""The shared machinery of the text games: answer parsing, turns and dense rewards.

Reward scheme (the same for every game; the constants are constructor arguments):

* A legal move earns ``progress_weight * (p_after - p_before)``, where ``p`` is the
  game's progress in ``[0, 1]`` (normalised so that it is 0 at reset). Progress is a
  potential (cells revealed, candidates ruled out, tiles in place ...), so these rewards
  telescope and cannot be farmed: they may be negative when a move undoes progress.
* The move that solves the game also earns ``1 - progress_weight``. A solved episode
  without errors therefore has an undiscounted return of exactly 1.0, the maximum; with a
  discount ``gamma < 1`` a solution in fewer turns earns a larger discounted return.
* An action with no ``\\boxed{...}`` or an unreadable move earns
  ``format_error_reward`` (default -0.1); a readable but illegal move earns
  ``invalid_move_reward`` (default -0.1). Either uses up a turn, never raises, and the
  observation tells the agent what was wrong.
* Losing (a mine, the last life) ends the episode (``terminated``) with no bonus.
  Running out of turns ends it with ``truncated``.
"""

from __future__ import annotations

import random
from abc import abstractmethod
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from gem_eval.boxed import last_boxed
from gem_eval.core import Env, ResetResult, StepResult

FORMAT_ERROR_REWARD = -0.1
INVALID_MOVE_REWARD = -0.1
PROGRESS_WEIGHT = 0.5

MoveT = TypeVar("MoveT")


class MoveError(ValueError):
    """The text inside ``\\boxed{}`` is not a move of this game; the message says why."""


class IllegalMove(ValueError):
    """The move reads fine but the rules forbid it now; the message says why."""


@dataclass
class Outcome:
    """What a legal move did: feedback for the agent and whether the game ended."""

    message: str
    solved: bool = False
    lost: bool = False


class GameEnv(Env, Generic[MoveT]):
    """Base of the single-player text games.

    A subclass implements the hooks below; this class handles ``\\boxed{}`` extraction,
    turn counting, truncation, rewards and the ``info`` dict. Parameters left as
    ``None`` (the ``-random`` variants) are drawn from ``self.rng`` on every reset by
    the subclass's ``_new_game``.
    """

    title: str = "game"
    example_action: str = "\\boxed{...}"

    def __init__(
        self,
        max_turns: int | None = None,
        progress_weight: float = PROGRESS_WEIGHT,
        format_error_reward: float = FORMAT_ERROR_REWARD,
        invalid_move_reward: float = INVALID_MOVE_REWARD,
    ) -> None:
        super().__init__()
        if not 0.0 <= progress_weight <= 1.0:
            raise ValueError("progress_weight must lie in [0, 1]")
        if max_turns is not None and max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        self.max_turns_setting = max_turns
        self.max_turns = max_turns or 1
        self.progress_weight = progress_weight
        self.format_error_reward = format_error_reward
        self.invalid_move_reward = invalid_move_reward
        self.turn = 0
        self.done = True
        self._play_seed = 0
        self._play_rng: random.Random | None = random.Random()
        self._final: tuple[bool, bool, bool, bool] = (False, False, False, False)
        self._p0 = 0.0
        self._progress_now = 0.0

    # ----------------------------------------------------------------- hooks
    @abstractmethod
    def _new_game(self) -> int:
        """Set up a fresh game from ``self.rng``; return the default turn limit.

        Draws made later, during play, must use ``self.play_rng``. ``self.max_turns`` is
        set only after this returns (from the setting or the returned default).
        """

    @abstractmethod
    def _rules(self) -> str:
        """The instructions shown at reset, including the action format."""

    @abstractmethod
    def _render(self) -> str:
        """The state the agent sees after each move (board, guesses so far)."""

    @abstractmethod
    def _parse(self, text: str) -> MoveT:
        """Read a move from the text inside ``\\boxed{}``; raise :class:`MoveError`."""

    @abstractmethod
    def _apply(self, move: MoveT) -> Outcome:
        """Play a move; raise :class:`IllegalMove` when the rules forbid it."""

    @abstractmethod
    def _raw_progress(self) -> float:
        """How close the game is to solved, in ``[0, 1]`` (1 when solved)."""

    @abstractmethod
    def oracle_action(self) -> str:
        """A move that leads to a solution within the turn limit (the test oracle)."""

    @abstractmethod
    def sample_random_action(self, rng: random.Random) -> str:
        """A well-formed random move drawn from ``rng`` (may be illegal or poor)."""

    def check_settings(self) -> None:
        """Set up one game (seed 0), so that settings no game can be made with
        (``max_number`` below ``min_number``, a word length the list lacks) fail when a
        suite is loaded rather than at every episode's reset.

        Raises:
            ValueError: The settings cannot make a game.
        """
        self.reset(seed=0)
        self.done = True

    def turn_limit(self) -> int | None:
        """The ``max_turns`` setting; when it is ``None``, the largest default turn limit
        the other settings allow (:meth:`_most_default_turns`)."""
        setting = self.max_turns_setting
        return setting if setting is not None else self._most_default_turns()

    def _most_default_turns(self) -> int | None:
        """The largest turn limit :meth:`_new_game` may return with these settings
        (``None``: cannot tell). Asked only when the ``max_turns`` setting is ``None``."""
        return None

    @property
    def play_rng(self) -> random.Random:
        """The generator for draws made during play, seeded from ``self.rng`` at reset.

        Made on first use: most games never draw during play, and seeding a generator
        costs more than a whole GuessTheNumber step.
        """
        if self._play_rng is None:
            self._play_rng = random.Random(self._play_seed)
        return self._play_rng

    # ------------------------------------------------------------- contract
    def reset(self, seed: int | None = None) -> ResetResult:
        super().reset(seed)
        # Draws made while playing (a 2048 tile, a moved mine) come from their own
        # generator, so the next episode does not depend on how this one was played.
        # Its seed is drawn now; the generator is made on first use (see play_rng).
        self._play_seed = self.rng.getrandbits(64)
        self._play_rng = None
        default_turns = self._new_game()
        setting = self.max_turns_setting
        self.max_turns = default_turns if setting is None else setting
        self.turn = 0
        self.done = False
        self._final = (False, False, False, False)
        self._p0 = self._raw_progress()
        self._progress_now = 0.0
        obs = f"{self._rules()}\n\n{self._render()}".rstrip()
        return obs, self._info(error=None, solved=False, lost=False)

    def step(self, action: str) -> StepResult:
        if self.done:  # before the first reset, or after the end: nothing changes
            terminated, truncated, solved, lost = self._final
            info = self._info(error="episode_over", solved=solved, lost=lost)
            return (
                "The episode is over; call reset() to play again.",
                0.0,
                terminated,
                truncated,
                info,
            )
        self.turn += 1
        error, solved, lost = None, False, False
        text = last_boxed(action)
        if text is None:
            error, reward = "format", self.format_error_reward
            message = f"Format error: put your move inside \\boxed{{}}, e.g. {self.example_action}."
        else:
            try:
                outcome = self._apply(self._parse(text))
            except MoveError as exc:
                error, reward = "format", self.format_error_reward
                message = f"Could not read the move {text!r}: {exc} (e.g. {self.example_action})."
            except IllegalMove as exc:
                error, reward = "illegal", self.invalid_move_reward
                message = f"Illegal move {text!r}: {exc}"
            else:
                solved, lost, message = outcome.solved, outcome.lost, outcome.message
                reward = self._progress_reward(solved)
        terminated = solved or lost
        truncated = not terminated and self.turn >= self.max_turns
        self.done = terminated or truncated
        self._final = (terminated, truncated, solved, lost)
        obs = self._observation(message, solved, lost, truncated)
        return obs, reward, terminated, truncated, self._info(error, solved, lost)

    # -------------------------------------------------------------- helpers
    def _progress_reward(self, solved: bool) -> float:
        raw = 1.0 if solved else self._raw_progress()
        span = 1.0 - self._p0
        now = 1.0 if solved else ((raw - self._p0) / span if span > 0 else 0.0)
        reward = self.progress_weight * (now - self._progress_now)
        self._progress_now = now
        if solved:
            reward += 1.0 - self.progress_weight
        return reward

    def _observation(self, message: str, solved: bool, lost: bool, truncated: bool) -> str:
        if solved:
            status = f"Solved in {self.turn} turn(s)."
        elif lost:
            status = "Game over: you lost."
        elif truncated:
            status = f"Out of turns ({self.max_turns}): game over."
        else:
            status = f"Turns left: {self.max_turns - self.turn}."
        board = self._render()
        return f"{message}\n\n{board}\n\n{status}" if board else f"{message}\n\n{status}"

    def _info(self, error: str | None, solved: bool, lost: bool) -> dict[str, Any]:
        info: dict[str, Any] = {
            "turn": self.turn,
            "max_turns": self.max_turns,
            "progress": self._progress_now,
            "error": error,
        }
        if self.done:
            info["success"] = solved
            info["lost"] = lost
        return info
