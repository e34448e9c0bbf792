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

    def reset(self, seed: int | None = None) -> ResetResult:
        obs, info = self.env.reset(seed)
        self.messages = (
            [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        )
        self.messages.append({"role": "user", "content": obs})
        return obs, info

    def step(self, action: str) -> StepResult:
        result = self.env.step(action)
        self.messages.append({"role": "assistant", "content": action})
        self.messages.append({"role": "user", "content": result[0]})
        return result
