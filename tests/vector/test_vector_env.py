"""Sync and async vector envs, parametrized together: they must behave identically.

``async`` steps the (plain) fake envs directly; ``async-threads`` marks them blocking, so
every call goes through the event loop and the thread pool.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from gem_eval.core import Env
from gem_eval.errors import VectorEnvError
from gem_eval.vector import AsyncVectorEnv, SyncVectorEnv, VectorEnv, make_vec
from tests.fakes import FakeEnv

MakeVec = Callable[..., VectorEnv]


@pytest.fixture(params=["sync", "async", "async-threads"])
def vec_cls(request: pytest.FixtureRequest) -> MakeVec:
    cls = SyncVectorEnv if request.param == "sync" else AsyncVectorEnv

    def build(envs: Sequence[Env], **kwargs: object) -> VectorEnv:
        if request.param == "async-threads":
            for env in envs:
                env.blocking = True  # type: ignore[misc]
        return cls(envs, **kwargs)  # type: ignore[arg-type]

    return build


def expected_reset_obs(seed: int, resets: int = 1) -> str:
    """What FakeEnv's ``resets``-th reset shows after ``reset(seed)``."""
    env = FakeEnv()
    obs, _ = env.reset(seed)
    for _ in range(resets - 1):
        obs, _ = env.reset()
    return obs


def test_reset_gives_sub_env_i_seed_plus_i(vec_cls: MakeVec) -> None:
    vec = vec_cls([FakeEnv() for _ in range(3)])
    obs, infos = vec.reset(seed=10)
    assert obs == [expected_reset_obs(10 + i) for i in range(3)]
    assert [i["resets"] for i in infos] == [1, 1, 1]
    vec.close()


def test_reset_accepts_a_seed_per_sub_env(vec_cls: MakeVec) -> None:
    vec = vec_cls([FakeEnv(), FakeEnv()])
    obs, _ = vec.reset(seed=[5, 9])
    assert obs == [expected_reset_obs(5), expected_reset_obs(9)]


def test_next_step_autoreset_exact_sequence(vec_cls: MakeVec) -> None:
    vec = vec_cls([FakeEnv(length=1), FakeEnv(length=2)])
    vec.reset(seed=0)

    obs, rew, term, trunc, infos = vec.step(["a", "a"])
    assert (obs, rew, term, trunc) == (["a@1", "a@1"], [1.0, 1.0], [True, False], [False, False])
    assert "autoreset" not in infos[0]

    # sub-env 0 ended last step: this step resets it and ignores its action.
    obs, rew, term, trunc, infos = vec.step(["b", "b"])
    assert obs == [expected_reset_obs(0, resets=2), "b@2"]
    assert (rew, term, trunc) == ([0.0, 2.0], [False, True], [False, False])
    assert infos[0] == {"resets": 2, "autoreset": True}

    obs, rew, term, _, infos = vec.step(["c", "c"])
    assert obs == ["c@1", expected_reset_obs(1, resets=2)]
    assert (rew, term) == ([1.0, 0.0], [True, False])
    assert infos[1]["autoreset"] is True


def test_same_step_autoreset_exact_sequence(vec_cls: MakeVec) -> None:
    vec = vec_cls([FakeEnv(length=2), FakeEnv(length=3)], autoreset_mode="same_step")
    vec.reset(seed=4)
    vec.step(["a", "a"])

    obs, rew, term, trunc, infos = vec.step(["b", "b"])
    assert obs == [expected_reset_obs(4, resets=2), "b@2"]
    assert (rew, term, trunc) == ([2.0, 2.0], [True, False], [False, False])
    assert infos[0] == {"resets": 2, "final_obs": "b@2", "final_info": {"k": 2}}
    assert "final_obs" not in infos[1]

    obs, rew, term, _, _ = vec.step(["c", "c"])
    assert obs[0] == "c@1"  # already reset: this step is the new episode's first
    assert (rew, term) == ([1.0, 3.0], [False, True])


def test_disabled_autoreset_leaves_finished_envs_alone(vec_cls: MakeVec) -> None:
    envs = [FakeEnv(length=1), FakeEnv(length=1)]
    vec = vec_cls(envs, autoreset_mode="disabled")
    vec.reset(seed=0)
    vec.step(["a", "a"])
    obs, rew, *_ = vec.step(["b", "b"])
    assert obs == ["b@2", "b@2"] and rew == [2.0, 2.0]
    assert [e.resets for e in envs] == [1, 1]
    obs, _ = vec.reset(indices=[1])
    assert obs == [expected_reset_obs(1, resets=2)]
    assert [e.resets for e in envs] == [1, 2]


def test_partial_step_advances_only_the_given_envs(vec_cls: MakeVec) -> None:
    envs = [FakeEnv(length=1), FakeEnv(length=5), FakeEnv(length=5)]
    vec = vec_cls(envs)
    vec.reset(seed=0)
    obs, rew, term, trunc, infos = vec.step({2: "x", 0: "y"})
    assert obs == {0: "y@1", 2: "x@1"}
    assert rew == {0: 1.0, 2: 1.0} and term == {0: True, 2: False}
    assert trunc == {0: False, 2: False} and set(infos) == {0, 2}
    assert [e.k for e in envs] == [1, 0, 1]

    # sub-env 0 has a pending autoreset; a partial step that leaves it out keeps it.
    vec.step({1: "z"})
    assert envs[0].resets == 1
    obs, rew, *_ = vec.step({0: "w"})
    assert obs == {0: expected_reset_obs(0, resets=2)} and rew == {0: 0.0}


def test_action_count_and_indices_are_checked(vec_cls: MakeVec) -> None:
    vec = vec_cls([FakeEnv(), FakeEnv()])
    vec.reset()
    with pytest.raises(ValueError, match="needs 2 actions"):
        vec.step(["a"])
    with pytest.raises(ValueError):
        vec.step("ab")  # a string is not a list of actions
    with pytest.raises(IndexError, match="out of range"):
        vec.step({2: "a"})


def test_worker_exception_is_reraised_with_the_env_index(vec_cls: MakeVec) -> None:
    vec = vec_cls([FakeEnv(), FakeEnv(fail_at=2), FakeEnv()])
    vec.reset(seed=0)
    vec.step(["a"] * 3)
    with pytest.raises(VectorEnvError) as err:
        vec.step(["a"] * 3)
    assert err.value.index == 1
    assert isinstance(err.value.__cause__, RuntimeError)
    assert "sub-env 1 raised RuntimeError: boom at step 2" in str(err.value)
    assert [e.k for e in vec.envs] == [2, 2, 2]  # the others were stepped all the same


def test_every_failure_is_counted(vec_cls: MakeVec) -> None:
    vec = vec_cls([FakeEnv(), FakeEnv(fail_at=1), FakeEnv(fail_at=1), FakeEnv()])
    vec.reset(seed=0)
    with pytest.raises(VectorEnvError, match="1 other sub-env") as err:
        vec.step(["a"] * 4)
    assert err.value.index == 1
    assert [e.k for e in vec.envs] == [1, 1, 1, 1]


def test_reset_indices_are_checked(vec_cls: MakeVec) -> None:
    vec = vec_cls([FakeEnv(), FakeEnv()])
    for bad in ([-1], [2]):
        with pytest.raises(IndexError, match="out of range"):
            vec.reset(indices=bad)


def test_close_closes_every_sub_env(vec_cls: MakeVec) -> None:
    envs = [FakeEnv(), FakeEnv()]
    vec = vec_cls(envs)
    vec.close()
    vec.close()
    assert all(e.closed for e in envs)


def test_make_vec_seeds_and_mixed_ids() -> None:
    vec = make_vec("game:GuessTheNumber-v0", 3, seed=5)
    vec.reset()
    secrets = [e.unwrapped.secret for e in vec.envs]  # type: ignore[attr-defined]
    env = make_vec("game:GuessTheNumber-v0", 1).envs[0]
    expected = []
    for i in range(3):
        env.reset(5 + i)
        expected.append(env.unwrapped.secret)  # type: ignore[attr-defined]
    assert secrets == expected
    mixed = make_vec(["game:GuessTheNumber-v0-easy", "game:Wordle-v0-easy"], mode="async")
    assert isinstance(mixed, AsyncVectorEnv) and mixed.num_envs == 2
    with pytest.raises(ValueError, match="2 env ids for 3"):
        make_vec(["game:GuessTheNumber-v0-easy", "game:Wordle-v0-easy"], 3)
