"""Models: the interface, a scripted model for tests, and API / local backends."""

from __future__ import annotations

from gem_eval.models.base import GenerateConfig, Message, Model, ModelOutput, ToolCall, Usage
from gem_eval.models.factory import get_model
from gem_eval.models.retry import RetryPolicy
from gem_eval.models.scripted import ScriptedModel, tool_call

__all__ = [
    "GenerateConfig",
    "Message",
    "Model",
    "ModelOutput",
    "RetryPolicy",
    "ScriptedModel",
    "ToolCall",
    "Usage",
    "get_model",
    "tool_call",
]
