"""Installed agents: their packages are fetched on this machine into the cache once (a
second fetch runs no client and needs no registry), a registry out of reach is one line,
and in a real container each episode gets the agent's command on PATH from the mounted
tree (``mini-swe-agent --help``, ``qwen --version`` run there)."""

from __future__ import annotations

import asyncio
import io
import subprocess
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest

from gem_eval.agents.install import FetchError, Platform, fetch, make_installer
from gem_eval.agents.install.qwen_code import unpack
from gem_eval.endpoint import Call, EpisodeLine, ModelEndpoint
from gem_eval.models.base import ModelOutput
from gem_eval.models.scripted import ScriptedModel, tool_call
from gem_eval.records import SandboxSpec
from gem_eval.sandbox.agent_files import AGENTS_MOUNT
from gem_eval.sandbox.factory import make_sandbox

UNREACHABLE = "http://127.0.0.1:9/"  # nothing listens on the discard port


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GEM_EVAL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """pip and npm pointed at a registry that does not answer (and no local wheels)."""
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.setenv("PIP_INDEX_URL", UNREACHABLE + "simple")
    monkeypatch.setenv("npm_config_registry", UNREACHABLE)


def test_packages_are_fetched_once(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wheels = fetch.wheels("six==1.17.0", "3.11", "x86_64")
    tarball = fetch.npm_tarball("is-number@7.0.0")
    assert [p.name for p in wheels.glob("*.whl")] == ["six-1.17.0-py2.py3-none-any.whl"]
    with tarfile.open(tarball) as tar:
        assert tar.getmember("package/package.json").isfile()
    # Again with the registries out of reach and no client allowed to run: from the cache.
    offline(monkeypatch)

    def no_client(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"a client ran: {args}")

    monkeypatch.setattr(subprocess, "run", no_client)
    assert fetch.wheels("six==1.17.0", "3.11", "x86_64") == wheels
    assert fetch.npm_tarball("is-number@7.0.0") == tarball


def test_a_registry_out_of_reach_is_one_line(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    offline(monkeypatch)
    monkeypatch.setattr(fetch, "_NPM_OPTIONS", [*fetch._NPM_OPTIONS, "--fetch-retries=0"])
    with pytest.raises(FetchError) as pypi:
        fetch.wheels("six==1.17.0", "3.11", "x86_64")
    with pytest.raises(FetchError) as npm:
        fetch.npm_tarball("is-number@7.0.0")
    for error, where in ((pypi.value, "PyPI"), (npm.value, "the npm registry")):
        assert error.infra and "\n" not in str(error)
        assert f"from {where}: the registry could not be reached" in str(error)
    assert not list((cache / "agents" / "packages").glob("[!.]*"))  # nothing half made


def test_a_platform_that_cannot_run_the_agent_is_refused() -> None:
    mini, qwen = make_installer("mini-swe-agent"), make_installer("qwen-code")
    old_python = Platform("x86_64", (2, 36), "/usr/bin/python3", (3, 9, 2))
    musl = Platform("x86_64", None, "/usr/bin/python3", (3, 11, 9))
    for installer, platform, said in [
        (mini, old_python, "needs python3 3.10 or later; the image has python3 3.9"),
        (mini, Platform("x86_64", (2, 36)), "needs python3 3.10 or later; the image has no"),
        (qwen, musl, "needs glibc 2.28 or later; the image has no glibc"),
        (qwen, Platform("x86_64", (2, 17)), "the image has glibc 2.17"),
        (qwen, Platform("riscv64", (2, 36)), "its architecture is riscv64"),
    ]:
        with pytest.raises(Exception, match=said) as refused:
            installer.tree(platform)
        assert getattr(refused.value, "infra", False)


def test_the_probe_reads_the_image() -> None:
    text = "arch=aarch64\nglibc=glibc 2.31\npython=/usr/local/bin/python3\n"
    text += "python_version=3.12.4\nhome=/home/agent\n"
    platform = Platform.parse(text, "agent")
    assert platform == Platform(
        "aarch64", (2, 31), "/usr/local/bin/python3", (3, 12, 4), "agent", "/home/agent"
    )
    assert Platform.parse("arch=x86_64\nglibc=\nhome=\n", "root") == Platform("x86_64")


def test_unpacking_takes_only_files_inside(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, mode in (("package/bin/run", 0o755), ("package/../../evil", 0o644)):
            info = tarfile.TarInfo(name)
            info.size, info.mode = 2, mode
            tar.addfile(info, io.BytesIO(b"hi"))
        link = tarfile.TarInfo("package/link")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    (tmp_path / "p.tgz").write_bytes(buffer.getvalue())
    unpack(tmp_path / "p.tgz", tmp_path / "out")
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == [
        "out",
        "out/bin",
        "out/bin/run",
        "p.tgz",
    ]
    assert (tmp_path / "out" / "bin" / "run").stat().st_mode & 0o777 == 0o755


@pytest.mark.docker
def test_installed_agents_run_in_a_real_container() -> None:
    """With the run's cache (fetched once per machine and cache): prepare, then install
    twice in a container made for an agent program, and run each command there."""
    timings: dict[str, float] = {}

    async def main() -> None:
        installers = [make_installer("mini-swe-agent"), make_installer("qwen-code")]
        for installer in installers:
            await installer.prepare()
        box = make_sandbox(SandboxSpec(agent_program=True))
        async with box:
            for installer in installers:
                for _ in range(2):
                    began = time.monotonic()
                    installed = await installer.install(box)
                    timings[installer.name] = time.monotonic() - began
                assert installed.platform.python_version is not None
            help_ = await box.exec("mini-swe-agent --help", timeout=120)
            assert help_.ok and "mini-swe-agent version 2.4.6" in help_.stdout, help_.stderr
            qwen = await box.exec(["bash", "-c", ". ~/.nvm/nvm.sh; qwen --version"])
            assert (qwen.exit_code, qwen.stdout.strip(), qwen.stderr) == (0, "0.24.4", "")
            # The agents' packages and Node stay theirs: the task's python3 and PATH do
            # not see them; root cannot change the mounted trees.
            task_python = await box.exec(["python3", "-c", "import litellm"])
            assert not task_python.ok
            assert not (await box.exec("command -v node")).ok
            touched = await box.exec(f"touch {AGENTS_MOUNT}/x", user="root")
            assert not touched.ok and "Read-only file system" in touched.stderr

    asyncio.run(main())
    assert all(seconds < 5 for seconds in timings.values()), timings


def scripted(tool: str) -> ScriptedModel:
    """Runs ``tool`` once to write /tmp/hello.txt, then says it is done (mini-swe-agent
    ends on its own command)."""

    def answer(messages: list[Any]) -> ModelOutput:
        results = sum(1 for m in messages if m.get("role") == "tool")
        command = ["echo hi > /tmp/hello.txt", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"]
        if results < (2 if tool == "bash" else 1):
            call = tool_call(tool, {"command": command[results], "description": "write"})
            return ModelOutput(text="On it.", tool_calls=[call], finish_reason="tool_calls")
        return ModelOutput(text="The file is written.", finish_reason="stop")

    return ScriptedModel(answer)


@pytest.mark.docker
@pytest.mark.parametrize(
    ("agent", "command"),
    [
        (
            "mini-swe-agent",
            "mini-swe-agent --yolo --model=openai/scripted --task='write hi' --cost-limit 0 "
            "-c mini -c model.model_kwargs.api_base=$OPENAI_BASE_URL --exit-immediately",
        ),
        (
            "qwen-code",
            ". ~/.nvm/nvm.sh; qwen --yolo --auth-type openai --model scripted "
            '--openai-api-key "$OPENAI_API_KEY" --openai-base-url "$OPENAI_BASE_URL" '
            "--prompt='write hi'",
        ),
    ],
)
def test_an_installed_agent_calls_its_endpoint_without_the_network(
    agent: str, command: str
) -> None:
    """The agent's own CLI, headless in a container without network, calls the run's
    endpoint at the URL the sandbox reaches (whole or streamed) and acts on the replies."""
    model = scripted("bash" if agent == "mini-swe-agent" else "run_shell_command")
    calls: list[Call] = []

    async def main() -> None:
        installer = make_installer(agent)
        await installer.prepare()
        endpoint = ModelEndpoint()
        await endpoint.start()
        line = EpisodeLine(model, on_call=calls.append)
        box = make_sandbox(SandboxSpec(agent_program=True, user="root"))
        network = None
        try:
            async with box:
                network = getattr(box, "endpoint_network", None)
                assert network is not None
                await network.admit(await endpoint.listen(network.gateway))
                await installer.install(box)
                env = {
                    "OPENAI_API_KEY": endpoint.open(line),
                    "OPENAI_BASE_URL": endpoint.url(network.gateway),
                    "MSWEA_CONFIGURED": "true",  # as Harbor's adapter runs it
                    "MSWEA_COST_TRACKING": "ignore_errors",
                }
                ran = await box.exec(["bash", "-c", command + " </dev/null"], timeout=300, env=env)
                assert ran.ok, ran.stdout[-2000:] + ran.stderr[-2000:]
                assert (await box.read_file("/tmp/hello.txt")) == b"hi\n"
        finally:
            await endpoint.aclose()
            if network is not None:
                await network.remove()

    asyncio.run(main())
    assert [call.error for call in calls] == [None] * len(calls) and len(calls) >= 2
    assert {call.stream for call in calls} == {agent == "qwen-code"}
