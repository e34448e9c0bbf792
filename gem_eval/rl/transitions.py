"""An episode as RL transitions: one row per turn, with what the policy saw and did.

A turn is one model action and what answered it (see :mod:`gem_eval.returns`). Its row
holds the chat messages the model was given (the *prompt*), the message it wrote (the
*completion*: text and native tool calls), the answer (the env's observation, or the
tools' outputs), the turn's reward, its return-to-go ``G_t``, and the token ids and
log-probabilities of the call when the server returned them
(:mod:`gem_eval.models.tokens`).
"""

from __future__ import annotations

import json
from typing import Any

from gem_eval.models.base import Message
from gem_eval.trajectory import Step, Trajectory


def transition_rows(trajectory: Trajectory, gamma: float) -> list[dict[str, Any]]:
    """One row per turn of ``trajectory`` (keys: see :data:`gem_eval.rl.batch.COLUMNS`
    from ``turn`` to ``logprobs``), in turn order."""
    returns = trajectory.returns_to_go(gamma)
    prompts = _prompts(trajectory)
    cut = trajectory.outcome == "truncated"  # a limit stopped it after its last turn
    last = len(trajectory.steps) - 1
    rows = []
    for k, (step, g, (prompt, completion)) in enumerate(
        zip(trajectory.steps, returns, prompts, strict=True)
    ):
        tokens = step.output.tokens
        rows.append(
            {
                "turn": step.index,
                "prompt": json.dumps(prompt, ensure_ascii=False),
                "completion": json.dumps(completion, ensure_ascii=False),
                "action": step.action,
                "answer": _answer(step),
                "reward": float(step.reward),
                "terminated": step.terminated,
                "truncated": step.truncated or (cut and k == last),
                "return": g,
                "prompt_token_ids": tokens.prompt_ids if tokens else None,
                "completion_token_ids": tokens.completion_ids if tokens else None,
                "logprobs": tokens.logprobs if tokens else None,
            }
        )
    return rows


def _prompts(trajectory: Trajectory) -> list[tuple[list[Message], Message]]:
    """For each step, the messages before its assistant message, and that message.

    The agent loop appends one assistant message per model call, in step order; a step
    whose message is missing (a trajectory cut short) gets its output as the message. An
    agent program's calls each carry their own request (:meth:`Trajectory.agent_requests`).
    """
    if trajectory.agent is not None:  # an agent program: each call's own request
        requests = trajectory.agent_requests()
        return [(sent, step.output.message()) for sent, step in zip(requests, trajectory.steps)]
    messages = trajectory.messages
    assistant_at = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    out = []
    for k, step in enumerate(trajectory.steps):
        if k < len(assistant_at):
            i = assistant_at[k]
            out.append((messages[:i], messages[i]))
        else:
            out.append((list(messages), {"role": "assistant", "content": step.output.text}))
    return out


def _answer(step: Step) -> str:
    """What answered the turn: the env's observation, else the tools' outputs."""
    if step.observation is not None:
        return step.observation
    return "\n".join(event.output for event in step.tool_events)
