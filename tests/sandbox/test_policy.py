"""``SandboxPolicy``: a run's ceiling over the sandboxes tasks bring themselves; it may
tighten (network off, lower limits, a user in place of root), never loosen."""

from __future__ import annotations

from typing import Any

import pytest

from gem_eval.errors import UserError
from gem_eval.records import SandboxSpec
from gem_eval.sandbox.policy import PolicyConflict, SandboxPolicy, describe_policy, memory_bytes

# What a terminal task asks for: more than SandboxSpec's defaults, the internet, root.
TASK = SandboxSpec(network=True, memory="4096m", cpus=2.0, pids=1024, user="root")


def suite(**keys: Any) -> SandboxPolicy:
    """The policy of a suite's ``sandbox:`` that writes ``keys`` (as the loader builds it)."""
    return SandboxPolicy.of(SandboxSpec.model_validate(keys))


def test_a_suite_that_sets_no_policy_key_changes_nothing() -> None:
    # SandboxSpec's defaults (no network, 1g, 1 CPU, 256 pids, agent) are no policy.
    policy = suite(image_map={"python:3*": "local/py"}, output_limit=4096)
    assert policy.apply(TASK) == TASK
    assert SandboxPolicy.of(None).apply(TASK) == TASK


@pytest.mark.parametrize(
    "policy", [suite(network=False), SandboxPolicy.of(None, no_network=True)], ids=["suite", "flag"]
)
def test_network_off_wins_over_the_tasks_permission(policy: SandboxPolicy) -> None:
    given = policy.apply(TASK)
    assert given.network is False
    assert describe_policy(TASK, given)["tightened"] == ["network"]


def test_network_on_does_not_open_a_closed_task() -> None:
    closed = TASK.model_copy(update={"network": False})
    assert suite(network=True).apply(closed).network is False


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        ({"memory": "512m"}, {"memory": "512m"}),
        ({"memory": "1g"}, {"memory": "1g"}),
        ({"memory": "8g"}, {"memory": "4096m"}),  # higher than the task's: not applied
        ({"cpus": 0.5}, {"cpus": 0.5}),
        ({"cpus": 4.0}, {"cpus": 2.0}),
        ({"pids": 64}, {"pids": 64}),
        ({"pids": 100000}, {"pids": 1024}),
    ],
)
def test_limits_take_the_smaller_never_the_larger(
    keys: dict[str, Any], expected: dict[str, Any]
) -> None:
    given = suite(**keys).apply(TASK)
    assert {k: getattr(given, k) for k in expected} == expected


def test_the_policy_user_replaces_root() -> None:
    assert suite(user="agent").apply(TASK).user == "agent"


def test_a_task_of_the_same_non_root_user_keeps_it() -> None:
    own = TASK.model_copy(update={"user": "agent"})
    assert suite(user="agent").apply(own).user == "agent"


def test_a_policy_user_root_does_not_loosen_a_non_root_task() -> None:
    own = TASK.model_copy(update={"user": "alice"})
    assert suite(user="root").apply(own).user == "alice"


def test_a_task_of_another_non_root_user_conflicts() -> None:
    own = TASK.model_copy(update={"user": "alice"})
    with pytest.raises(
        PolicyConflict, match=r"runs its agent as 'alice', not as sandbox.user: bob"
    ):
        suite(user="bob").apply(own)


def test_a_task_that_needs_the_internet_conflicts_with_no_network() -> None:
    with pytest.raises(PolicyConflict, match=r"needs the internet.*--no-network turns off"):
        SandboxPolicy.of(None, no_network=True).apply(TASK, needs_network=True)
    with pytest.raises(PolicyConflict, match=r"sandbox.network: false turns off"):
        suite(network=False).apply(TASK, needs_network=True)
    assert suite(memory="1g").apply(TASK, needs_network=True).network is True


def test_no_network_cannot_be_enforced_without_isolation() -> None:
    unsafe = SandboxSpec(type="local", unsafe=True)
    with pytest.raises(PolicyConflict, match="unsafe local sandbox"):
        SandboxPolicy.of(None, no_network=True).apply(unsafe)


@pytest.mark.parametrize(
    ("size", "expected"),
    [("512m", 512 * 2**20), ("2g", 2 * 2**30), ("2G", 2 * 2**30), ("1.5g", 3 * 2**29),
     ("1024k", 2**20), ("1048576", 2**20), ("512mb", 512 * 2**20)],
)  # fmt: skip
def test_memory_sizes(size: str, expected: int) -> None:
    assert memory_bytes(size) == expected


def test_a_bad_memory_size_is_a_user_error() -> None:
    with pytest.raises(UserError, match="not a memory size"):
        memory_bytes("lots")
