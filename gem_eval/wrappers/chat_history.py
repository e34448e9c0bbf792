"""``ChatHistory``: the episode as OpenAI-style chat messages."""

from __future__ import annotations

from gem_eval.core import Env, ResetResult, StepResult, Wrapper

Message = dict[str, str]


class ChatHistory(Wrapper):
    """Keep the conversation an agent loop sends to a chat model.

    After ``reset`` the history is ``[system?, user(first observation)]``; each step
    appends ``assistant(action)`` and ``user(next observation)``. ``messages`` is the
    list to send; observations themselves pass through unchanged.

    Args:
        env: The env to talk to.
        system_prompt: Optional first message with role ``system``.
    """

    def __init__(self, env: Env, system_prompt: str | None = None) -> None:
        super().__init__(env)
        self.system_prompt = system_prompt
        self.messages: list[Message] = []

    def on_reset(self, result: ResetResult) -> ResetResult:
        obs, info = result
        self.messages = (
            [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        )
        self.messages.append({"role": "user", "content": obs})
        return obs, info

    def on_step(self, action: str, result: StepResult) -> StepResult:
        self.messages.append({"role": "assistant", "content": action})
        self.messages.append({"role": "user", "content": result[0]})
        return result
