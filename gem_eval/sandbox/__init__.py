"""Sandboxes: isolated places where agent code and commands run."""

from __future__ import annotations

from gem_eval.sandbox.base import (
    DEFAULT_OUTPUT_LIMIT,
    ExecResult,
    OutputCap,
    Sandbox,
    SandboxProcess,
    cap_text,
)

__all__ = [
    "DEFAULT_OUTPUT_LIMIT",
    "ExecResult",
    "OutputCap",
    "Sandbox",
    "SandboxProcess",
    "cap_text",
]
