"""``ToolEnv``: let the agent call tools before it answers the env.

This is the hook the tools layer plugs into. A tool is anything that can recognise a
call to itself in an action and run it (:class:`ActionTool`). An action that calls a
tool is answered with the tool's output and does not reach the wrapped env; any other
action goes to the env unchanged.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from gem_eval.core import Env, ResetResult, StepResult, Wrapper


@runtime_checkable
class ActionTool(Protocol):
    """A tool the agent calls by writing a call to it in its action text."""

    name: str

    def parse(self, action: str) -> Any | None:
        """The call's arguments when ``action`` calls this tool, else ``None``."""

    def execute(self, call: Any) -> str:
        """Run the call; return the text the agent sees."""


class ToolEnv(Wrapper):
    """Route tool calls in actions to tools; pass other actions to the env.

    A tool call returns the tool's output as the observation, with reward
    ``tool_reward``, ``terminated=truncated=False`` and ``info["tool"]`` naming the tool.
    When ``max_tool_uses`` is reached, further calls are refused with a message (reward
    0.0) so the agent must answer. An exception inside a tool is shown to the agent as
    ``Tool error: ...`` and recorded in ``info["tool_error"]``; it never ends the episode.

    Args:
        env: The env the final answers go to.
        tools: The tools offered, tried in order.
        max_tool_uses: Calls allowed per episode (``None``: no limit).
        tool_reward: Reward per successful call (GEM's optional shaping; default 0).
    """

    def __init__(
        self,
        env: Env,
        tools: list[ActionTool],
        max_tool_uses: int | None = None,
        tool_reward: float = 0.0,
    ) -> None:
        super().__init__(env)
        self.tools = list(tools)
        self.max_tool_uses = max_tool_uses
        self.tool_reward = tool_reward
        self.tool_uses: dict[str, int] = {}

    @property
    def total_tool_uses(self) -> int:
        return sum(self.tool_uses.values())

    def on_reset(self, result: ResetResult) -> ResetResult:
        self.tool_uses = {}
        return result

    def step(self, action: str) -> StepResult:
        answered = self._tool_step(action)
        return answered if answered is not None else self.env.step(action)

    async def astep(self, action: str) -> StepResult:
        answered = self._tool_step(action)
        return answered if answered is not None else await self.env.astep(action)

    def _tool_step(self, action: str) -> StepResult | None:
        """The tool's answer when ``action`` calls a tool, else ``None``."""
        for tool in self.tools:
            call = tool.parse(action)
            if call is not None:
                return self._call(tool, call)
        return None

    def _call(self, tool: ActionTool, call: Any) -> StepResult:
        info: dict[str, Any] = {"tool": tool.name}
        if self.max_tool_uses is not None and self.total_tool_uses >= self.max_tool_uses:
            info["tool_error"] = "limit"
            obs = f"Tool limit reached ({self.max_tool_uses} calls): give your answer now."
            return obs, 0.0, False, False, info
        self.tool_uses[tool.name] = self.tool_uses.get(tool.name, 0) + 1
        info["tool_uses"] = dict(self.tool_uses)
        try:
            obs = tool.execute(call)
        except Exception as exc:  # a failing tool is feedback for the agent
            info["tool_error"] = f"{type(exc).__name__}: {exc}"
            return f"Tool error: {info['tool_error']}", 0.0, False, False, info
        return obs, self.tool_reward, False, False, info
