"""``EndpointNetwork``: how an agent program's container reaches the run's model endpoint,
and, when its network is off, nothing else.

An agent that runs inside the container (mini-swe-agent, Qwen Code) calls the run's
endpoint (:mod:`gem_eval.endpoint`) over HTTP. A container without network has no route
anywhere (``network_mode=none``), so an agent program's container joins instead the
run's *endpoint network*, a Docker bridge network that is

* ``internal``: no route out through the host's NAT, and Docker's DNS answers no outside
  names;
* without traffic between its containers (``enable_icc=false``): episodes cannot reach
  one another over it;
* one per run, made with the run's first such container, labelled like the run's
  containers (``gem-eval sandbox cleanup`` removes those of a killed run), its bridge
  named ``gem-ep-<8 hex>``.

The host holds the network's gateway address; the endpoint listens there too
(:meth:`gem_eval.endpoint.ModelEndpoint.listen`), and ``http://GATEWAY:PORT/v1`` is the
URL the agent is given. A container that has the network (a task allowed it) reaches the
same address through its own network's route.

The gateway is this machine, so a plain internal network lets the container reach every
host service that listens on all addresses (``0.0.0.0``) or on any of the host's
interface addresses; services on ``127.0.0.1`` only are out of its reach (measured).
Hence a filter, where gem-eval runs as root and ``iptables`` is installed: of what
arrives from the bridge, one rule rejects everything, and one above it accepts TCP to the
gateway at the endpoint's port (:meth:`EndpointNetwork.admit`). The rules carry the
comment ``gem-eval-endpoint:<bridge>``, go with the network, and those of a bridge that
no longer exists (a killed run's) are swept when the next network is made. Without root
or iptables the rest of the host stays reachable from the network: the log says so once
and the manifest records ``firewall: none``.
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gem_eval.errors import SandboxError
from gem_eval.sandbox import cleanup, docker_client

BRIDGE_PREFIX = "gem-ep-"
COMMENT_PREFIX = "gem-eval-endpoint:"
LABEL = "gem-eval.endpoint-network"
"""Label of an endpoint network (besides the run's labels)."""

log = logging.getLogger("gem_eval.sandbox")
_lock = threading.Lock()
_networks: dict[str, EndpointNetwork] = {}  # run id ("" for none) -> its network
_warned = False


@dataclass
class EndpointNetwork:
    """A run's endpoint network (see the module docstring).

    Attributes:
        name: The Docker network's name.
        bridge: Its bridge interface on the host.
        gateway: The host's address on it: where the endpoint listens for its containers.
        firewall: Whether the host filters what arrives from the bridge (iptables).
    """

    name: str
    bridge: str
    gateway: str
    firewall: bool
    admitted: set[int] = field(default_factory=set)
    _rules: list[list[str]] = field(default_factory=list, repr=False)

    async def admit(self, port: int) -> None:
        """Let the network's containers reach the gateway at TCP ``port`` (the endpoint);
        nothing to do without the filter, or when admitted already."""
        if self.firewall:
            await docker_client.in_thread(lambda: self._admit(port))

    def _admit(self, port: int) -> None:
        with _lock:
            if port in self.admitted:
                return
            accept = _rule(self.bridge, "-d", self.gateway, "-p", "tcp", "--dport", str(port))
            if not _insert([*accept, "-j", "ACCEPT"]):
                raise SandboxError(f"the endpoint network's filter refused port {port}")
            self._rules.append([*accept, "-j", "ACCEPT"])
            self.admitted.add(port)

    async def remove(self) -> None:
        """Remove the network (once no container is on it) and then its rules; a network
        still in use is left, with its rules, to the run's cleanup."""
        await docker_client.in_thread(self._remove)

    def _remove(self) -> None:
        api = docker_client.client().api
        for attempt in range(5):  # an endpoint may linger a moment after its container
            try:
                api.remove_network(self.name)
                break
            except Exception as exc:
                if "not found" in str(exc).lower():
                    break
                if attempt == 4:
                    return
                time.sleep(0.2 * (attempt + 1))
        cleanup.untrack_network(self.name)
        for rule in self._rules:
            _iptables("-D", *rule)
        self._rules.clear()
        with _lock:
            for key, network in list(_networks.items()):
                if network is self:
                    del _networks[key]

    def describe(self) -> dict[str, str]:
        """For the run manifest."""
        return {
            "network": "the run's endpoint network (internal, no traffic between containers)",
            "firewall": "iptables: the endpoint's port only" if self.firewall else "none",
        }


async def for_run(run_id: str | None) -> EndpointNetwork:
    """The endpoint network of run ``run_id`` (made on first use).

    Raises:
        SandboxError: Docker could not make it (its address pools are used up, say).
    """
    return await docker_client.in_thread(lambda: _ensure(run_id))


def _ensure(run_id: str | None) -> EndpointNetwork:
    api = docker_client.client().api
    with _lock:
        network = _networks.get(run_id or "")
        if network is not None and _exists(api, network.name):
            return network
        try:
            network = _create(api, run_id)
        except Exception as exc:
            if isinstance(exc, SandboxError):
                raise
            error = docker_client.translate(exc, "creating the endpoint network")
            if "address pool" in str(error):
                error = SandboxError(
                    f"{error} (`gem-eval sandbox cleanup` removes networks of killed runs)"
                )
            raise error from None
        _networks[run_id or ""] = network
        return network


def _exists(api: Any, name: str) -> bool:
    try:
        api.inspect_network(name)
    except Exception:
        return False
    return True


def _create(api: Any, run_id: str | None) -> EndpointNetwork:
    suffix = uuid.uuid4().hex[:8]
    name, bridge = f"gem-eval-endpoint-{suffix}", f"{BRIDGE_PREFIX}{suffix}"
    api.create_network(
        name,
        driver="bridge",
        internal=True,
        options={
            "com.docker.network.bridge.name": bridge,
            "com.docker.network.bridge.enable_icc": "false",
        },
        labels={**cleanup.labels(run_id), LABEL: "1"},
        check_duplicate=True,
    )
    cleanup.track_network(name)
    configs = (api.inspect_network(name).get("IPAM") or {}).get("Config") or []
    gateway = next((c["Gateway"] for c in configs if c.get("Gateway")), None)
    if gateway is None:
        raise SandboxError(f"the endpoint network {name} has no gateway address")
    network = EndpointNetwork(name, bridge, gateway, firewall=False)
    if _can_filter():
        _sweep()
        reject = [*_rule(bridge), "-j", "REJECT"]
        network.firewall = _insert(reject)
        if network.firewall:
            network._rules.append(reject)
    if not network.firewall:
        _warn()
    return network


def _rule(bridge: str, *match: str) -> list[str]:
    return ["INPUT", "-i", bridge, *match, "-m", "comment", "--comment", COMMENT_PREFIX + bridge]


def _can_filter() -> bool:
    return os.geteuid() == 0 and shutil.which("iptables") is not None


def _iptables(*args: str) -> bool:
    try:
        done = subprocess.run(["iptables", "-w", *args], capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _insert(rule: list[str]) -> bool:
    """Insert ``rule`` at the top of its chain."""
    return _iptables("-I", *rule)


def _sweep() -> None:
    """Delete the rules of endpoint bridges that no longer exist (a killed run's)."""
    try:
        listed = subprocess.run(
            ["iptables", "-w", "-S", "INPUT"], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return
    for line in listed.splitlines():
        words = shlex.split(line)
        comments = [w for w in words if w.startswith(COMMENT_PREFIX)]
        if words[:2] != ["-A", "INPUT"] or not comments:
            continue
        bridge = comments[0].removeprefix(COMMENT_PREFIX)
        if not Path("/sys/class/net", bridge).exists():
            _iptables("-D", *words[1:])


def _warn() -> None:
    global _warned
    if not _warned:
        _warned = True
        log.warning(
            "agent containers reach the run's endpoint on their network's gateway, and "
            "with it any service of this machine listening on all addresses: gem-eval "
            "filters the rest only as root with iptables installed"
        )
