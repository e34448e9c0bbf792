"""``SandboxPolicy``: the ceiling a run sets over sandboxes that tasks bring themselves.

A terminal or MCP task names its own sandbox (image, memory, CPUs, processes, network,
the agent's user). A suite's ``sandbox:`` block does not replace it, as it does for an
ordinary task: the keys it sets (and ``gem-eval run --no-network``) are a policy that may
tighten the task's settings, never loosen them:

==========  =====================================================================
``network`` ``false`` turns the network off, whatever the task allows (``true`` adds
            nothing). A task's ``allow_internet`` is a permission, not a need.
``memory``  the smaller of the task's and the policy's (so are ``cpus`` and ``pids``)
``user``    replaces ``root``; a task whose agent runs as another user keeps it when
            the names agree and is refused when they differ
==========  =====================================================================

Without the network, an agent program's container (``--agent``) keeps one way out: to
the run's model endpoint (see :mod:`gem_eval.sandbox.endpoint_network`).

Only keys a suite sets are a policy: a :class:`~gem_eval.records.SandboxSpec`'s defaults
(no network, ``1g``) are not, so a suite that says nothing leaves a task that asks for
4 GB and the internet as it is. The suite loader builds a task's ``sandbox`` from the
keys written, so ``model_fields_set`` tells them apart; a spec that crosses a process
boundary must travel as ``model_dump(exclude_unset=True)`` to keep that.

A task that cannot work under the policy (it declares that it needs the internet, or
that its agent runs as a different user) is refused before the run plays anything,
with one line naming the task and both settings (:class:`PolicyConflict`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gem_eval.errors import UserError
from gem_eval.records import SandboxSpec

POLICY_KEYS = ("network", "memory", "cpus", "pids", "user")
"""The ``sandbox:`` keys a suite may tighten a hosted task's sandbox with."""


class PolicyConflict(UserError):
    """A task cannot work under the run's sandbox policy; ``str`` is one line."""


@dataclass(frozen=True)
class SandboxPolicy:
    """What a run allows sandboxes at most (``None``: no limit from the run).

    Attributes:
        network: ``False`` turns the network off.
        memory: The most memory (a Docker size, ``512m``).
        cpus: The most CPUs.
        pids: The most processes.
        user: The agent's user in place of ``root``.
        sources: Where each key was set, for messages (``{"network": "--no-network"}``).
    """

    network: bool | None = None
    memory: str | None = None
    cpus: float | None = None
    pids: int | None = None
    user: str | None = None
    sources: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, spec: SandboxSpec | None, *, no_network: bool = False) -> SandboxPolicy:
        """The policy a suite's ``sandbox:`` (the keys it set) and ``--no-network`` make."""
        given = spec.model_fields_set if spec is not None else set()
        values: dict[str, Any] = {k: getattr(spec, k) for k in POLICY_KEYS if k in given}
        sources = {k: f"sandbox.{k}: {_show(v)}" for k, v in values.items()}
        if no_network:
            values["network"], sources["network"] = False, "--no-network"
        return cls(**values, sources=tuple(sources.items()))

    def source(self, key: str) -> str:
        """Where ``key`` was set (``sandbox.memory: 512m``, ``--no-network``)."""
        return dict(self.sources).get(key, key)

    def apply(self, spec: SandboxSpec, *, needs_network: bool = False) -> SandboxSpec:
        """``spec`` tightened by this policy (what was tightened: :func:`tightened`).

        Args:
            spec: The sandbox the task asks for.
            needs_network: The task declares it cannot work without the network.

        Raises:
            PolicyConflict: The task needs what the policy takes away.
        """
        if self.network is False:
            if needs_network:
                raise PolicyConflict(
                    f"needs the internet (requires_internet), which {self.source('network')} "
                    "turns off"
                )
            if spec.type == "local" and spec.unsafe:
                raise PolicyConflict(
                    f"{self.source('network')} cannot be enforced by an unsafe local sandbox "
                    "(no isolation): use docker or local"
                )
        update: dict[str, Any] = {}
        if self.network is False and spec.network:
            update["network"] = False
        if self.memory is not None and memory_bytes(self.memory) < memory_bytes(spec.memory):
            update["memory"] = self.memory
        if self.cpus is not None and self.cpus < spec.cpus:
            update["cpus"] = self.cpus
        if self.pids is not None and self.pids < spec.pids:
            update["pids"] = self.pids
        if self.user not in (None, "root", spec.user):
            if spec.user != "root":
                raise PolicyConflict(
                    f"runs its agent as {spec.user!r}, not as {self.source('user')} "
                    "(a policy user replaces root only)"
                )
            update["user"] = self.user
        return spec.model_copy(update=update)


def tightened(asked: SandboxSpec, given: SandboxSpec) -> list[str]:
    """The policy keys whose value ``given`` changed from ``asked``."""
    return [k for k in POLICY_KEYS if getattr(asked, k) != getattr(given, k)]


def describe_policy(asked: SandboxSpec, given: SandboxSpec) -> dict[str, Any]:
    """The effective policy of a sandbox, for the run manifest: its limits, user and
    network, and which of them the run's policy tightened."""
    out = {k: getattr(given, k) for k in POLICY_KEYS}
    return {**out, "tightened": tightened(asked, given)}


def memory_bytes(size: str) -> int:
    """A Docker memory size (``512m``, ``2g``, ``1048576``) in bytes.

    Raises:
        UserError: Not a size.
    """
    units = {"b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
    text = size.strip().lower()
    if text.endswith("b") and len(text) > 1 and text[-2] in units:  # "512mb"
        text = text[:-1]
    number, unit = (text[:-1], text[-1]) if text[-1:] in units else (text, "b")
    try:
        return int(float(number) * units[unit])
    except ValueError:
        raise UserError(f"{size!r} is not a memory size like 512m or 2g") from None


def _show(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
