"""``mcp:Task-v0``: an MCPMark-style task: MCP tools over a service, the end state verified.

The agent reads the task's ``description.md`` and acts only through the service's MCP
server (native function calling; 100 turns by default, as MCPMark). When it replies
without a tool call, or a limit stops it, ``verify.py`` runs in the container as root,
with the service's connection variables and its own timeout: exit code 0 scores 1.0,
anything else 0.0. The agent never sees ``verify.py`` (it is copied in to grade).

``path`` is one task directory, or (in a suite) a directory of them, which the loader
expands into one task each (``<task id>/<service>/<category>/<task>``, with MCPMark's
level after the service when it is not ``standard``). Tasks of services that need outside
accounts are left out of a directory, with one warning line (logger ``gem_eval``).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from gem_eval.envs.hosted import EpisodeResources, ExpandedTask, HostedEnv
from gem_eval.envs.mcpmark.layout import find_tasks, is_task_dir, load_task, scan
from gem_eval.envs.mcpmark.services import SERVICE_TYPES
from gem_eval.records import SandboxSpec
from gem_eval.sandbox.base import Sandbox

NOTE = (
    "Use the tools to complete the task; do it all at once, without asking questions. "
    "When you are done, reply with a short summary and no tool call."
)
TAIL_CHARS = 3000
GRADER_DIR = "/grader"
log = logging.getLogger("gem_eval.mcpmark")


class McpTaskEnv(HostedEnv):
    """One MCP task (see the module docstring).

    Args:
        path: The task directory.
        verify_timeout_s: Seconds ``verify.py`` may take (MCPMark: 300).
        max_time_s: The agent's time (MCPMark: 600), used when the suite sets none.
        tool_timeout_s: Seconds one MCP tool call may take (MCPMark: 60).
    """

    def __init__(
        self,
        path: str,
        verify_timeout_s: float = 300.0,
        max_time_s: float = 600.0,
        tool_timeout_s: float = 60.0,
    ) -> None:
        super().__init__()
        self.task = load_task(Path(path))
        self.service = SERVICE_TYPES[self.task.service]()
        self.verify_timeout_s = verify_timeout_s
        self.max_time_s = max_time_s
        self.tool_timeout_s = tool_timeout_s
        self._setup: asyncio.Future[None] | None = None

    @classmethod
    def task_dirs(cls, root: Path) -> list[Path] | None:
        if is_task_dir(root):
            return None
        found = scan(root)
        tasks = find_tasks(root, found)  # none that runs here: an error that names the rest
        skipped = found.skipped()
        if skipped is not None:
            log.warning("%s: %s", root, skipped)
        return tasks

    @classmethod
    def expanded(cls, task_dir: Path, args: dict[str, Any]) -> ExpandedTask:
        task = load_task(task_dir)
        tags = [t for t in (task.service, task.level, task.difficulty, *task.tags) if t]
        category = f"{task.service}/{task.category}"
        return ExpandedTask(task.display_name, args, category, list(dict.fromkeys(tags)))

    def has_solution(self) -> bool:
        """Whether the task ships a reference solution (MCPMark's published tasks do not)."""
        return self.task.solution is not None

    def instruction(self) -> str:
        return f"{self.task.description}\n\n{NOTE}"

    def resources(self) -> EpisodeResources:
        context = self.service.build_context()
        sandbox = SandboxSpec(type="docker", build=str(context), user=self.service.user)
        tools = self.service.tools()
        for tool in tools:
            tool.settings.setdefault("timeout_s", self.tool_timeout_s)
        service = {self.service.name: self.service.describe()}
        return EpisodeResources(sandbox, tools, max_time_s=self.max_time_s, service=service)

    async def asetup(self, sandbox: Sandbox) -> None:
        setup = self.service.setup(sandbox, self.task.state)
        if not self.service.slow_start:
            await setup
            return
        # PostgreSQL starts (~2 s) while the MCP server starts (~2 s); reset waits.
        self._setup = asyncio.ensure_future(setup)
        self._setup.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def aready(self) -> None:
        setup, self._setup = self._setup, None
        if setup is not None:
            await setup

    def close(self) -> None:
        if self._setup is not None:
            self._setup.cancel()
            self._setup = None
        super().close()

    async def agrade(self) -> tuple[float, dict[str, Any]]:
        sandbox = await self.sandbox()
        # The whole task directory: MCPMark's verify.py may read files beside it
        # (expected data, a pickle). It goes in only now, so the agent never saw it.
        await sandbox.copy_dir(self.task.path, GRADER_DIR)
        # -I: no PYTHON* variable, no user site, not the script's directory on sys.path
        # (what the agent could shape, were it to reach them, is not read).
        result = await sandbox.exec(
            ["python3", "-I", f"{GRADER_DIR}/verify.py"],
            timeout=self.verify_timeout_s,
            user="root",
            cwd=GRADER_DIR,
            env=self.service.env(),
        )
        output = (result.stdout + result.stderr)[-TAIL_CHARS:]
        info: dict[str, Any] = {
            "task": self.task.name,
            "service": self.task.service,
            "level": self.task.level,
            "verify_exit_code": result.exit_code,
            "verify_output": output,
        }
        if result.timed_out:
            info["verifier_error"] = f"verify.py timed out after {self.verify_timeout_s:g} s"
        return (1.0 if result.ok else 0.0), info

    async def asolve(self) -> str:
        solution = self.task.solution
        if solution is None:
            raise FileNotFoundError(f"{self.task.path}: no solution.sh or solution.py")
        sandbox = await self.sandbox()
        target = f"{GRADER_DIR}/{solution.name}"
        await sandbox.write_file(target, solution.read_bytes(), mode=0o755, owner="root")
        runner = "python3" if solution.suffix == ".py" else "bash"
        result = await sandbox.exec(
            [runner, target],
            timeout=self.max_time_s,
            user="root",
            cwd=GRADER_DIR,
            env=self.service.env(),
        )
        status = "timed out" if result.timed_out else f"exit code {result.exit_code}"
        return f"[{solution.name}: {status}]\n{(result.stdout + result.stderr)[-TAIL_CHARS:]}"
