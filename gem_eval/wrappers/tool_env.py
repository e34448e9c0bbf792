"""``ToolEnv``: let the agent call tools before it answers the env (GEM's tool wrapper).

The Gym-style route to tools: the agent writes tool calls in its action text, in the
text protocol of :mod:`gem_eval.agent.tool_calls` (``<python>print(1)</python>``,
``<search>...</search>``, or ``<tool_call>{"name": ..., "arguments": ...}</tool_call>``).
An action holding calls is answered with the tools' results and does not reach the
wrapped env; any other action goes to the env unchanged. (The agent loop offers the
same :class:`~gem_eval.tools.base.Tool` objects through native function calling.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from gem_eval.agent import tool_calls
from gem_eval.core import Env, ResetResult, StepResult, Wrapper
from gem_eval.sandbox.base import Sandbox
from gem_eval.tools.base import Tool


class ToolEnv(Wrapper):
    """Route tool calls in actions to tools; pass other actions to the env.

    A tool step returns the results as the observation (each in a
    ``<tool_response>`` block), reward ``tool_reward`` per successful call,
    ``terminated=truncated=False``, and ``info["tool_calls"]`` naming the tools. Once
    ``max_tool_uses`` calls were made, further calls are refused with a message (reward
    0) so the agent must answer. A failing call is shown to the agent and recorded in
    ``info["tool_errors"]``; it never ends the episode. A sandbox failure
    (:class:`~gem_eval.errors.SandboxError`) is not the agent's and propagates.

    ``step`` runs the async tools on a private event loop (it cannot be called from
    inside a running loop: use ``astep`` there).

    Args:
        env: The env the final answers go to.
        tools: The tools offered.
        sandbox: Where the tools run (started and closed by its owner).
        max_tool_uses: Calls allowed per episode (``None``: no limit).
        tool_reward: Reward per successful call (GEM's optional shaping; default 0).
    """

    def __init__(
        self,
        env: Env,
        tools: Sequence[Tool],
        sandbox: Sandbox | None = None,
        max_tool_uses: int | None = None,
        tool_reward: float = 0.0,
    ) -> None:
        super().__init__(env)
        self.tools = list(tools)
        self.sandbox = sandbox
        self.max_tool_uses = max_tool_uses
        self.tool_reward = tool_reward
        self.tool_uses: dict[str, int] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def total_tool_uses(self) -> int:
        return sum(self.tool_uses.values())

    def turn_limit(self) -> int | None:
        return None  # tool steps do not reach the env, and refused calls still take one

    def on_reset(self, result: ResetResult) -> ResetResult:
        self.tool_uses = {}
        return result

    def step(self, action: str) -> StepResult:
        calls = tool_calls.from_text(action, self.tools)
        if not calls:
            return self.env.step(action)
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(self._tool_step(calls))

    async def astep(self, action: str) -> StepResult:
        calls = tool_calls.from_text(action, self.tools)
        if not calls:
            return await self.env.astep(action)
        return await self._tool_step(calls)

    async def _tool_step(self, calls: list[tool_calls.ParsedCall]) -> StepResult:
        blocks: list[str] = []
        reward = 0.0
        info: dict[str, Any] = {"tool_calls": [], "tool_errors": []}
        for call in calls:
            info["tool_calls"].append(call.name)
            if self.max_tool_uses is not None and self.total_tool_uses >= self.max_tool_uses:
                info["tool_errors"].append("limit")
                blocks.append(
                    f"Tool limit reached ({self.max_tool_uses} calls): give your answer now."
                )
                break
            self.tool_uses[call.name] = self.tool_uses.get(call.name, 0) + 1
            result = await tool_calls.execute(call, self.tools, self.sandbox)
            if result.is_error:
                info["tool_errors"].append(result.output)
            else:
                reward += self.tool_reward
            blocks.append(tool_calls.text_tool_response(call.name, result))
        info["tool_uses"] = dict(self.tool_uses)
        return "\n".join(blocks), reward, False, False, info

    def close(self) -> None:
        if self._loop is not None:
            for tool in self.tools:
                self._loop.run_until_complete(tool.aclose())
            self._loop.close()
            self._loop = None
        super().close()
