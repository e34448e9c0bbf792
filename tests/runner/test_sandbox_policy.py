"""A suite's ``sandbox:`` and ``--no-network`` as a policy over hosted tasks (terminal),
from the suite file to the sandbox the Provisioner gives and the manifest records; and
the tasks the policy refuses before the run. No container starts here: the tasks name a
prebuilt image, so nothing is built (see ``tests/envs/test_terminal_policy_docker.py``
for the containers themselves)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gem_eval.envs.hosted import HostedEnv
from gem_eval.envs.terminal.layout import load_task
from gem_eval.errors import TaskFormatError, UserError
from gem_eval.records import SandboxSpec, TaskSpec
from gem_eval.registration import make
from gem_eval.runner.provision import Provisioner
from gem_eval.suites import load_suite


def write_task(
    root: Path, name: str = "t", *, environment: str = "", agent: str = "", internet: bool = True
) -> Path:
    """A TB2 task on a prebuilt image that asks for 2 GB, 2 CPUs and (by default) the
    internet."""
    task = root / name
    (task / "tests").mkdir(parents=True)
    (task / "instruction.md").write_text("Do it.\n")
    (task / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    (task / "task.toml").write_text(
        f"[agent]\ntimeout_sec = 60.0\n{agent}\n"
        f'[environment]\ndocker_image = "example/image:1"\ncpus = 2\nmemory_mb = 2048\n'
        f"allow_internet = {str(internet).lower()}\n{environment}\n"
    )
    return task


def write_suite(tmp: Path, sandbox: str = "", task_dir: Path | None = None) -> Path:
    suite = tmp / "suite.yaml"
    block = f"defaults:\n  sandbox: {sandbox}\n" if sandbox else ""
    suite.write_text(
        f"name: s\n{block}tasks:\n  - id: tb\n    env: terminal:Task-v0\n"
        f"    args: {{path: {task_dir or tmp / 'tasks'}}}\n"
    )
    return suite


def given(task: TaskSpec, provisioner: Provisioner | None = None) -> SandboxSpec:
    """The sandbox the run gives ``task``'s episodes."""
    env = make(task.env_id, **task.env_kwargs)
    hosted = env.unwrapped
    assert isinstance(hosted, HostedEnv)
    return (provisioner or Provisioner()).hosted_spec(task, hosted.resources())


def test_a_suite_without_policy_keys_leaves_the_tasks_own_sandbox(tmp_path: Path) -> None:
    write_task(tmp_path / "tasks")
    suite = load_suite(write_suite(tmp_path, '{image_map: {"python:3*": local/py}}'))
    # An override (--max-turns) re-validates the task: the keys set must survive it.
    for spec in (suite.task_specs(), suite.task_specs({"limits": {"max_turns": 3}})):
        sandbox = given(spec[0])
        assert (sandbox.network, sandbox.memory, sandbox.cpus, sandbox.user) == (
            True, "2048m", 2.0, "root"
        )  # fmt: skip


def test_the_suites_keys_tighten_the_tasks_own(tmp_path: Path) -> None:
    write_task(tmp_path / "tasks")
    policy = "{network: false, memory: 512m, cpus: 0.5, pids: 64, user: agent}"
    [task] = load_suite(write_suite(tmp_path, policy)).task_specs({"limits": {"max_turns": 3}})
    provisioner = Provisioner()
    sandbox = given(task, provisioner)
    assert (sandbox.network, sandbox.memory, sandbox.cpus, sandbox.pids, sandbox.user) == (
        False, "512m", 0.5, 64, "agent"
    )  # fmt: skip
    assert provisioner.describe()["policy"] == {
        "tb/t": {
            "network": False,
            "memory": "512m",
            "cpus": 0.5,
            "pids": 64,
            "user": "agent",
            "tightened": ["network", "memory", "cpus", "pids", "user"],
        }
    }


def test_the_suites_keys_never_loosen_the_tasks_own(tmp_path: Path) -> None:
    write_task(tmp_path / "tasks", internet=False)
    policy = "{network: true, memory: 16g, cpus: 8.0, pids: 100000}"
    [task] = load_suite(write_suite(tmp_path, policy)).task_specs()
    provisioner = Provisioner()
    sandbox = given(task, provisioner)
    assert (sandbox.network, sandbox.memory, sandbox.cpus, sandbox.pids) == (
        False, "2048m", 2.0, 1024
    )  # fmt: skip
    assert provisioner.describe()["policy"]["tb/t"]["tightened"] == []


def test_no_network_turns_a_permitted_network_off_and_says_so(tmp_path: Path) -> None:
    write_task(tmp_path / "tasks")
    [task] = load_suite(write_suite(tmp_path)).task_specs()
    provisioner = Provisioner(no_network=True)
    assert given(task, provisioner).network is False
    assert provisioner.describe()["policy"]["tb/t"]["tightened"] == ["network"]


def test_a_task_that_needs_the_internet_is_refused_before_the_run(tmp_path: Path) -> None:
    write_task(tmp_path / "tasks", "online", environment="requires_internet = true")
    write_task(tmp_path / "tasks", "offline")
    tasks = load_suite(write_suite(tmp_path)).task_specs()
    with pytest.raises(UserError, match=r"task 'tb/online' needs the internet.*--no-network"):
        asyncio.run(Provisioner(no_network=True).prepare(tasks))


def test_a_task_whose_agent_runs_as_another_user_is_refused_before_the_run(
    tmp_path: Path,
) -> None:
    write_task(tmp_path / "tasks", agent='user = "alice"')
    tasks = load_suite(write_suite(tmp_path, "{user: bob}")).task_specs()
    with pytest.raises(
        UserError, match=r"task 'tb/t' runs its agent as 'alice'.*sandbox.user: bob"
    ):
        asyncio.run(Provisioner().prepare(tasks))


def test_the_tasks_agent_user_is_its_sandboxs_user(tmp_path: Path) -> None:
    write_task(tmp_path / "tasks", agent='user = "alice"')
    [task] = load_suite(write_suite(tmp_path)).task_specs()
    assert given(task).user == "alice"
    assert given(task, Provisioner(no_network=True)).user == "alice"


@pytest.mark.parametrize(
    ("environment", "network"),
    [
        ("", True),  # allow_internet = true alone
        ('network_mode = "public"', True),
        ('network_mode = "no-network"', False),  # the newer key wins over allow_internet
        ('network_mode = "allowlist"\nallowed_hosts = ["pypi.org"]', False),
    ],
)
def test_harbor_network_settings(tmp_path: Path, environment: str, network: bool) -> None:
    task = load_task(write_task(tmp_path, environment=environment))
    assert task.network is network and task.requires_internet is False


def test_harbor_agent_user_and_requires_internet(tmp_path: Path) -> None:
    task = load_task(
        write_task(tmp_path, agent="user = 1000", environment="requires_internet = true")
    )
    assert task.agent_user == "1000" and task.requires_internet is True
    assert load_task(write_task(tmp_path, "plain")).agent_user is None


def test_an_unknown_network_mode_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(TaskFormatError, match=r"task.toml: network_mode 'vpn'"):
        load_task(write_task(tmp_path, environment='network_mode = "vpn"'))


def test_no_network_is_measured_resume_refuses_to_change_it_without_force() -> None:
    from gem_eval.records import ModelSpec
    from gem_eval.runner import resume

    models, stored = [ModelSpec(name="m")], {"no_network": False}
    request = resume.ResumeRequest(options={"no_network": True})
    with pytest.raises(UserError, match="--no-network would change it"):
        resume.apply(request, models, stored, suite_changed=False)
    forced = resume.ResumeRequest(options={"no_network": True}, force=True)
    _, options, session = resume.apply(forced, models, stored, suite_changed=False)
    assert options["no_network"] is True and "--no-network" in session["forced"]
    kept = resume.apply(resume.ResumeRequest(options={"no_network": None}), models, stored, False)
    assert kept[1]["no_network"] is False
