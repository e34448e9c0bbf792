"""The Ray executor against the local one on a latency-bound suite.

Workload: N episodes (default 256) of 5 model calls each (4 ``search`` tool calls, then
the answer: :mod:`harness_overhead`'s suite and checks) against the fake
OpenAI-compatible server at 0.5 s a call, in its own process; ``--concurrency 64
--max-connections 64`` (on Ray the 64 connections are split between the nodes).

Three sides, each a whole ``gem-eval run --model-backend openai --quiet`` subprocess:

* ``local``: the default executor.
* ``ray1``: ``--executor ray --ray-address ADDR`` on a one-node cluster (``ray start
  --head --num-cpus 1 --include-dashboard=false``) started by this script.
* ``ray2``: the same after a second node joined (``ray start --address ADDR --num-cpus
  1``) on this machine.

``local`` and ``ray1`` alternate ``--repeats`` times (a shared machine's load then hits
both alike), then ``ray2`` runs as often; each side's run with the best window counts.

Printed per side: the whole command's wall time, the playing window (first episode's
``started_at`` to the last one's ``finished_at``), the driver's CPU ms per episode
(``os.wait4`` of the CLI process: on Ray the episodes' work is on the nodes), and for
Ray the CPU of every process of the cluster the script started (daemons and the node
actors, sampled every 0.25 s: a lower bound) per episode, and the driver's plus the
cluster's CPU over local's (``ratio_total_cpu_vs_local``). Ratios: each Ray side's
window and wall over local's (target for ``ray1``: <= 1.10 on the window). Both nodes
share this machine's cores, so ``ray2`` shows the executor's cost, not a speed-up: a
latency-bound run scales with nodes only when the cap on calls in flight grows with
them.

Before printing any figure, every side's records are checked (N records, each
``completed`` with score 1, 5 turns, 4 ``search`` results as expected), and the server's
count of answered calls grew by N * 5 per side; on Ray, every node played episodes
(the manifest's ``resources.ray.nodes``). The cluster is killed at the end,
whatever happens.

Run: ``.venv/bin/python bench/ray_scaling.py [--episodes 256] [--latency 0.5] [--repeats 2]``
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
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
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

    def __init__(self) -> None:
        self.groups: list[int] = []
        self._ticks: dict[int, int] = {}
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.address = f"127.0.0.1:{port}"
        try:
            self._start(["--head", f"--port={port}", "--include-dashboard=false"])
        except BaseException:
            self.close()
            raise

    def add_node(self, env: dict[str, str] | None = None) -> None:
        """A second node on this machine (``env`` on top of this process's: a
        ``DOCKER_HOST`` gives it a Docker engine of its own)."""
        self._start(["--address", self.address], env or {})

    def _start(self, args: list[str], extra_env: dict[str, str] | None = None) -> None:
        temp = tempfile.mkdtemp(prefix="rb", dir="/tmp")  # short: Ray's sockets live there
        # RAY_AUTH_MODE: see main()
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", **(extra_env or {})}
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

    def sample(self) -> None:
        """Note each cluster process's CPU so far (user + system, with reaped children)."""
        for pid in self.processes():
            with contextlib.suppress(OSError, IndexError, ValueError):
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                ticks = sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
                self._ticks[pid] = max(self._ticks.get(pid, 0), ticks)

    def cpu_s(self) -> float:
        """CPU seconds of every cluster process seen by :meth:`sample` (a worker killed
        at the run's end keeps what was sampled last: a lower bound)."""
        return sum(self._ticks.values()) / os.sysconf("SC_CLK_TCK")

    @contextlib.contextmanager
    def sampling(self, every_s: float = 0.25) -> Iterator[None]:
        """Sample the cluster's CPU in a thread while the block runs."""
        stop = threading.Event()

        def loop() -> None:
            while not stop.wait(every_s):
                self.sample()

        thread = threading.Thread(target=loop, daemon=True)
        self.sample()
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            self.sample()

    def close(self) -> None:
        victims = self.processes()
        for group in self.groups:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
        for pid in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@dataclass(frozen=True)
class Side:
    """One measured run: the command, its playing window, the cluster's CPU."""

    command: Command
    window_s: float
    cluster_cpu_s: float | None


def measure(
    server: FakeServer, episodes: int, expected: str, cluster: LocalCluster | None, nodes: int
) -> Side:
    """One run, locally or on ``cluster`` (whose CPU is sampled meanwhile)."""
    if cluster is None:
        return Side(*play(server, episodes, expected, None, 0), None)
    cluster.sample()
    before = cluster.cpu_s()
    with cluster.sampling():
        command, window = play(server, episodes, expected, cluster.address, nodes)
    return Side(command, window, cluster.cpu_s() - before)


def play(
    server: FakeServer, episodes: int, expected: str, address: str | None, nodes: int
) -> tuple[Command, float]:
    """One whole ``gem-eval run``; its command figures and playing window, checked
    (on Ray: every one of ``nodes`` nodes played some episodes)."""
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
        manifest = json.loads(next(results.glob("*/manifest.json")).read_text())
    check_records(records, episodes, expected)
    if address is not None:
        played = manifest["resources"]["ray"]["nodes"]
        if len(played) != nodes or not all(played.values()):
            raise BenchError(f"episodes per node: {played}, expected {nodes} nodes playing")
    calls = server.answered() - before
    if calls != episodes * CALLS_PER_EPISODE:
        raise BenchError(f"the server answered {calls} calls, not {episodes * CALLS_PER_EPISODE}")
    window = max(r.finished_at for r in records) - min(r.started_at for r in records)
    return command, window


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--episodes", type=int, default=256)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    n = args.episodes
    # Every node and driver alike (inherited): `ray start --head` turns token auth on by
    # itself once ~/.ray/auth_token exists, yet a joining node connects without it.
    os.environ["RAY_AUTH_MODE"] = "disabled"
    expected = expected_tool_output()
    server = FakeServer(args.latency)
    runs: dict[str, list[Side]] = {"local": [], "ray1": [], "ray2": []}
    try:
        cluster = LocalCluster()
        try:
            for _ in range(args.repeats):  # alternating: a shared machine's load hits both
                runs["local"].append(measure(server, n, expected, None, 0))
                runs["ray1"].append(measure(server, n, expected, cluster, 1))
            cluster.add_node()
            for _ in range(args.repeats):
                runs["ray2"].append(measure(server, n, expected, cluster, 2))
        finally:
            cluster.close()
    finally:
        server.close()
    best = {side: min(sides, key=lambda s: s.window_s) for side, sides in runs.items()}
    ideal = n * CALLS_PER_EPISODE * args.latency / IN_FLIGHT
    print(
        f"episodes={n} calls_per_episode={CALLS_PER_EPISODE} latency_s={args.latency} "
        f"in_flight={IN_FLIGHT} ideal_window_s={ideal:.1f} repeats={args.repeats} "
        "(best window of each side; all checks passed)"
    )
    local = best["local"]
    for side, run in best.items():
        line = (
            f"{side}: wall_s={run.command.wall_s:.1f} window_s={run.window_s:.1f} "
            f"driver_cpu_ms_per_episode={run.command.cpu_s * 1000 / n:.1f}"
        )
        if run.cluster_cpu_s is not None:
            total = (run.command.cpu_s + run.cluster_cpu_s) / local.command.cpu_s
            line += (
                f" cluster_cpu_ms_per_episode={run.cluster_cpu_s * 1000 / n:.1f}"
                f" ratio_window_vs_local={run.window_s / local.window_s:.3f}"
                f" ratio_wall_vs_local={run.command.wall_s / local.command.wall_s:.3f}"
                f" ratio_total_cpu_vs_local={total:.2f}"
            )
        print(line)
    windows = {side: [round(r.window_s, 1) for r in sides] for side, sides in runs.items()}
    print(f"all windows_s: {windows}")


if __name__ == "__main__":
    main()
