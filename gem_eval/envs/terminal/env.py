"""``terminal:Task-v0``: a Terminal-Bench task, played in its own container with bash.

The agent gets the task's instruction and a ``bash`` tool (a persistent shell in the
task's container, in the image's ``WORKDIR``, as root by Terminal-Bench convention, or
as the task's ``[agent] user`` or a suite's ``sandbox: {user: ...}``; the tests run as
root). When it replies without a tool
call, or a limit (its time: the task's agent timeout unless the suite sets one) stops
it, the tests run as :mod:`gem_eval.envs.terminal.grader` describes and their reward is
the episode's. Before the agent's first command, the verifier's toolchain is recorded
(:mod:`gem_eval.envs.terminal.audit`); if it changed by grading time, the episode ends
``tampered`` (scored 0) instead of running the tests. The tests then run traced
(:mod:`gem_eval.envs.terminal.tracer`): if they executed or loaded code the agent wrote
outside its work (:mod:`gem_eval.envs.terminal.loads`), the episode ends ``tampered``
and their reward is dropped.

``path`` is one task directory; in a suite it may also be a directory of tasks, which
the suite loader expands into one task each (``<task id>/<directory name>``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from gem_eval.envs.hosted import EpisodeResources, ExpandedTask, HostedEnv
from gem_eval.envs.terminal import audit, grader, loads, tracer, verifier
from gem_eval.envs.terminal.layout import find_tasks, is_task_dir, load_task
from gem_eval.errors import TamperError
from gem_eval.phases import phase
from gem_eval.records import SandboxSpec, ToolSpec
from gem_eval.sandbox.base import Sandbox


class TerminalEnv(HostedEnv):
    """One terminal task (see the module docstring).

    Args:
        path: The task directory (Terminal-Bench 1 or 2 layout).
        stop_agent_processes: Kill the agent's processes before the tests run (the
            default: nothing it left running can touch the tests or plant a reward).
            Set false for tasks whose tests check a service the agent started.
        command_timeout_s: Seconds one bash command may run.
        pids: Processes the container may hold.
        image_map: Base images substituted when building (``{"python:3*":
            "gem-eval/base:bookworm"}``; a suite's ``sandbox.image_map`` and
            ``--image-map`` add to it).
        protect_verifier: Run the tests in the hardened environment and audit the
            toolchain (the default). False runs them as gem-eval did before, with no
            audit: for tests that show a trap works, and for diagnosing a task.
    """

    def __init__(
        self,
        path: str,
        stop_agent_processes: bool = True,
        command_timeout_s: float = 180.0,
        pids: int = 1024,
        image_map: dict[str, str] | None = None,
        protect_verifier: bool = True,
    ) -> None:
        super().__init__()
        self.task = load_task(Path(path))
        self.stop_agent_processes = stop_agent_processes
        self.command_timeout_s = command_timeout_s
        self.pids = pids
        self.image_map = dict(image_map or {})
        self.protect_verifier = protect_verifier
        self._own_pids: set[int] = set()
        self._probe: asyncio.Future[audit.Baseline] | None = None
        self._baseline: audit.Baseline | None = None

    @classmethod
    def task_dirs(cls, root: Path) -> list[Path] | None:
        return None if is_task_dir(root) else find_tasks(root)

    @classmethod
    def expanded(cls, task_dir: Path, args: dict[str, Any]) -> ExpandedTask:
        task = load_task(task_dir)
        tags = [t for t in (task.difficulty, *task.tags) if t]
        return ExpandedTask(task.name, args, task.category, tags)

    def instruction(self) -> str:
        return self.task.instruction

    def resources(self) -> EpisodeResources:
        task = self.task
        sandbox = SandboxSpec(
            type="docker",
            image=task.image if task.context is None else None,
            build=str(task.context) if task.context is not None else None,
            dockerfile=task.dockerfile,
            image_map=self.image_map,
            network=task.network,
            memory=f"{task.memory_mb}m",
            cpus=task.cpus,
            pids=self.pids,
            user=task.agent_user or "root",
            workdir=task.workdir,
            env=task.env,
            sidecars=task.sidecars,
            hostname=task.service,
            depends_on=task.depends_on,
        )
        bash = ToolSpec(name="bash", settings={"timeout_s": self.command_timeout_s})
        return EpisodeResources(
            sandbox=sandbox,
            tools=[bash],
            max_time_s=task.agent_timeout_s,
            needs_network=task.requires_internet,
        )

    async def asetup(self, sandbox: Sandbox) -> None:
        self._own_pids = await grader.running_pids(sandbox)
        self._baseline = None
        if self.protect_verifier:
            processes = await audit.own_processes(sandbox)  # before the agent's shell opens
            # The rest runs while the tools open; reset waits for it, so it is done
            # before the agent's first command.
            self._probe = asyncio.ensure_future(audit.baseline(sandbox, self.task, processes))
            self._probe.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def aready(self) -> None:
        probe, self._probe = self._probe, None
        if probe is not None:
            with phase("audit"):  # the toolchain's record, begun in asetup
                self._baseline = await probe

    def close(self) -> None:
        if self._probe is not None:
            self._probe.cancel()
            self._probe = None
        super().close()

    async def agrade(self) -> tuple[float, dict[str, Any]]:
        sandbox = await self.sandbox()
        await self.aready()
        if self.stop_agent_processes:
            # First, so no process of the agent's can change the toolchain after the
            # audit; if the agent replaced the shell that kills them, the audit says so.
            with phase("verifier"):
                await grader.stop_agent_processes(sandbox, self._own_pids)
        base = self._baseline
        launch = None
        audited = "off"
        notes: list[str] = []
        if self.protect_verifier:
            if base is None:
                raise RuntimeError("the verifier's toolchain was not recorded (asetup)")
            launch = verifier.plan(self.task, base.toolchain, base.since)
            if self.task.audit:
                with phase("audit"):
                    how = await audit.check(
                        sandbox,
                        base,
                        self.task.audit_exclude,
                        stopped=self.stop_agent_processes,
                        notes=notes,
                    )
                    audited = f"passed ({how})"
                    launch.trace = await self._trace(base, notes)
        with phase("verifier"):
            reward, info = await grader.run_tests(sandbox, self.task, launch)
        report = info.pop("trace", None)
        if base is not None and report is not None:
            with phase("audit"):
                tampered, more = await loads.judge(report, base.toolchain, self.task, sandbox)
                if self.stop_agent_processes and not report.untraced:
                    left = await audit.untraced(sandbox, base)
                    tampered += [
                        f"a process outside the trace ran during the tests: {c}" for c in left
                    ]
            if tampered:
                raise TamperError(tampered)
            notes += more
            untraced = report.untraced
            audited = audited[:-1] + (f"; not traced: {untraced})" if untraced else ", traced)")
        info = {"task": self.task.name, "layout": self.task.layout, "audit": audited, **info}
        if notes:  # kept short: a large install is one line per package or program
            more = [f"... {len(notes) - 50} more"] if len(notes) > 50 else []
            info["audit_notes"] = notes[:50] + more
        return reward, info

    async def _trace(self, base: audit.Baseline, notes: list[str]) -> tracer.Trace | None:
        """How the tests are traced (``None``, and a note: no tracer for this engine)."""
        from gem_eval.sandbox import docker_launch

        engine = await docker_launch.engine()
        binary = await asyncio.to_thread(tracer.binary, engine.os, engine.arch)
        if binary is None:
            notes.append(f"not traced: no tracer for {engine.os}/{engine.arch} on this machine")
            return None
        quiet = [verifier.HOME, grader.VERIFIER_DIR]
        sites = sorted(base.toolchain.sites)
        return tracer.Trace(binary, base.since, self.task.workdir, grader.TESTS_DIR, quiet, sites)

    async def asolve(self) -> str:
        return await grader.run_solution(await self.sandbox(), self.task)
