"""The Ray executor against the local one on a latency-bound suite.

Workload: N episodes (default 256) of 5 model calls each (4 ``search`` tool calls, then
the answer: :mod:`harness_overhead`'s suite and checks) against the fake
OpenAI-compatible server at 0.5 s a call, in its own process; ``--concurrency 64
--max-connections 64`` (on Ray the 64 connections are split between the nodes).

Three sides, each a whole ``gem-eval run --model-backend openai --quiet`` subprocess:

* ``local``: the default executor.
* ``ray1``: ``--executor ray --ray-address ADDR`` on a one-node cluster (``ray start
  --head --num-cpus 1 --include-dashboard=false``) started by this script.
* ``ray2``: the same with a second node (``ray start --address ADDR --num-cpus 1``) on
  this machine.

Printed per side: the whole command's wall time, the playing window (first episode's
``started_at`` to the last one's ``finished_at``), the driver's CPU ms per episode
(``os.wait4`` of the CLI process: on Ray the episodes' work is on the nodes), and for
Ray the CPU of every process of the cluster the script started (daemons included), per
episode. Ratios: each Ray side's window and wall over local's (target for ``ray1``:
<= 1.10 on the window). Both nodes share this machine's cores, so ``ray2`` shows the
executor's cost, not a speed-up: a latency-bound run scales with nodes only when the
cap on calls in flight grows with them.

Before printing any figure, every side's records are checked (N records, each
``completed`` with score 1, 5 turns, 4 ``search`` results as expected), and the server's
count of answered calls grew by N * 5 per side. The clusters are killed at the end,
whatever happens.

Run: ``.venv/bin/python bench/ray_scaling.py [--episodes 256] [--latency 0.5]``
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness_overhead import (
    CALLS_PER_EPISODE,
    CORPUS,
    ENV_ARGS,
    ENV_ID,
    ROOT,
    SUITE,
    BenchError,
    Command,
    check_records,
    expected_tool_output,
    read_records,
    run_command,
)

IN_FLIGHT = 64
RAY = Path(sys.executable).with_name("ray")


class FakeServer:
    """The fixture server in its own process (``tool_loop`` over ``search``)."""

    def __init__(self, latency: float) -> None:
        cmd = [sys.executable, "-m", "tests.fixtures.openai_server", "--port", "0"]
        cmd += ["--latency", str(latency), "--scenario", "tool_loop", "--tool-calls", "4"]
        cmd += ["--tool-name", "search", "--answer", "\\boxed{1}", "--tool-arguments"]
        cmd += [json.dumps({"query": "Who kept the Verran Lighthouse on Skerry Point?"})]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().split() if self.proc.stdout else []
        if len(line) != 2 or line[0] != "READY":
            self.proc.kill()
            raise BenchError(f"the fake server did not start: {line}")
        self.base_url = line[1]

    def answered(self) -> int:
        """Successful replies the server delivered so far."""
        root = self.base_url.removesuffix("/v1")
        with urllib.request.urlopen(f"{root}/stats", timeout=10) as reply:
            stats = json.load(reply)
        return int(stats["replies_delivered"])

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


class LocalCluster:
    """Ray nodes started on this machine; :meth:`cpu_s` of all their processes."""

    def __init__(self, nodes: int) -> None:
        self.groups: list[int] = []
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.address = f"127.0.0.1:{port}"
        try:
            self._start(["--head", f"--port={port}", "--include-dashboard=false"])
            for _ in range(nodes - 1):
                self._start(["--address", self.address])
        except BaseException:
            self.close()
            raise

    def _start(self, args: list[str]) -> None:
        temp = tempfile.mkdtemp(prefix="rb", dir="/tmp")  # short: Ray's sockets live there
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
        cmd = [str(RAY), "start", *args, "--num-cpus", "1", f"--temp-dir={temp}"]
        proc = subprocess.Popen(
            [*cmd, "--disable-usage-stats"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.groups.append(proc.pid)
        _, err = proc.communicate(timeout=180)
        if proc.returncode != 0:
            raise BenchError(f"ray start failed: {err.decode()[-1500:]}")

    def processes(self) -> list[int]:
        """Every process the cluster's ``ray start`` commands left, and their children."""
        children: dict[int, list[int]] = {}
        groups: dict[int, int] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError, IndexError, ValueError):
                    fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                    pid = int(entry.name)
                    children.setdefault(int(fields[1]), []).append(pid)
                    groups[pid] = int(fields[2])
        found = [pid for pid, group in groups.items() if group in self.groups]
        todo = list(found)
        while todo:
            for child in children.get(todo.pop(), []):
                if child not in found:
                    found.append(child)
                    todo.append(child)
        return found

    def cpu_s(self) -> float:
        """User + system CPU of the cluster's live processes (and of their reaped children)."""
        ticks = os.sysconf("SC_CLK_TCK")
        total = 0
        for pid in self.processes():
            with contextlib.suppress(OSError, IndexError, ValueError):
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
        return total / ticks

    def close(self) -> None:
        victims = self.processes()
        for group in self.groups:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
        for pid in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def play(
    server: FakeServer, episodes: int, expected: str, address: str | None
) -> tuple[Command, float]:
    """One whole ``gem-eval run``; its command figures and playing window, checked."""
    before = server.answered()
    with tempfile.TemporaryDirectory() as tmp:
        suite = Path(tmp) / "scaling.yaml"
        suite.write_text(
            SUITE.format(
                episodes=episodes,
                corpus=json.dumps(str(CORPUS)),
                env_id=ENV_ID,
                env_args=json.dumps(ENV_ARGS),
            )
        )
        results = Path(tmp) / "results"
        cmd = [str(Path(sys.executable).with_name("gem-eval")), "run", "--suite", str(suite)]
        cmd += ["--model", "openai/fake", "--model-base-url", server.base_url]
        cmd += ["--model-backend", "openai", "--concurrency", str(IN_FLIGHT)]
        cmd += ["--max-connections", str(IN_FLIGHT), "--results-dir", str(results), "--quiet"]
        if address is not None:
            cmd += ["--executor", "ray", "--ray-address", address]
        command = run_command(cmd, cwd=Path(tmp))
        records = read_records(results)
    check_records(records, episodes, expected)
    calls = server.answered() - before
    if calls != episodes * CALLS_PER_EPISODE:
        raise BenchError(f"the server answered {calls} calls, not {episodes * CALLS_PER_EPISODE}")
    window = max(r.finished_at for r in records) - min(r.started_at for r in records)
    return command, window


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--episodes", type=int, default=256)
    parser.add_argument("--latency", type=float, default=0.5)
    args = parser.parse_args()
    n = args.episodes
    expected = expected_tool_output()
    server = FakeServer(args.latency)
    figures: dict[str, tuple[Command, float, float | None]] = {}
    try:
        command, window = play(server, n, expected, None)
        figures["local"] = (command, window, None)
        for nodes in (1, 2):
            cluster = LocalCluster(nodes)
            try:
                cpu_before = cluster.cpu_s()
                command, window = play(server, n, expected, cluster.address)
                figures[f"ray{nodes}"] = (command, window, cluster.cpu_s() - cpu_before)
            finally:
                cluster.close()
    finally:
        server.close()
    ideal = n * CALLS_PER_EPISODE * args.latency / IN_FLIGHT
    print(f"episodes={n} calls_per_episode={CALLS_PER_EPISODE} latency_s={args.latency} ")
    print(f"in_flight={IN_FLIGHT} ideal_window_s={ideal:.1f} (all checks passed)")
    local_cmd, local_window, _ = figures["local"]
    for side, (command, window, cluster_cpu) in figures.items():
        line = (
            f"{side}: wall_s={command.wall_s:.1f} window_s={window:.1f} "
            f"driver_cpu_ms_per_episode={command.cpu_s * 1000 / n:.1f}"
        )
        if cluster_cpu is not None:
            line += (
                f" cluster_cpu_ms_per_episode={cluster_cpu * 1000 / n:.1f}"
                f" ratio_window_vs_local={window / local_window:.3f}"
                f" ratio_wall_vs_local={command.wall_s / local_cmd.wall_s:.3f}"
            )
        print(line)


if __name__ == "__main__":
    main()
