"""A container paused from outside before the agent's first command ran: the episode is
``infra_error`` (not the agent's doing: replayed by --resume), and the sandbox says it is
paused, not "stopped (exit code 0)"."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from gem_eval import make
from gem_eval.agent import run_episode
from gem_eval.models.base import GenerateConfig, Message, Model, ModelOutput, ToolCall, ToolSchema
from gem_eval.sandbox import docker_client
from gem_eval.sandbox.docker import DockerSandbox
from gem_eval.tools.bash import BashTool


class PausesFirst(Model):
    """Asks for a command, pausing the container just before (as an operator's or the
    engine's stall would, under load)."""

    name = "pauser"

    def __init__(self, box: DockerSandbox) -> None:
        self.box = box

    async def generate(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        config: GenerateConfig | None = None,
    ) -> ModelOutput:
        container: Any = self.box.container
        await asyncio.to_thread(docker_client.client().api.pause, container.id)
        call = ToolCall(id="c1", name="bash", arguments='{"command": "echo hi"}')
        return ModelOutput(tool_calls=[call])


@pytest.mark.docker
def test_a_container_paused_before_the_first_command_is_infra_error() -> None:
    async def main() -> Any:
        box = DockerSandbox(run_id=f"test-{uuid.uuid4().hex[:8]}")
        await box.start()
        try:
            return await run_episode(
                make("game:GuessTheNumber-v0-easy"), PausesFirst(box), [BashTool()], seed=0,
                sandbox=box,
            )  # fmt: skip
        finally:
            container: Any = box.container
            await asyncio.to_thread(docker_client.client().api.unpause, container.id)
            await box.close()

    traj = asyncio.run(main())
    assert traj.outcome == "infra_error", traj.error
    assert "paused" in (traj.error or "") and "exit code" not in (traj.error or "")
