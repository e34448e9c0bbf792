"""The run's endpoint network: one per run, its containers kept apart, the host filtered
to the endpoint's port (as root with iptables), and its rules gone with it, those of a
killed run's bridge swept when the next network is made."""

from __future__ import annotations

import asyncio
import socket
import subprocess

import pytest

from gem_eval.records import SidecarSpec
from gem_eval.sandbox import endpoint_network
from gem_eval.sandbox.docker import DockerSandbox
from gem_eval.sandbox.images import BASE_IMAGE

SERVE = "import socket; s = socket.create_server(('0.0.0.0', 8000)); s.accept()"
CONNECT = "import socket, sys; socket.create_connection((sys.argv[1], 8000), timeout=3)"


def rules() -> list[str]:
    listed = subprocess.run(["iptables", "-w", "-S", "INPUT"], capture_output=True, text=True)
    return [line for line in listed.stdout.splitlines() if endpoint_network.COMMENT_PREFIX in line]


@pytest.mark.docker
def test_one_network_per_run_its_containers_apart_its_rules_with_it() -> None:
    filtered = endpoint_network._can_filter()
    stale = ["INPUT", "-i", "gem-ep-00000000", "-m", "comment"]
    stale += ["--comment", f"{endpoint_network.COMMENT_PREFIX}gem-ep-00000000", "-j", "REJECT"]
    if filtered:  # a killed run's rule, its bridge long gone
        assert endpoint_network._insert(stale)

    async def main() -> None:
        network = await endpoint_network.for_run("endpoint-net-test")
        assert await endpoint_network.for_run("endpoint-net-test") is network
        other = await endpoint_network.for_run("another-run")
        assert other is not network and other.gateway != network.gateway
        await other.remove()
        boxes = [DockerSandbox(reach_endpoint=True, run_id="endpoint-net-test") for _ in "ab"]
        try:
            for box in boxes:
                await box.start()
            server = await boxes[1].spawn(["python3", "-c", SERVE])
            address = (await boxes[1].exec("hostname -i")).stdout.split()[0]
            await asyncio.sleep(0.5)
            reached = await boxes[0].exec(["python3", "-c", CONNECT, address], timeout=20)
            assert not reached.ok and "timed out" in reached.stderr  # no traffic between them
            await server.kill()
            await network.admit(4242)
            if filtered:
                bridge = network.bridge
                assert not any("gem-ep-00000000" in rule for rule in rules())  # swept
                mine = [rule for rule in rules() if bridge in rule]
                assert len(mine) == 2 and "--dport 4242" in mine[0] and "REJECT" in mine[1]
        finally:
            for box in boxes:
                await box.close()
        await network.remove()
        assert not [rule for rule in rules() if network.bridge in rule]
        assert "endpoint-net-test" not in endpoint_network._networks

    asyncio.run(main())


@pytest.mark.docker
def test_beside_sidecars_the_container_reaches_them_and_the_endpoint() -> None:
    """Without the network, a container with sidecars is on their private network and on
    the endpoint network: it reaches the sidecars by name and the endpoint's port on the
    gateway, and not the outside."""
    db = SidecarSpec(name="db", image=BASE_IMAGE, command=["python3", "-c", SERVE])
    box = DockerSandbox(reach_endpoint=True, sidecars=[db], run_id="endpoint-net-sidecars")

    async def main() -> None:
        try:
            await box.start()
            assert box.endpoint_network is not None
            gateway = box.endpoint_network.gateway
            with socket.create_server((gateway, 0)) as endpoint:
                await box.endpoint_network.admit(endpoint.getsockname()[1])
                port = str(endpoint.getsockname()[1])
                for host, port_ in [("db", "8000"), (gateway, port)]:
                    connect = ["python3", "-c", CONNECT.replace("8000", port_), host]
                    reached = await box.exec(connect, timeout=20)
                    assert reached.ok, (host, reached.stderr)
            outside = await box.exec(["getent", "hosts", "example.org"], timeout=20)
            assert outside.exit_code == 2  # not found: no outside name is resolved
        finally:
            await box.close()
            if box.endpoint_network is not None:
                await box.endpoint_network.remove()

    asyncio.run(main())
