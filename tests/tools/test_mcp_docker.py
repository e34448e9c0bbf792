"""An MCP server inside the episode's Docker container, driven through the kit."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gem_eval.sandbox.docker import DockerSandbox
from gem_eval.tools.mcp import MCPKit

pytestmark = pytest.mark.docker

MINI = Path(__file__).resolve().parents[1] / "fixtures" / "mini_mcp_server.py"


def test_a_server_in_the_container_is_listed_called_and_stopped() -> None:
    async def play() -> tuple[dict[str, str], str, str, str, dict[str, object]]:
        async with DockerSandbox() as sandbox:
            await sandbox.write_file("/opt/mini.py", MINI.read_text(), owner="root")
            server = {"name": "mini", "command": "python3", "args": ["/opt/mini.py"]}
            kit = MCPKit(servers=[{**server, "in_sandbox": True}])
            tools = {t.name: t for t in await kit.open(sandbox)}
            schemas = {name: t.description for name, t in tools.items()}
            who = (await tools["whoami"].call({}, sandbox)).output
            wrote = await tools["write_note"].call({"name": "n.txt", "text": "hi"}, sandbox)
            note = (await sandbox.read_file("/workspace/n.txt")).decode()
            described = kit.describe()
            await kit.release(list(tools.values()))
            left = await sandbox.exec("ps -eo args | grep -c '[m]ini.py' || true")
            assert left.stdout.strip() == "0", "the server process outlived its episode"
            assert not wrote.is_error
            return schemas, who, note, wrote.output, described

    schemas, who, note, wrote, described = asyncio.run(play())
    assert set(schemas) == {"whoami", "write_note"}
    assert who.startswith("agent@") and who.endswith("in /workspace")  # in the container
    assert note == "hi" and wrote == "wrote 2 characters to n.txt"
    assert "mini" in str(described) and "0.1" in str(described)
