"""Grading a terminal task in its container, after the agent is done.

1. Stop every process the agent left (anything not running when the container
   started), so nothing it started can touch the tests or the reward while they run.
2. The integrity audit (:mod:`~gem_eval.envs.terminal.audit`, called by the env): the
   verifier's toolchain is as the image made it, or the episode is ``tampered``.
3. Remove whatever the agent put at ``/tests`` (a planted ``conftest.py``), the reward
   directory and the verifier's own directory, then copy the tests in: the agent never
   saw them.
4. Run the test script as root with its own timeout, in the environment and shell that
   :mod:`~gem_eval.envs.terminal.verifier` describes, its output to a log file (read
   whole, so a long log cannot push pytest's summary out of a capped stream), under the
   trace (:mod:`~gem_eval.envs.terminal.tracer`) when the launch has one.
5. Read the result: pytest's summary (TB1) or ``/logs/verifier/reward.*`` (TB2).
"""

from __future__ import annotations

import asyncio
import io
import shlex
import tarfile
import time
from pathlib import PurePosixPath
from typing import Any

from gem_eval.bundled import in_bytecode_cache
from gem_eval.envs.terminal import keystrokes, tracer, verifier
from gem_eval.envs.terminal.audit import WORK_PREFIX
from gem_eval.envs.terminal.layout import TerminalTask
from gem_eval.envs.terminal.results import parse_pytest, parse_reward, pytest_reward
from gem_eval.errors import SandboxError
from gem_eval.sandbox.base import Sandbox

TESTS_DIR = "/tests"
VERIFIER_DIR = "/logs/verifier"
TB1_LOG = "/logs/gem-eval-tests.log"
TAIL_CHARS = 3000

_LIST_PIDS = "for d in /proc/[0-9]*; do echo ${d#/proc/}; done"
# Kill everything but PID 1, the kept PIDs and this shell; three rounds catch children
# forked by processes that were being killed.
_STOP = """keep=" 1 $$ $PPID {keep} "
for round in 1 2 3; do
  for d in /proc/[0-9]*; do
    pid=${{d#/proc/}}
    case "$keep" in *" $pid "*) continue;; esac
    kill -9 "$pid" 2>/dev/null
  done
done
true"""


async def running_pids(sandbox: Sandbox) -> set[int]:
    """The PIDs alive in the sandbox now (taken when it starts: its own processes)."""
    listed = await sandbox.run_root(_LIST_PIDS, "listing processes", timeout=30)
    return {int(p) for p in listed.split() if p.isdigit()}


async def stop_agent_processes(sandbox: Sandbox, keep: set[int]) -> None:
    """Kill every process not in ``keep`` (the sandbox's own, from :func:`running_pids`)."""
    script = _STOP.format(keep=" ".join(str(p) for p in sorted(keep)))
    await sandbox.run_root(script, "stopping the agent's processes", timeout=None)


async def run_tests(
    sandbox: Sandbox, task: TerminalTask, launch: verifier.Launch | None
) -> tuple[float, dict[str, Any]]:
    """Copy the tests in, run them, and read the reward (see the module docstring).

    ``launch=None`` runs them as gem-eval did before the verifier was hardened (the
    container's environment, ``sh -c``, pytest unconfined, the last summary line of a
    test read): only to show, in tests, that a trap works against that."""
    assert task.tests is not None
    # Moved aside first (atomic), then removed: a process still writing there (when the
    # agent's processes are kept) cannot make the removal fail.
    fresh = (
        f"for d in {TESTS_DIR} {VERIFIER_DIR}; do mv $d $d.old-$$ 2>/dev/null; done; "
        f"rm -rf {TESTS_DIR}.old-* {VERIFIER_DIR}.old-* {TB1_LOG} {WORK_PREFIX}* 2>/dev/null; "
        f"mkdir -p {VERIFIER_DIR} /logs/agent"
    )
    container = getattr(sandbox, "container", None)
    staged = launch is not None and container is not None
    if staged:
        fresh += f"; rm -rf {verifier.HOME}"  # verifier.prepare's step, the rest staged
    await sandbox.run_root(fresh, "preparing the test run")
    if staged:
        assert launch is not None
        await _stage(container, task, launch)
    else:
        if launch is not None:
            await verifier.prepare(sandbox, launch)
        if task.tests.is_dir():
            await sandbox.copy_dir(task.tests, TESTS_DIR)
        if task.layout == "tb1":
            runner = (task.path / "run-tests.sh").read_bytes()
            await sandbox.write_file(f"{TESTS_DIR}/run-tests.sh", runner, mode=0o755, owner="root")
        if launch is not None and launch.trace is not None:
            await launch.trace.install(sandbox)
    log = TB1_LOG if task.layout == "tb1" else f"{VERIFIER_DIR}/test-stdout.txt"
    script = f"{TESTS_DIR}/{task.test_script}"
    if launch is None:
        argv, env = ["sh", "-c", f"bash {script} > {log} 2>&1"], {**task.verifier_env}
    else:
        argv, env = verifier.command(launch, script, log), launch.env
        if launch.trace is not None:
            argv = launch.trace.command(argv)
    kept = sandbox.output_limit
    if launch is not None and launch.trace is not None:  # the findings, whole
        sandbox.output_limit = max(kept, tracer.OUTPUT_LIMIT)
    try:
        result = await sandbox.exec(
            argv, timeout=task.test_timeout_s, user="root", cwd=task.workdir, env=env
        )
    finally:
        sandbox.output_limit = kept
    output = await _read_text(sandbox, log)
    info: dict[str, Any] = {"test_exit_code": result.exit_code, "test_output": output[-TAIL_CHARS:]}
    if launch is not None and launch.trace is not None:
        report = tracer.parse(result.stdout)
        report.cut = report.cut and not result.timed_out  # a timeout scores 0 anyway
        info["trace"] = report  # for the env to judge (and take out)
    if result.timed_out:
        return 0.0, {
            **info,
            "success": False,
            "verifier_error": f"tests timed out after {task.test_timeout_s:g} s",
        }
    if task.layout == "tb1":
        statuses = parse_pytest(output, worst=launch is not None)
        reward, details = pytest_reward(statuses, task.test_weights)
        return reward, {**info, **details}
    return await _reward_file(sandbox, info)


async def _stage(container: Any, task: TerminalTask, launch: verifier.Launch) -> None:
    """Put in, with one archive through the engine, what the test run needs: the
    verifier's files (:func:`verifier.prepare` writes them one by one), the tests
    (TB1: and ``run-tests.sh``) and the tracer, each where the steps one by one would
    have put it, owned by root. One engine call where there were up to eight: each
    costs ~0.05-0.3 s."""
    from gem_eval.sandbox import docker_client

    data = await asyncio.to_thread(_stage_archive, task, launch)
    if not await docker_client.call("putting the tests in", container.put_archive, "/", data):
        raise SandboxError("putting the tests in: Docker refused the archive")


def _stage_archive(task: TerminalTask, launch: verifier.Launch) -> bytes:
    buffer = io.BytesIO()
    now = int(time.time())

    def add(path: str, data: bytes | None, mode: int) -> None:
        info = tarfile.TarInfo(path.lstrip("/"))
        info.mode, info.mtime = mode, now
        if data is None:
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
        else:
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

    def as_root(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if in_bytecode_cache(PurePosixPath(info.name)):
            return None
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    with tarfile.open(fileobj=buffer, mode="w") as tar:
        made = {"/", "/logs", "/tmp"}  # there already (the fresh step makes /logs)
        for path, data in launch.files.items():
            parents = PurePosixPath(path).parents
            for parent in sorted(str(p) for p in parents if str(p) not in made):
                add(parent, None, 0o755)
                made.add(parent)
            add(path, data, 0o644)
        add(TESTS_DIR, None, 0o755)
        assert task.tests is not None
        if task.tests.is_dir():
            for entry in sorted(task.tests.iterdir()):
                tar.add(entry, arcname=f"{TESTS_DIR[1:]}/{entry.name}", filter=as_root)
        if task.layout == "tb1":
            add(f"{TESTS_DIR}/run-tests.sh", (task.path / "run-tests.sh").read_bytes(), 0o755)
        if launch.trace is not None:
            directory = launch.trace.place()
            add(directory, None, 0o700)
            add(launch.trace.path, launch.trace.binary, 0o755)
    return buffer.getvalue()


async def _reward_file(sandbox: Sandbox, info: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    for name in ("reward.txt", "reward.json"):
        text = await _read_text(sandbox, f"{VERIFIER_DIR}/{name}", missing=None)
        if text is None:
            continue
        try:
            reward, rewards = parse_reward(name, text)
        except ValueError as exc:
            return 0.0, {**info, "success": False, "verifier_error": f"{name}: {exc}"}
        return reward, {**info, "rewards": rewards, "success": reward >= 1.0}
    error = f"the tests wrote no {VERIFIER_DIR}/reward.txt or reward.json"
    return 0.0, {**info, "success": False, "verifier_error": error}


async def run_solution(sandbox: Sandbox, task: TerminalTask) -> str:
    """Run the reference solution as the oracle agent; its output's tail."""
    if task.solution is None:
        raise FileNotFoundError(
            f"{task.path}: no reference solution (solution.sh, solution.yaml or solution/solve.sh)"
        )
    if task.solution.suffix == ".yaml":  # TB1 keystrokes, played into a tmux session
        commands = keystrokes.load_commands(task.solution)
        playing = keystrokes.play(sandbox, commands, user="root", cwd=task.workdir)
        try:
            return (await asyncio.wait_for(playing, task.agent_timeout_s))[-TAIL_CHARS:]
        except asyncio.TimeoutError:
            return f"[solution.yaml: timed out after {task.agent_timeout_s:g} s]"
    if task.layout == "tb1":
        await sandbox.write_file(
            "/oracle/solution.sh", task.solution.read_bytes(), mode=0o755, owner="root"
        )
        script = "/oracle/solution.sh"
    else:
        await sandbox.run_root("rm -rf /solution", "preparing the solution")
        await sandbox.copy_dir(task.solution, "/solution")
        script = "/solution/solve.sh"
    result = await sandbox.exec(
        ["bash", script], timeout=task.agent_timeout_s, user="root", cwd=task.workdir
    )
    status = "timed out" if result.timed_out else f"exit code {result.exit_code}"
    return f"[{shlex.quote(script)}: {status}]\n{(result.stdout + result.stderr)[-TAIL_CHARS:]}"


async def _read_text(sandbox: Sandbox, path: str, missing: str | None = "") -> Any:
    try:
        return (await sandbox.read_file(path)).decode(errors="replace")
    except (FileNotFoundError, IsADirectoryError):
        return missing
