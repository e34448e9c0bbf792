from __future__ import annotations

import math

import numpy as np
import pytest

from gem_eval.errors import UserError
from gem_eval.rl import EPS, ESTIMATORS, Transitions, advantages

# A batch computed by hand, gamma = 0.5, G_t = r_t + 0.5 * G_{t+1}:
#   episode 0, group "a": rewards [2, 4]    -> G = [2 + 0.5*4, 4]           = [4, 4]
#   episode 1, group "a": rewards [0]       -> G = [0]
#   episode 2, group "b": rewards [2, 0, 8] -> G = [2 + 0.5*4, 0 + 0.5*8, 8] = [4, 4, 8]
#   episode 3, group "b": rewards [4]       -> G = [4]
# Flat returns [4, 4, 0, 4, 4, 8, 4]: mean 4, deviations [0, 0, -4, 0, 0, 4, 0],
# population std sqrt(32 / 7).
REWARDS = [[2.0, 4.0], [0.0], [2.0, 0.0, 8.0], [4.0]]
GROUPS = ["a", "a", "b", "b"]
RETURNS = [4.0, 4.0, 0.0, 4.0, 4.0, 8.0, 4.0]
DEVIATIONS = [0.0, 0.0, -4.0, 0.0, 0.0, 4.0, 0.0]
STD = math.sqrt(32 / 7)


@pytest.fixture
def batch() -> Transitions:
    return Transitions.from_episodes(REWARDS, 0.5, GROUPS)


def test_the_batch_is_flattened_with_the_packages_returns(batch: Transitions) -> None:
    assert batch.returns.tolist() == RETURNS
    assert batch.episode.tolist() == [0, 0, 1, 2, 2, 2, 3]
    assert batch.group is not None and batch.group.tolist() == ["a", "a", "a", "b", "b", "b", "b"]


def test_reinforce_is_the_return(batch: Transitions) -> None:
    assert advantages("reinforce", batch).tolist() == RETURNS


def test_reinforce_baseline_subtracts_the_batch_mean(batch: Transitions) -> None:
    assert advantages("reinforce_baseline", batch).tolist() == DEVIATIONS


def test_the_baseline_is_the_mean_over_transitions_not_episodes() -> None:
    # Returns [1, 2, 6]: the transition mean is 3 (the median 2, the mean of the
    # episodes' first returns (1 + 6) / 2 = 3.5). ReBN: population std sqrt(14 / 3).
    skewed = Transitions.of([1.0, 2.0, 6.0], [0, 0, 1])
    assert advantages("reinforce_baseline", skewed).tolist() == [-2.0, -1.0, 3.0]
    std = math.sqrt(14 / 3)
    assert advantages("rebn", skewed) == pytest.approx([-2 / std, -1 / std, 3 / std], rel=1e-6)


def test_rebn_normalises_over_all_transitions(batch: Transitions) -> None:
    expected = [d / (STD + EPS) for d in DEVIATIONS]
    assert advantages("rebn", batch) == pytest.approx(expected, rel=1e-12)


def test_grpo_normalises_episode_returns_within_groups_and_broadcasts(batch: Transitions) -> None:
    # Group "a": episode returns 4 and 0 -> mean 2, std 2 -> +1 and -1 (times 2/(2+eps)).
    # Group "b": episode returns 4 and 4 -> all equal -> 0, although episode 2's last
    # turn earned 8: GRPO sees only G_0, not the per-turn structure.
    one = 2 / (2 + EPS)
    assert advantages("grpo", batch) == pytest.approx([one, one, -one, 0, 0, 0, 0], rel=1e-12)


def test_grpo_does_not_depend_on_the_order_or_ids_of_episodes() -> None:
    # The same episodes as in the fixture, interleaved and with arbitrary ids.
    shuffled = Transitions.of(
        returns=[4.0, 0.0, 4.0, 4.0, 4.0, 8.0, 4.0],
        episode=[70, 11, 5, 70, 5, 5, 9],
        group=["a", "a", "b", "a", "b", "b", "b"],
    )
    one = 2 / (2 + EPS)
    assert advantages("grpo", shuffled) == pytest.approx([one, -one, 0, one, 0, 0, 0], rel=1e-12)


def test_grpo_group_of_one_episode_gets_no_signal() -> None:
    lone = Transitions.from_episodes([[1.0, 2.0], [3.0], [5.0]], 1.0, ["x", "y", "y"])
    adv = advantages("grpo", lone)
    assert adv[:2].tolist() == [0.0, 0.0]  # group "x" has one episode
    assert adv[2:] == pytest.approx([-1 / (1 + EPS), 1 / (1 + EPS)])


def test_one_transition_and_zero_std_give_zero_advantage_exactly() -> None:
    one = Transitions.of([0.7], [0])
    assert advantages("reinforce", one).tolist() == [0.7]
    for name in ("reinforce_baseline", "rebn"):
        assert advantages(name, one).tolist() == [0.0]
    # Three equal returns whose float mean is not exactly 0.1: still exactly zero.
    flat = Transitions.of([0.1, 0.1, 0.1], [0, 1, 2], group=[0, 0, 0])
    for name in ("reinforce_baseline", "rebn", "grpo"):
        assert advantages(name, flat).tolist() == [0.0, 0.0, 0.0]


def test_empty_batch() -> None:
    empty = Transitions.of([], [], group=[])
    for name in ESTIMATORS:
        assert advantages(name, empty).shape == (0,)


def test_episode_return_given_explicitly_overrides_the_first_transition() -> None:
    # Episode 0 starts outside the batch (its G_0 was 10), episode 1 is whole.
    part = Transitions.of([2.0, 1.0, 6.0], [0, 0, 1], group=[0, 0, 0], episode_return=[10, 10, 6])
    assert advantages("grpo", part) == pytest.approx([1, 1, -1], rel=1e-5)


def test_grpo_refuses_inconsistent_or_missing_groups() -> None:
    with pytest.raises(ValueError, match="needs a group"):
        advantages("grpo", Transitions.of([1.0], [0]))
    with pytest.raises(ValueError, match="group differs"):
        advantages("grpo", Transitions.of([1.0, 2.0], [0, 0], group=["a", "b"]))
    with pytest.raises(ValueError, match="episode_return differs"):
        advantages("grpo", Transitions.of([1.0, 2.0], [0, 0], [0, 0], episode_return=[1, 2]))


def test_bad_batches_are_refused() -> None:
    with pytest.raises(ValueError, match="same length"):
        Transitions.of([1.0, 2.0], [0])
    with pytest.raises(ValueError, match="one entry per transition"):
        Transitions.of([1.0, 2.0], [0, 0], group=[0])
    with pytest.raises(ValueError, match="finite"):
        Transitions.of([np.nan], [0])


def test_the_registry_and_unknown_names() -> None:
    assert set(ESTIMATORS) == {"reinforce", "reinforce_baseline", "rebn", "grpo"}
    with pytest.raises(UserError, match="Did you mean: rebn"):
        advantages("rebm", Transitions.of([1.0], [0]))
