"""A dead or failing model server ends an agent program's episode at once.

Agent programs retry a failed model call until their own time is up (Terminus-2 and
mini-swe-agent for the task's whole agent timeout). Once the run's model client has
given up on a call for the machinery's sake (its retries spent on a refused connection
or on 5xx answers), the episode stops the agent and ends as ``infra_error`` with the
first failure named for what it was; a failure a retry mends changes nothing."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import pytest

from gem_eval.agents.registry import AGENTS, AgentInfo, register
from gem_eval.models import RetryPolicy, get_model
from gem_eval.records import EpisodeRecord, ModelSpec
from gem_eval.runner.session import RunOptions, execute_run, plan_run
from tests.agents.test_agent_programs import suite
from tests.fixtures.openai_server import FakeOpenAIServer, Fault, Reply

AGENT = "fake-persistent-cli"
RETRY = RetryPolicy(max_retries=2, initial_wait_s=0.05)
AGENT_TIMEOUT_S = 120.0
"""The fixture tasks' agent timeout ([agent] timeout_sec in their task.toml): the agent
would retry for that long."""


@pytest.fixture(autouse=True)
def persistent_agent() -> Any:
    register(AgentInfo(AGENT, "tests.agents.fake_agent:PersistentCli", "tests", ("terminal",), "x"))
    yield
    AGENTS.pop(AGENT, None)


def play(tmp_path: Path, base_url: str, backend: str = "openai") -> list[EpisodeRecord]:
    """Both fixture tasks, played by the persistent agent with a model at ``base_url``."""
    model = get_model("openai/fake", base_url=base_url, backend=backend, retry=RETRY)
    plan = plan_run(str(suite(tmp_path, AGENT)), [ModelSpec(name="openai/fake")], RunOptions(),
                    tmp_path / "r")  # fmt: skip
    asyncio.run(execute_run(plan, model_factory=lambda spec: model))
    return sorted(plan.run_dir.records(), key=lambda r: r.task_id)


def assert_ended_promptly_as_infra(records: list[EpisodeRecord], cause: str) -> None:
    assert len(records) == 2
    for record in records:
        traj = record.trajectory
        assert traj is not None
        assert (record.outcome, record.score) == ("infra_error", None), traj.error
        assert traj.error is not None and cause in traj.error
        # Stopped, not timed out: well within the agent's time, its result never given.
        assert traj.duration_s < AGENT_TIMEOUT_S / 3
        assert traj.agent_run is None
        assert traj.steps and "error" in traj.steps[0].info
        assert record.retries >= RETRY.max_retries


@pytest.mark.docker
@pytest.mark.parametrize("backend", ["openai", "litellm"])
def test_a_refused_connection_ends_the_episode_as_infra_error(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as sock:  # a port nobody listens on once this is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    async def reachable(*args: object) -> None:  # the server went down once the run started
        return None

    monkeypatch.setattr("gem_eval.models.preflight.check_server", reachable)
    records = play(tmp_path, f"http://127.0.0.1:{port}/v1", backend)
    # Named as refused (litellm calls it a 500 "Connection error"), without a status.
    assert_ended_promptly_as_infra(records, "connection refused")
    for record in records:
        assert record.trajectory is not None and "500" not in str(record.trajectory.error)


@pytest.mark.docker
def test_a_server_answering_500_ends_the_episode_as_infra_error(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    openai_server.handler = lambda body: Fault.status(500)
    records = play(tmp_path, openai_server.base_url)
    assert_ended_promptly_as_infra(records, "500")
    # The model client's attempts for the one call each episode made: the agent's own
    # retries after it gave up never reached the server.
    assert len(openai_server.requests) == 2 * (1 + RETRY.max_retries)


@pytest.mark.docker
def test_a_failure_a_retry_mends_changes_nothing(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    def answer(body: dict[str, Any]) -> Reply:
        return Reply("done" if len(body["messages"]) > 1 else "echo hi > /app/hello.txt")

    openai_server.handler = answer
    openai_server.enqueue(Fault.status(500))  # the first call fails once
    count, hello = play(tmp_path, openai_server.base_url)
    assert (hello.outcome, hello.score) == ("completed", 1.0)
    assert (count.outcome, count.score) == ("completed", 0.0)
    assert count.retries + hello.retries == 1
    assert all(r.trajectory is not None and r.trajectory.agent_run for r in (count, hello))
