"""The agent programs a run's tasks name, and the endpoint they call the model through:
what an executor holds for ``--agent`` (see :class:`AgentPrograms`)."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gem_eval.agents.registry import DEFAULT_AGENT, check_agents, make_agent

if TYPE_CHECKING:
    from gem_eval.agent.redact import Redactor
    from gem_eval.agents.base import Agent, AgentResult
    from gem_eval.budget import Budget
    from gem_eval.core import Env
    from gem_eval.endpoint import ModelEndpoint
    from gem_eval.models.base import GenerateConfig, Model
    from gem_eval.records import TaskSpec
    from gem_eval.sandbox.base import Sandbox
    from gem_eval.sandbox.endpoint_network import EndpointNetwork
    from gem_eval.trajectory import Trajectory


def plays_itself(task: TaskSpec) -> bool:
    """Whether ``task`` is played by an agent program rather than gem-eval's own loop."""
    return task.agent != DEFAULT_AGENT


class AgentPrograms:
    """Starts the agents the tasks name (once per run), the run's endpoint with them, and
    plays their episodes (:func:`gem_eval.agents.episode.play_agent_episode`)."""

    def __init__(self) -> None:
        self.agents: dict[str, Agent] = {}
        self.endpoint: ModelEndpoint | None = None
        self._networks: dict[str, EndpointNetwork] = {}  # the endpoint networks used
        self._closed: dict[str, Any] = {}

    def check(self, tasks: list[TaskSpec]) -> None:
        """Refuse tasks their agent cannot play (one line, before the run)."""
        check_agents(tasks)

    async def start(self, tasks: list[TaskSpec]) -> None:
        """Start each agent the tasks name, and the endpoint if there is any."""
        names = sorted({task.agent for task in tasks if plays_itself(task)})
        if not names:
            return
        from gem_eval.endpoint import ModelEndpoint

        self.endpoint = ModelEndpoint()
        await self.endpoint.start()
        for name in names:
            agent = make_agent(name)
            self.agents[name] = agent  # closed by aclose, even if start fails
            await agent.start()

    async def play(
        self,
        env: Env,
        task: TaskSpec,
        model: Model,
        sandbox: Sandbox,
        *,
        seed: int | None,
        config: GenerateConfig,
        timeout_s: float | None,
        budget: Budget | None,
        redactor: Redactor | None,
    ) -> tuple[Trajectory, dict[str, str]]:
        """One episode of ``task`` played by its agent; its record and the agent's files."""
        from gem_eval.agents.episode import play_agent_episode

        assert self.endpoint is not None, "start() first"
        sandbox_base_url = await self._sandbox_base_url(sandbox)
        with tempfile.TemporaryDirectory(prefix="gem-eval-agent-") as logs:
            trajectory, result = await play_agent_episode(
                env,
                self.agents[task.agent],
                model,
                sandbox,
                self.endpoint,
                task=task,
                seed=seed,
                config=config,
                timeout_s=timeout_s,
                logs_dir=Path(logs),
                sandbox_base_url=sandbox_base_url,
                budget=budget,
                redactor=redactor,
            )
        return trajectory, _files(result, redactor)

    async def _sandbox_base_url(self, sandbox: Sandbox) -> str | None:
        """The endpoint as a program inside ``sandbox`` reaches it: on the gateway of the
        run's endpoint network, which the endpoint then listens on and the network's
        filter admits (see :mod:`gem_eval.sandbox.endpoint_network`); ``None`` for a
        sandbox on this machine's own network (as this machine reaches it)."""
        assert self.endpoint is not None
        network: EndpointNetwork | None = getattr(sandbox, "endpoint_network", None)
        if network is None:
            return None
        port = await self.endpoint.listen(network.gateway)
        await network.admit(port)
        self._networks[network.name] = network
        return self.endpoint.url(network.gateway)

    def describe(self) -> dict[str, Any]:
        """What the manifest records of each agent (as they were when closed, after
        :meth:`aclose`: the manifest is written after the run's release)."""
        return {name: agent.describe() for name, agent in self.agents.items()} or self._closed

    async def aclose(self) -> None:
        self._closed = self.describe()
        try:
            for agent in self.agents.values():
                await agent.aclose()
        finally:
            self.agents.clear()
            if self.endpoint is not None:
                await self.endpoint.aclose()
                self.endpoint = None
            networks, self._networks = self._networks, {}
            for network in networks.values():  # their containers are gone by now
                with contextlib.suppress(Exception):
                    await network.remove()


def _files(result: AgentResult | None, redactor: Redactor | None) -> dict[str, str]:
    if result is None:
        return {}
    return {name: redactor(text) if redactor else text for name, text in result.files.items()}
