from __future__ import annotations

import pytest

from gem_eval import make
from gem_eval.errors import UserError
from gem_eval.policies import HumanPolicy, OraclePolicy, RandomPolicy, make_policy
from gem_eval.rollout import rollout
from tests.fakes import FakeEnv


def test_oracle_rollout_solves_and_records_every_turn() -> None:
    seen: list[int] = []
    env = make("game:GuessTheNumber-v0-hard")
    episode = rollout(env, OraclePolicy(), seed=2, on_turn=lambda e: seen.append(len(e.steps)))
    assert episode.success and episode.outcome == "completed" and episode.steps[-1].terminated
    assert episode.total_return == pytest.approx(1.0)
    assert seen == list(range(len(episode.steps) + 1))
    assert episode.env_id == "game:GuessTheNumber-v0-hard"


def test_random_policy_is_seeded_and_leaves_the_env_rng_alone() -> None:
    env = make("game:GuessTheNumber-v0")
    a = rollout(env, RandomPolicy(seed=1), seed=4)
    b = rollout(env, RandomPolicy(seed=1), seed=4)
    assert [t.action for t in a.steps] == [t.action for t in b.steps]
    env.reset(4)
    policy = RandomPolicy(seed=1)
    assert len({policy("", env) for _ in range(10)}) > 1
    before = env.rng.getstate()
    RandomPolicy(seed=99)("", env)
    assert env.rng.getstate() == before


def test_human_policy_reads_answers() -> None:
    answers = iter(["\\boxed{5}", "\\boxed{8}", "\\boxed{9}", "\\boxed{10}", "\\boxed{1}"])
    episode = rollout(make("game:GuessTheNumber-v0-easy"), HumanPolicy(lambda _: next(answers)), 0)
    assert [t.action for t in episode.steps] == [
        "\\boxed{5}",
        "\\boxed{8}",
        "\\boxed{9}",
        "\\boxed{10}",
    ]


def test_policy_errors_are_user_errors() -> None:
    with pytest.raises(UserError, match="unknown policy"):
        make_policy("smart")
    with pytest.raises(UserError, match="no oracle"):
        rollout(FakeEnv(), OraclePolicy())


def test_rollout_stops_at_its_safety_limit() -> None:
    episode = rollout(FakeEnv(length=10**6), lambda obs, env: "a", seed=0, max_turns=5)
    assert len(episode.steps) == 5
    assert episode.outcome == "truncated" and episode.truncated_by == "max_turns"
