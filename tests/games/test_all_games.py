"""Properties every registered game must have, checked on every ``game:*`` id."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gem_eval import list_envs, make
from gem_eval.policies import OraclePolicy, RandomPolicy
from gem_eval.rollout import rollout

GAME_IDS = list_envs("game")
ERRORS = {None, "format", "illegal"}
# Tower of Hanoi always starts with the whole tower on peg A (only -random varies).
FIXED_START = {"game:TowerofHanoi-v0", "game:TowerofHanoi-v0-easy", "game:TowerofHanoi-v0-hard"}

# Words that make up real moves in the games, so fuzzing reaches the move logic.
MOVE_WORDS = ["up", "down", "left", "right", "reveal", "flag", "A", "B", "C", "e", "crane"]
actions = st.one_of(
    st.text(max_size=30),
    st.text(max_size=12).map(lambda t: f"\\boxed{{{t}}}"),
    st.lists(st.one_of(st.sampled_from(MOVE_WORDS), st.integers(-2, 12).map(str)), max_size=5).map(
        lambda ws: "\\boxed{" + " ".join(ws) + "}"
    ),
)


def test_every_game_has_easy_hard_and_random_variants() -> None:
    names = {i.split("-v0")[0] for i in GAME_IDS}
    assert len(names) >= 9
    for name in names:
        for suffix in ("", "-easy", "-hard", "-random"):
            assert f"{name}-v0{suffix}" in GAME_IDS


@pytest.mark.parametrize("env_id", GAME_IDS)
def test_reset_is_reproducible_from_the_seed(env_id: str) -> None:
    a, b = make(env_id), make(env_id)
    for seed in (0, 1, 17):
        assert a.reset(seed) == b.reset(seed)
    ep_a = rollout(a, OraclePolicy(), seed=3)
    ep_b = rollout(b, OraclePolicy(), seed=3)
    assert [t.action for t in ep_a.steps] == [t.action for t in ep_b.steps]
    assert [t.observation for t in ep_a.steps] == [t.observation for t in ep_b.steps]
    if env_id in FIXED_START:
        return
    games = {tuple(t.action for t in rollout(a, OraclePolicy(), seed=s).steps) for s in range(6)}
    assert len(games) > 1, "different seeds should give different games"


@pytest.mark.parametrize("env_id", GAME_IDS)
def test_oracle_solves_with_the_maximum_return(env_id: str) -> None:
    env = make(env_id)
    for seed in range(30):
        episode = rollout(env, OraclePolicy(), seed=seed)
        assert episode.success, f"seed {seed}: {episode.steps[-1].observation}"
        assert len(episode.steps) <= env.max_turns  # type: ignore[attr-defined]
        assert episode.total_return == pytest.approx(1.0)
        assert all(t.info["error"] is None for t in episode.steps)
        assert 0 < episode.discounted_return(0.9) <= 1.0


@pytest.mark.parametrize("env_id", GAME_IDS)
def test_random_play_ends_within_the_turn_limit(env_id: str) -> None:
    env = make(env_id)
    episode = rollout(env, RandomPolicy(seed=0), seed=0)
    assert episode.outcome == "completed"  # the env ended it, not rollout's safety stop
    assert episode.steps[-1].terminated or episode.steps[-1].truncated
    assert len(episode.steps) <= env.max_turns  # type: ignore[attr-defined]
    assert episode.total_return <= 1.0 + 1e-9


@pytest.mark.parametrize("env_id", GAME_IDS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(moves=st.lists(actions, min_size=1, max_size=6), seed=st.integers(0, 2**31))
def test_garbage_actions_never_raise(env_id: str, moves: list[str], seed: int) -> None:
    env = make(env_id)
    env.reset(seed)
    total = 0.0
    for move in moves:
        obs, reward, terminated, truncated, info = env.step(move)
        assert isinstance(obs, str) and obs
        assert isinstance(reward, float)
        total += reward
        if terminated or truncated:
            assert "success" in info
            assert env.step(move)[4]["error"] == "episode_over"
            break
        assert info["error"] in ERRORS
        if info["error"] is not None:
            assert reward < 0
    assert total <= 1.0 + 1e-9


@pytest.mark.parametrize("env_id", GAME_IDS)
def test_the_next_episode_does_not_depend_on_how_this_one_was_played(env_id: str) -> None:
    """Two agents that start from the same seed meet the same later episodes."""

    def next_episode(policy: object) -> tuple[str, list[str]]:
        env = make(env_id)
        rollout(env, policy, seed=5)  # type: ignore[arg-type]
        second = rollout(env, OraclePolicy())  # reset() without a seed: carries on
        return second.initial_observation, [t.observation for t in second.steps]

    assert next_episode(OraclePolicy()) == next_episode(RandomPolicy(seed=1))


@pytest.mark.parametrize("env_id", GAME_IDS)
def test_stepping_after_the_end_repeats_the_final_flags(env_id: str) -> None:
    env = make(env_id)
    assert env.step("\\boxed{1}")[4]["error"] == "episode_over"  # before any reset
    last = rollout(env, OraclePolicy(), seed=0).steps[-1]
    _, reward, terminated, truncated, info = env.step("\\boxed{1}")
    assert (reward, terminated, truncated) == (0.0, last.terminated, last.truncated)
    assert info["error"] == "episode_over" and info["success"] is True
