"""What a Harbor agent left on this machine, as gem-eval keeps it: its turns (read from
its ATIF trajectory, ``trajectory.json``) and its files (the record's attachments).

A turn is one agent step of the trajectory: what the agent said and did and what it saw
next. Terminus-2's say its ``analysis`` and ``plan``, the ``commands`` it typed
(``keystrokes``, ``duration``), whether it marked the task complete, and the
``observation``: the screen after (with the confirmation question or a parser's warnings
when Terminus-2 added them), or the parse error it answered a reply it could not read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MAX_FILE_BYTES = 16 * 1024 * 1024
"""An agent file larger than this is not attached (its name is listed as skipped)."""
_PARSE_ERROR = "Previous response had parsing errors"


def read_trajectory(path: Path) -> dict[str, Any] | None:
    """The ATIF trajectory at ``path``, or ``None`` when it is missing or unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def turns(trajectory: dict[str, Any]) -> list[dict[str, Any]]:
    """Every step from the agent's first: the agent's (see the module docstring), and
    the others (a summarisation's handoff) as their source and message. The steps
    before (the first prompt; an installed agent's system prompt) are not turns: the
    first request holds them whole."""
    out: list[dict[str, Any]] = []
    steps = [s for s in trajectory.get("steps") or [] if isinstance(s, dict)]
    first = next((i for i, s in enumerate(steps) if s.get("source") == "agent"), len(steps))
    for step in steps[first:]:
        if step.get("source") == "agent":
            out.append(_agent_turn(step))
        else:
            out.append({"source": step.get("source"), "message": step.get("message") or ""})
    return out


def _agent_turn(step: dict[str, Any]) -> dict[str, Any]:
    message = str(step.get("message") or "")
    calls = [c for c in step.get("tool_calls") or [] if isinstance(c, dict)]
    results = (step.get("observation") or {}).get("results") or []
    observation = "\n".join(str(r.get("content")) for r in results if r.get("content"))
    if not calls and observation.startswith(_PARSE_ERROR):
        return {"reply": message, "parse_error": True, "observation": observation}
    analysis, plan = _analysis_and_plan(message)
    commands = [
        {
            "keystrokes": (c.get("arguments") or {}).get("keystrokes", ""),
            "duration": (c.get("arguments") or {}).get("duration"),
        }
        for c in calls
        if c.get("function_name") == "bash_command"
    ]
    turn: dict[str, Any] = {"analysis": analysis, "plan": plan, "commands": commands}
    turn["task_complete"] = any(c.get("function_name") == "mark_task_complete" for c in calls)
    others = [
        c for c in calls if c.get("function_name") not in ("bash_command", "mark_task_complete")
    ]
    if others:  # an agent other than Terminus-2: its tool calls as they are
        turn["tool_calls"] = [
            {"name": c.get("function_name"), "arguments": c.get("arguments")} for c in others
        ]
    turn["observation"] = observation
    return turn


def _analysis_and_plan(message: str) -> tuple[str, str]:
    """Terminus-2 writes a step's message as ``Analysis: A`` and ``Plan: P`` lines (either
    may be missing); another agent's message is its analysis."""
    if message.startswith("Plan: "):
        return "", message[len("Plan: ") :]
    if not message.startswith("Analysis: "):
        return message, ""
    analysis, _, plan = message[len("Analysis: ") :].partition("\nPlan: ")
    return analysis, plan


def agent_files(directory: Path) -> tuple[dict[str, str], list[str]]:
    """The agent's text files under ``directory`` (name -> text; a file in a
    subdirectory named ``sub__name``), and the names of those left out (binary, or
    larger than :data:`MAX_FILE_BYTES`)."""
    files: dict[str, str] = {}
    skipped: list[str] = []
    if not directory.is_dir():
        return files, skipped
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        name = "__".join(path.relative_to(directory).parts).lstrip(".") or "file"
        if path.stat().st_size > MAX_FILE_BYTES:
            skipped.append(name)
            continue
        data = path.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            skipped.append(name)
            continue
        if "\0" in text:
            skipped.append(name)
            continue
        files[name] = text
    return files, skipped
