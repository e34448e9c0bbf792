"""The host process's supervision (:class:`~gem_eval.agents.harbor.bridge.HarborHost`),
with a stand-in host (``fake_harbor_host.py``): episodes multiplexed over one pipe, each
sandbox call answered on its episode's sandbox, a dead host failing its episodes in
flight as the machinery's fault, and the next episode starting a new host."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from gem_eval.agents.base import AgentError
from gem_eval.agents.harbor.bridge import HarborHost
from gem_eval.agents.harbor.sandbox_calls import UNCAPPED, SandboxCalls
from gem_eval.errors import SandboxLostError
from gem_eval.sandbox.base import ExecResult

FAKE_HOST = Path(__file__).with_name("fake_harbor_host.py")


class Box:
    """What SandboxCalls uses of a sandbox: exec and the output cap."""

    def __init__(self, name: str, lost: bool = False) -> None:
        self.name, self.lost = name, lost
        self.output_limit = 64 * 1024
        self.argv: list[Any] = []

    async def exec(self, cmd: Any, **kwargs: Any) -> ExecResult:
        self.argv.append(cmd)
        if self.lost:
            raise SandboxLostError("the container is gone", "gone")
        await asyncio.sleep(0.05)
        return ExecResult(f"{self.name}: {cmd[-1]}\n", "", 0)


def test_episodes_share_one_host_and_get_their_own_sandboxes() -> None:
    async def main() -> list[dict[str, Any]]:
        host = HarborHost(Path(sys.executable), FAKE_HOST)
        try:
            boxes = [Box("a"), Box("b")]
            plays = [
                host.play({"command": f"echo {box.name}"}, SandboxCalls(box))  # type: ignore[arg-type]
                for box in boxes
            ]
            replies = await asyncio.gather(*plays)
            assert [box.argv[0][:3] for box in boxes] == [
                ["sh", "-c", 'exec bash -c "$1" 2>&1']
            ] * 2
            assert host.info["harbor"] == "fake" and host.start_s is not None
            return replies
        finally:
            await host.aclose()

    replies = asyncio.run(main())
    assert [r["stdout"] for r in replies] == ["a: echo a\n", "b: echo b\n"]


def test_a_dead_host_fails_its_episodes_as_infra_and_the_next_starts_anew() -> None:
    async def main() -> None:
        host = HarborHost(Path(sys.executable), FAKE_HOST)
        try:
            with pytest.raises(AgentError, match=r"exit 3.*the fake host dies") as died:
                await host.play({"die": True}, SandboxCalls(Box("a")))  # type: ignore[arg-type]
            assert died.value.infra
            reply = await host.play({"command": "true"}, SandboxCalls(Box("b")))  # type: ignore[arg-type]
            assert reply["stdout"] == "b: true\n"
        finally:
            await host.aclose()

    asyncio.run(main())


def test_a_lost_sandbox_is_kept_and_the_agent_hears_an_error() -> None:
    async def main() -> tuple[dict[str, Any], SandboxCalls]:
        host = HarborHost(Path(sys.executable), FAKE_HOST)
        calls = SandboxCalls(Box("a", lost=True))  # type: ignore[arg-type]
        try:
            return await host.play({"command": "true"}, calls), calls
        finally:
            await host.aclose()

    reply, calls = asyncio.run(main())
    assert "SandboxLostError" in reply["error"]
    assert isinstance(calls.lost, SandboxLostError)


def test_the_output_cap_is_lifted_while_the_agent_plays() -> None:
    box = Box("a")
    calls = SandboxCalls(box)  # type: ignore[arg-type]
    with calls.uncapped():
        assert box.output_limit == UNCAPPED
    assert box.output_limit == 64 * 1024
