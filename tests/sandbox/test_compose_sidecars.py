"""Sidecars in real containers: reached by name on a private network per episode, waited
for as ``depends_on`` says, no route out without the network (from any service), limits
no looser than the sandbox's, and nothing left behind: after the episode, a failed start,
Ctrl-C, the run's cleanup, and a run killed with SIGKILL then ``gem-eval sandbox cleanup``."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gem_eval.errors import SandboxError
from gem_eval.records import HealthSpec, SidecarSpec
from gem_eval.sandbox import cleanup, docker_client
from gem_eval.sandbox.docker import DockerSandbox
from gem_eval.sandbox.docker_sidecars import SIDECAR_LABEL
from gem_eval.sandbox.images import BASE_IMAGE

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
# Docker's health check: the server answers.
ANSWERS = HealthSpec(
    test=[
        "CMD",
        "python3",
        "-c",
        "import urllib.request as u; u.urlopen('http://localhost:8080/')",
    ],
    interval_s=0.3,
    timeout_s=5,
    retries=60,
)


def db(**changes: Any) -> SidecarSpec:
    """A "database": an HTTP server that starts answering only after a while, so a
    container that did not wait for it to be healthy finds nothing."""
    spec = SidecarSpec(
        name="db",
        image=BASE_IMAGE,
        command=["sh", "-c", "sleep 5; cd /srv && python3 -m http.server 8080"],
        files={},
        healthcheck=ANSWERS,
    )
    return spec.model_copy(update=changes)


@pytest.fixture
def run_id() -> Iterator[str]:
    rid = f"test-sidecars-{uuid.uuid4().hex[:8]}"
    yield rid
    cleanup.remove_leftovers(rid, include_live=True)
    cleanup.remove_leftover_networks(rid, include_live=True)


def left(run_id: str) -> tuple[list[Any], list[Any]]:
    """The run's containers and networks, whoever owns them."""
    return (
        cleanup.find(run_id, include_live=True),
        cleanup.find_networks(run_id, include_live=True),
    )


def fetch(url: str) -> str:
    return f"import urllib.request as u; print(u.urlopen('{url}', timeout=5).read().decode())"


def test_a_sidecar_is_reached_by_name_once_healthy_and_goes_with_the_sandbox(
    run_id: str, tmp_path: Path
) -> None:
    (tmp_path / "rows.txt").write_text("42 rows\n")
    # `late` depends on the sandbox's container: it starts after it and reaches it by name.
    late = SidecarSpec(
        name="late",
        image=BASE_IMAGE,
        command=["sleep", "300"],
        depends_on={"client": "service_started"},
    )
    box = DockerSandbox(
        run_id=run_id,
        sidecars=[db(files={"/srv/rows.txt": str(tmp_path / "rows.txt")}), late],
        hostname="client",
        depends_on={"db": "service_healthy"},
        memory="256m",
    )

    async def scenario() -> tuple[Any, ...]:
        async with box:
            # No retry: the sandbox started only once db answered.
            got = await box.exec(["python3", "-c", fetch("http://db:8080/rows.txt")])
            containers, networks = left(run_id)
            late_id = box.sidecars.containers["late"] if box.sidecars else ""
            seen = docker_client.client().containers.get(late_id).exec_run("getent hosts client")
            return got, containers, networks, seen, box.describe()

    got, containers, networks, seen, described = asyncio.run(scenario())
    assert got.ok and got.stdout.strip() == "42 rows", got
    assert len(containers) == 3 and len(networks) == 1
    assert seen.exit_code == 0 and seen.output.split()[1] == b"client"
    roles = sorted(c.labels.get(SIDECAR_LABEL, "-") for c in containers)
    assert roles == ["-", "db", "late"]
    assert all(c.labels[cleanup.RUN] == run_id for c in containers)
    assert networks[0].attrs["Labels"][cleanup.RUN] == run_id
    assert described["sidecars"] == f"db: {BASE_IMAGE}; late: {BASE_IMAGE}"
    assert "internal" in described["network"]
    assert left(run_id) == ([], [])


class HostPort:
    """A TCP port listening on every address of this machine, and who connected."""

    def __init__(self) -> None:
        self.server = socket.create_server(("0.0.0.0", 0))
        self.port = self.server.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()


def host_addresses() -> list[str]:
    """This machine's IPv4 addresses a container could aim at (its own and Docker's
    default bridge gateway)."""
    found = subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split()
    return [a for a in found if ":" not in a]


PROBE = """
import socket, sys
for host in sys.argv[2:]:
    s = socket.socket(); s.settimeout(2)
    try:
        s.connect((host, int(sys.argv[1]))); print(host, "reached")
    except OSError as exc:
        print(host, "refused" if isinstance(exc, ConnectionRefusedError) else "no route")
try:
    socket.getaddrinfo("deb.debian.org", 80); print("dns", "reached")
except OSError:
    print("dns", "no route")
"""


def probe(box: DockerSandbox, port: int, targets: list[str]) -> tuple[str, str]:
    """What the sandbox's container and its sidecar reach of ``targets``."""

    async def scenario() -> tuple[str, str]:
        async with box:
            argv = ["python3", "-c", PROBE, str(port), *targets]
            main = await box.exec(argv, timeout=60)
            assert box.sidecars is not None
            sidecar = docker_client.client().containers.get(box.sidecars.containers["db"])
            return main.stdout, sidecar.exec_run(argv).output.decode()

    return asyncio.run(scenario())


def test_without_the_network_no_service_has_a_route_out(run_id: str) -> None:
    listener = HostPort()
    targets = host_addresses()
    assert targets
    spec = db(command=["python3", "-m", "http.server", "8080"], memory="2g", cpus=4, pids=10_000)
    closed = DockerSandbox(run_id=run_id, sidecars=[spec], memory="256m", pids=128)
    main, sidecar = probe(closed, listener.port, targets)
    for seen in (main, sidecar):
        assert "reached" not in seen and seen.count("no route") == len(targets) + 1, seen
    assert listener.accepted == 0
    # The same probe, where the task may use the network: the host port answers.
    opened = DockerSandbox(run_id=run_id, sidecars=[spec], network=True)
    main, sidecar = probe(opened, listener.port, targets)
    assert f"{targets[0]} reached" in main and f"{targets[0]} reached" in sidecar
    assert listener.accepted >= 2


def test_a_sidecar_gets_no_more_than_the_sandbox(run_id: str) -> None:
    spec = db(command=["sleep", "300"], healthcheck=None, memory="2g", cpus=4, pids=10_000)
    box = DockerSandbox(run_id=run_id, sidecars=[spec], memory="256m", cpus=0.5, pids=128)

    async def scenario() -> dict[str, Any]:
        async with box:
            assert box.sidecars is not None
            return dict(docker_client.client().api.inspect_container(box.sidecars.containers["db"]))

    host = asyncio.run(scenario())["HostConfig"]
    assert host["Memory"] == 256 * 2**20 and host["NanoCpus"] == 5 * 10**8
    assert host["PidsLimit"] == 128 and host["CapDrop"] == ["NET_RAW"]
    assert host["SecurityOpt"] == ["no-new-privileges"] and host["Init"] is True


def test_an_unhealthy_sidecar_fails_the_start_with_its_words_and_leaves_nothing(
    run_id: str,
) -> None:
    sick = HealthSpec(test=["CMD-SHELL", "echo disk on fire; exit 1"], interval_s=0.2, retries=2)
    box = DockerSandbox(
        run_id=run_id,
        sidecars=[db(command=["sleep", "300"], healthcheck=sick)],
        depends_on={"db": "service_healthy"},
    )

    async def scenario() -> None:
        async with box:
            pass

    with pytest.raises(SandboxError, match="sidecar 'db' is unhealthy: disk on fire"):
        asyncio.run(scenario())
    assert left(run_id) == ([], [])


def test_ctrl_c_while_waiting_for_a_sidecar_leaves_nothing(run_id: str) -> None:
    slow = db(command=["sleep", "300"])  # never answers: never healthy
    box = DockerSandbox(run_id=run_id, sidecars=[slow], depends_on={"db": "service_healthy"})

    async def scenario() -> int:
        start = asyncio.ensure_future(box.start())
        while not cleanup.find(run_id, include_live=True):
            await asyncio.sleep(0.1)
        start.cancel()  # what Ctrl-C does to a starting sandbox's task
        with pytest.raises(asyncio.CancelledError):
            await start
        made = len(cleanup.find(run_id, include_live=True))
        await box.close()  # the pool closes a sandbox whose start failed
        return made

    assert asyncio.run(scenario()) == 1
    assert left(run_id) == ([], [])


def test_the_runs_cleanup_takes_sidecars_and_network(run_id: str) -> None:
    box = DockerSandbox(run_id=run_id, sidecars=[db(healthcheck=None)])

    async def scenario() -> list[str]:
        await box.start()  # never closed: as if its removal had failed
        return await cleanup.remove_run(run_id)

    removed = asyncio.run(scenario())
    assert len(removed) == 3  # two containers and the network
    assert left(run_id) == ([], [])


# A process that starts a sandbox with a sidecar and waits to be killed.
_OWNER = """
import asyncio, sys, time
from gem_eval.records import SidecarSpec
from gem_eval.sandbox.docker import DockerSandbox
from gem_eval.sandbox.images import BASE_IMAGE
db = SidecarSpec(name="db", image=BASE_IMAGE, command=["sleep", "300"])
box = DockerSandbox(run_id=sys.argv[1], sidecars=[db])
asyncio.run(box.start())
print(box.id, flush=True)
time.sleep(120)
"""


def test_a_run_killed_with_sigkill_leaves_what_sandbox_cleanup_removes(run_id: str) -> None:
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER, run_id], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    try:
        assert owner.stdout is not None and owner.stdout.readline().strip()
        assert cleanup.find(run_id) == [] and cleanup.find_networks(run_id) == []  # it lives
        owner.kill()
        owner.wait(30)
        containers, networks = left(run_id)
        assert len(containers) == 2 and len(networks) == 1
        done = subprocess.run(
            [sys.executable, "-m", "gem_eval", "sandbox", "cleanup", "--run", run_id],
            cwd=REPO, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "removed 2 container(s) and 1 network(s)" in done.stdout
        assert left(run_id) == ([], [])
    finally:
        if owner.poll() is None:
            owner.kill()
