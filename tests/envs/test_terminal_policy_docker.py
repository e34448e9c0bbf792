"""A run's sandbox policy over a terminal task, in real containers: the TB2 fixture allows
the internet and asks for 2 GB, yet ``--no-network`` or a suite's ``network: false``
leave only ``lo``; lower limits reach the container's HostConfig, higher ones do not; a
policy user or the task's ``[agent] user`` runs the bash tool, while grading stays root."""

from __future__ import annotations

import asyncio
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest

from gem_eval.models.base import Message, ModelOutput
from gem_eval.models.scripted import Reply, ScriptedModel, tool_call
from gem_eval.records import EpisodeRecord, EpisodeSpec, ModelSpec, SandboxSpec, TaskSpec
from gem_eval.runner.executor import LocalExecutor
from gem_eval.runner.provision import Provisioner
from gem_eval.sandbox import cleanup

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
TB2 = ROOT / "tests" / "fixtures" / "terminal" / "tb2-count-words"
BASE = str(ROOT / "tasks" / "terminal" / "base")


def bash(command: str) -> ModelOutput:
    return ModelOutput(tool_calls=[tool_call("bash", {"command": command})])


def play(
    model: ScriptedModel,
    *,
    sandbox: dict[str, Any] | None = None,
    no_network: bool = False,
    task: Path = TB2,
    run_id: str | None = None,
) -> tuple[EpisodeRecord, dict[str, Any]]:
    """One episode of ``task`` under a suite's ``sandbox:`` keys and ``--no-network``,
    through the executor as ``gem-eval run`` plays it; the record and the manifest's
    resources."""
    run_id = run_id or new_run_id()
    spec = EpisodeSpec(
        key="k",
        task=TaskSpec(
            id="tb2",
            env_id="terminal:Task-v0",
            env_kwargs={"path": str(task), "image_map": {"python:3*": BASE}},
            sandbox=SandboxSpec.model_validate(sandbox) if sandbox is not None else None,
        ),
        model=ModelSpec(name=model.name),
        sample=0,
        epoch=0,
        seed=0,
    )

    async def main() -> tuple[EpisodeRecord, dict[str, Any]]:
        provisioner = Provisioner(run_id, no_network=no_network)
        executor = LocalExecutor(lambda _: model, provisioner)
        await executor.start([spec.model])
        try:
            await executor.prepare([spec.task])
            return await executor.run(run_id, spec), executor.describe()
        finally:
            await executor.aclose()

    record, resources = asyncio.run(main())
    assert cleanup.find(run_id, include_live=True) == []
    return record, resources


def new_run_id() -> str:
    return f"test-policy-{uuid.uuid4().hex[:8]}"


def outputs(record: EpisodeRecord) -> list[str]:
    assert record.trajectory is not None, record
    return [e.output for s in record.trajectory.steps for e in s.tool_events]


def interfaces(proc_net_dev: str) -> set[str]:
    """The interface names in ``/proc/net/dev`` (after its two header lines)."""
    return {line.split(":")[0].strip() for line in proc_net_dev.splitlines()[2:] if ":" in line}


def host_config_probe(run_id: str) -> tuple[ScriptedModel, dict[str, Any]]:
    """A model that, on its first call, reads the HostConfig of the episode's container
    (the run's only one), then answers."""
    seen: dict[str, Any] = {}

    def reply(messages: list[Message]) -> Reply:
        if not seen:
            [container] = cleanup.find(run_id, include_live=True)
            seen.update(container.attrs["HostConfig"])
        return "Done."

    return ScriptedModel(reply), seen


@pytest.mark.parametrize(
    ("sandbox", "no_network"),
    [(None, True), ({"network": False}, False)],
    ids=["--no-network", "suite-network-false"],
)
def test_no_network_leaves_only_lo_in_a_task_that_allows_the_internet(
    sandbox: dict[str, Any] | None, no_network: bool
) -> None:
    model = ScriptedModel([bash("cat /proc/net/dev"), "Done."])
    record, resources = play(model, sandbox=sandbox, no_network=no_network)
    assert interfaces(outputs(record)[0]) == {"lo"}
    policy = resources["policy"]["tb2"]
    assert policy["network"] is False and policy["tightened"] == ["network"]


def test_without_a_policy_the_task_keeps_the_network_it_allows() -> None:
    # The control: the same task and probe see more than lo when nothing tightens.
    record, resources = play(ScriptedModel([bash("cat /proc/net/dev"), "Done."]))
    assert "eth0" in interfaces(outputs(record)[0])
    assert resources["policy"]["tb2"]["network"] is True


@pytest.mark.parametrize(
    ("sandbox", "memory", "nano_cpus", "pids"),
    [
        ({"memory": "512m", "cpus": 0.5, "pids": 64}, 512 * 2**20, 500_000_000, 64),
        # Higher than the task's own (2048 MB, 1 CPU, 1024 processes): not applied.
        ({"memory": "8g", "cpus": 4.0, "pids": 100000}, 2048 * 2**20, 1_000_000_000, 1024),
    ],
    ids=["tighter", "looser"],
)
def test_limits_reach_the_container_only_when_they_tighten(
    sandbox: dict[str, Any], memory: int, nano_cpus: int, pids: int
) -> None:
    run_id = new_run_id()
    model, host_config = host_config_probe(run_id)
    record, _ = play(model, sandbox=sandbox, run_id=run_id)
    assert record.outcome == "completed", record.trajectory
    assert (host_config["Memory"], host_config["NanoCpus"], host_config["PidsLimit"]) == (
        memory, nano_cpus, pids
    )  # fmt: skip


def test_a_policy_user_runs_the_bash_tool_and_the_tests_still_grade() -> None:
    solve = (TB2 / "solution" / "solve.sh").read_text()
    model = ScriptedModel([bash("id -un; id -u"), bash(solve), "Done."])
    record, resources = play(model, sandbox={"user": "agent"})
    assert outputs(record)[0].split()[:2] == ["agent", "1000"]
    assert record.success and record.score == 1.0  # graded as root, as ever
    assert resources["policy"]["tb2"]["user"] == "agent"


def test_the_tasks_agent_user_runs_the_bash_tool(tmp_path: Path) -> None:
    task = tmp_path / "tb2-count-words"
    shutil.copytree(TB2, task)
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("[agent]\n", '[agent]\nuser = "agent"\n'))
    record, _ = play(ScriptedModel([bash("id -un"), "Done."]), task=task)
    assert outputs(record)[0].split()[0] == "agent"
    default, _ = play(ScriptedModel([bash("id -un"), "Done."]))
    assert outputs(default)[0].split()[0] == "root"  # Terminal-Bench's convention
