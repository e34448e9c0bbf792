"""Built-in policies (gem_eval.policies): a random baseline is random.

``play --policy random --seed S`` resets the env with ``S`` and builds the policy from
``S``. The policy's generator must not replay the env's draws: when both were
``random.Random(S)`` it guessed the secret of every Wordle game in 3 turns.
"""

from __future__ import annotations

import math
import random

import pytest

from gem_eval import make
from gem_eval.envs.games._words import words
from gem_eval.policies import Policy, RandomPolicy, make_policy
from gem_eval.rollout import rollout

EPISODES = 1000
"""Per arm. The rarer solve (Wordle-easy, about 3%) still comes ~30 times, enough for
the normal approximation of the binomial."""
Z = 4.0
"""Standard errors two solve rates may differ by and still count as the same: under the
normal approximation a false alarm once in ~16,000. The seeds are fixed, so each run of
the test gives the same rates; the tolerance says what "the same" means."""

KNOWN_RATES = {
    # 15 uniform draws from the 3-letter word list (a repeat wastes a turn).
    "game:Wordle-v0-easy": 1 - (1 - 1 / len(words(3))) ** 15,
    # 4 uniform guesses in 1..10 (a repeat wastes a turn).
    "game:GuessTheNumber-v0-easy": 1 - 0.9**4,
}


def solve_rate(env_id: str, policy_for_seed: dict[int, Policy]) -> float:
    """The share of episodes solved, each reset with its seed and played by its policy."""
    env = make(env_id)
    solved = sum(
        rollout(env, policy, seed=seed).success for seed, policy in policy_for_seed.items()
    )
    return solved / len(policy_for_seed)


def standard_error(p: float, n: int) -> float:
    return math.sqrt(p * (1 - p) / n)


@pytest.mark.parametrize("env_id", sorted(KNOWN_RATES))
def test_a_random_policy_seeded_like_the_env_plays_as_one_from_an_unrelated_stream(
    env_id: str,
) -> None:
    seeds = range(EPISODES)
    shared = solve_rate(env_id, {s: make_policy("random", s) for s in seeds})
    unrelated = random.Random("an unrelated stream")
    independent = solve_rate(env_id, {s: RandomPolicy(unrelated.getrandbits(64)) for s in seeds})
    pooled = (shared + independent) / 2
    assert abs(shared - independent) <= Z * math.sqrt(2) * standard_error(pooled, EPISODES), (
        f"{env_id}: the random policy seeded like the env solved {shared:.1%}, "
        f"one seeded from an unrelated stream {independent:.1%}"
    )
    known = KNOWN_RATES[env_id]
    assert abs(shared - known) <= Z * standard_error(known, EPISODES), (shared, known)


def test_the_policy_seed_is_reproducible_and_not_the_env_seed() -> None:
    from gem_eval.policies import policy_seed

    assert policy_seed(1, "random") == policy_seed(1, "random")
    assert policy_seed(1, "random") not in (1, policy_seed(2, "random"), policy_seed(1, "x"))
    assert policy_seed(None, "random") is None
    a, b = RandomPolicy(7), RandomPolicy(7)
    assert [a.rng.random() for _ in range(3)] == [b.rng.random() for _ in range(3)]
    assert RandomPolicy(7).rng.random() != random.Random(7).random()
