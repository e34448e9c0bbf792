"""An agent program inside the task's container reaches the run's endpoint at the URL
gem-eval gives it (``sandbox_base_url``), with its episode's token and no other; with the
network off (``--no-network``) it reaches that endpoint and nothing else: not the
outside, not this machine's other ports."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gem_eval.agents.registry import AGENTS, AgentInfo, register
from gem_eval.models.scripted import ScriptedModel
from gem_eval.records import ModelSpec
from gem_eval.runner.session import RunOptions, execute_run, plan_run
from gem_eval.sandbox import endpoint_network
from gem_eval.sandbox.images import apt_mirror
from tests.agents.probe_agent import ProbeAgent

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "tests" / "fixtures" / "harbor_jobs" / "tasks" / "hello-file"


@pytest.fixture(autouse=True)
def probe_agent() -> Iterator[None]:
    register(AgentInfo("probe", "tests.agents.probe_agent:ProbeAgent", "tests", ("terminal",), "x"))
    yield
    AGENTS.pop("probe", None)
    ProbeAgent.ports, ProbeAgent.mirror = [], ""


@contextlib.contextmanager
def listening(host: str) -> Iterator[int]:
    """A TCP port of this machine that accepts connections on ``host``."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        sock.listen()
        yield sock.getsockname()[1]


def play(tmp_path: Path, **options: object) -> dict[str, Any]:
    suite = tmp_path / "tb.yaml"
    base = ROOT / "tasks" / "terminal" / "base"
    suite.write_text(
        f"""
name: tb
defaults:
  agent: probe
  sandbox:
    image_map: {{"python:3*": {base}}}
tasks:
  - id: t
    env: terminal:Task-v0
    args: {{path: {TASK}}}
"""
    )
    model = ScriptedModel(lambda messages: "echo hi > /app/hello.txt")
    plan = plan_run(str(suite), [ModelSpec(name="scripted")], RunOptions(**options), tmp_path / "r")  # type: ignore[arg-type]
    asyncio.run(execute_run(plan, model_factory=lambda spec: model))
    [record] = plan.run_dir.records()
    assert record.trajectory is not None and record.trajectory.agent_run is not None
    assert (record.outcome, record.score) == ("completed", 1.0), record.trajectory.error
    assert len(record.trajectory.steps) == 1  # the one call made with the episode's token
    return dict(record.trajectory.agent_run["probe"])


@pytest.mark.docker
def test_the_container_reaches_its_endpoint_with_its_token_only(tmp_path: Path) -> None:
    report = play(tmp_path)  # the task allows the network: the container is on a bridge
    assert report["url"].startswith("http://") and "127.0.0.1" not in report["url"]
    assert (report["status"], report["command"], report["exit"]) == (
        200,
        "echo hi > /app/hello.txt",
        0,
    )
    assert report["other_token"] == 401


@pytest.mark.docker
def test_without_the_network_only_the_endpoint_is_reached(tmp_path: Path) -> None:
    with listening("127.0.0.1") as loopback, listening("0.0.0.0") as everywhere:
        ProbeAgent.ports = [loopback, everywhere]
        ProbeAgent.mirror = apt_mirror()
        report = play(tmp_path, no_network=True)
    assert (report["status"], report["other_token"]) == (200, 401)
    assert report["mirror"] == "URLError"  # no route out, no outside name resolved
    assert report["ports"][str(loopback)] == "ConnectionRefusedError"
    # A service on all addresses is reachable at the gateway unless the host filters it
    # (as root with iptables: CI's case).
    filtered = endpoint_network._can_filter()
    assert report["ports"][str(everywhere)] == ("ConnectionRefusedError" if filtered else "open")
    assert not endpoint_network._networks  # the run removed its endpoint network
