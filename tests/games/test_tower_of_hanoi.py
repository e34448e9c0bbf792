"""TowerofHanoi: moves, illegal moves, parsing, the exact progress and the oracle."""

from __future__ import annotations

import itertools
import random
from collections import deque

import pytest

from gem_eval.envs.games._base import MoveError
from gem_eval.envs.games.tower_of_hanoi import TowerOfHanoiEnv, TowerofHanoiEnv
from gem_eval.policies import OraclePolicy
from gem_eval.registration import make
from gem_eval.rollout import rollout

VARIANTS = ["", "-easy", "-hard", "-random"]


def pegs_of(locations: tuple[int, ...]) -> list[list[int]]:
    """Pegs (bottom to top) for ``locations[d - 1]`` = peg of disk ``d``."""
    pegs: list[list[int]] = [[], [], []]
    for disk in range(len(locations), 0, -1):
        pegs[locations[disk - 1]].append(disk)
    return pegs


def distances_to_goal(n: int) -> dict[tuple[int, ...], int]:
    """Breadth-first distance of every position of ``n`` disks to the tower on C."""
    goal = (2,) * n
    dist = {goal: 0}
    queue = deque([goal])
    while queue:
        state = queue.popleft()
        pegs = pegs_of(state)
        for src, dst in itertools.permutations(range(3), 2):
            if pegs[src] and (not pegs[dst] or pegs[dst][-1] > pegs[src][-1]):
                disk = pegs[src][-1]
                child = (*state[: disk - 1], dst, *state[disk:])
                if child not in dist:
                    dist[child] = dist[state] + 1
                    queue.append(child)
    return dist


def test_reset_puts_the_tower_on_a() -> None:
    env = TowerofHanoiEnv(num_disks=4, max_turns=20)
    obs, info = env.reset(seed=0)
    assert env.pegs == [[4, 3, 2, 1], [], []]
    assert "A: [4, 3, 2, 1]" in obs and "C: []" in obs
    assert "15 moves" in obs
    assert info["max_turns"] == 20
    assert TowerOfHanoiEnv is TowerofHanoiEnv


def test_a_legal_move_moves_the_top_disk_and_earns_its_share() -> None:
    env = TowerofHanoiEnv(num_disks=3, max_turns=10)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("\\boxed{A C}")
    assert env.pegs == [[3, 2], [], [1]]
    assert "Moved disk 1 from A to C" in obs
    assert reward == pytest.approx(0.5 / 7)  # one of the 7 optimal moves
    assert (terminated, truncated, info["error"]) == (False, False, None)


def test_a_detour_loses_what_it_earned() -> None:
    env = TowerofHanoiEnv(num_disks=3, max_turns=10)
    env.reset(seed=0)
    _, first, *_ = env.step("\\boxed{A C}")
    _, back, *_ = env.step("\\boxed{C A}")
    assert first == pytest.approx(-back)
    assert env.pegs == [[3, 2, 1], [], []]


@pytest.mark.parametrize(
    ("moves", "illegal", "reason"),
    [
        ([], "B C", "empty"),
        (["A C"], "A C", "smaller disk 1"),
        (["A C", "A B"], "A B", "disk 3 cannot go on the smaller disk 2"),
        ([], "A A", "both A"),
    ],
)
def test_illegal_moves_cost_a_turn_and_change_nothing(
    moves: list[str], illegal: str, reason: str
) -> None:
    env = TowerofHanoiEnv(num_disks=3, max_turns=10)
    env.reset(seed=0)
    for move in moves:
        env.step(f"\\boxed{{{move}}}")
    before = [list(peg) for peg in env.pegs]
    obs, reward, terminated, _, info = env.step(f"\\boxed{{{illegal}}}")
    assert env.pegs == before
    assert reward == pytest.approx(-0.1)
    assert info["error"] == "illegal" and not terminated
    assert reason in obs
    assert info["turn"] == len(moves) + 1


@pytest.mark.parametrize(
    ("text", "move"),
    [
        ("A C", (0, 2)),
        ("a->c", (0, 2)),
        ("a, c", (0, 2)),
        ("move A to C", (0, 2)),
        ("from peg B to peg A", (1, 0)),
        ("disk 1 from A to C", (0, 2)),
        ("AC", (0, 2)),
        ("CB", (2, 1)),
        ("1 3", (0, 2)),
        ("3->2", (2, 1)),
    ],
)
def test_lenient_parsing(text: str, move: tuple[int, int]) -> None:
    assert TowerofHanoiEnv()._parse(text) == move


@pytest.mark.parametrize("text", ["", "A", "A B C", "0 2", "1 4", "left", "peg one to three"])
def test_unreadable_moves(text: str) -> None:
    with pytest.raises(MoveError):
        TowerofHanoiEnv()._parse(text)


def test_format_error_without_box() -> None:
    env = TowerofHanoiEnv(num_disks=3)
    env.reset(seed=0)
    _, reward, _, _, info = env.step("A C")
    assert info["error"] == "format" and reward == pytest.approx(-0.1)
    assert env.pegs == [[3, 2, 1], [], []]


@pytest.mark.parametrize("n", [3, 4])
def test_progress_and_oracle_are_exact_from_every_position(n: int) -> None:
    dist = distances_to_goal(n)
    assert len(dist) == 3**n  # every position is reachable
    env = TowerofHanoiEnv(num_disks=n)
    env.reset(seed=0)
    for state, d in dist.items():
        env.pegs = pegs_of(state)
        assert env._raw_progress() == pytest.approx(1 - d / (2**n - 1))
        if d == 0:
            continue
        move = env._parse(env.oracle_action().removeprefix("\\boxed{").removesuffix("}"))
        env._apply(move)
        after = tuple(env._locations()[k] for k in range(1, n + 1))
        assert dist[after] == d - 1, (state, move)


def test_oracle_recovers_after_a_detour() -> None:
    env = TowerofHanoiEnv(num_disks=4, max_turns=20)
    env.reset(seed=0)
    total = 0.0
    for detour in ["A C", "A B", "C B"]:  # not the optimal opening (A B) for 4 disks
        total += env.step(f"\\boxed{{{detour}}}")[1]
    turns = 3
    while True:
        _, reward, terminated, truncated, info = env.step(env.oracle_action())
        total += reward
        turns += 1
        if terminated or truncated:
            break
    assert info["success"]
    assert turns == 3 + distances_to_goal(4)[(1, 1, 0, 0)]
    assert total == pytest.approx(1.0)


@pytest.mark.parametrize("variant", VARIANTS)
def test_oracle_solves_every_variant_optimally(variant: str) -> None:
    env = make(f"game:TowerofHanoi-v0{variant}")
    assert isinstance(env, TowerofHanoiEnv)
    for seed in range(30):
        episode = rollout(env, OraclePolicy(), seed)
        assert episode.success, seed
        assert len(episode.steps) == 2**env.num_disks - 1 <= env.max_turns


def test_random_variant_draws_sizes_reproducibly() -> None:
    env = make("game:TowerofHanoi-v0-random")
    assert isinstance(env, TowerofHanoiEnv)
    sizes = set()
    for seed in range(20):
        obs, info = env.reset(seed=seed)
        sizes.add(env.num_disks)
        assert info["max_turns"] == 2**env.num_disks - 1 + env.num_disks
        assert env.reset(seed=seed)[0] == obs
    assert sizes == {3, 4, 5}


def test_random_actions_are_well_formed() -> None:
    env = TowerofHanoiEnv(num_disks=3)
    env.reset(seed=0)
    rng = random.Random(0)
    for _ in range(50):
        _, _, _, _, info = env.step(env.sample_random_action(rng))
        assert info["error"] in (None, "illegal")
        if env.done:
            env.reset()
