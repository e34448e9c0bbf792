"""What gem-eval keeps of a Harbor agent: its turns read from the ATIF trajectory Harbor
itself wrote (``tests/fixtures/harbor_jobs``), its files; and the venv it runs in."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from gem_eval.agents.harbor import atif, venv
from gem_eval.agents.harbor.agents import MiniSweAgent, QwenCode
from gem_eval.errors import UserError

JOBS = Path(__file__).parents[1] / "fixtures" / "harbor_jobs" / "jobs" / "terminus-2"


def test_turns_of_a_trajectory_harbor_wrote() -> None:
    [path] = JOBS.glob("count-lines__*/agent/trajectory.json")
    first, second = atif.turns(json.loads(path.read_text()))
    assert first["analysis"] == "I need the number of lines of /app/data.txt."
    assert first["plan"] == "Guess the count and show the file."
    assert first["commands"] == [
        {"keystrokes": "echo 2 > /app/count.txt\n", "duration": 0.1},
        {"keystrokes": "cat /app/count.txt\n", "duration": 0.1},
    ]
    assert first["task_complete"] is True
    assert first["observation"].startswith("Current terminal state:\nNew Terminal Output:\nroot@")
    assert "cat /app/count.txt\n2\n" in first["observation"]
    assert "Are you sure you want to mark the task as complete?" in first["observation"]
    assert (second["analysis"], second["commands"]) == ("The work is done.", [])


def test_a_parse_error_and_a_handoff_are_turns_too() -> None:
    steps = [
        {"step_id": 1, "source": "user", "message": "the first prompt"},
        {
            "step_id": 2,
            "source": "agent",
            "message": "not json",
            "observation": {"results": [{"content": "Previous response had parsing errors:\nx"}]},
        },
        {"step_id": 3, "source": "system", "message": "Performed context summarization."},
        {"step_id": 4, "source": "agent", "message": "Plan: wait", "tool_calls": [],
         "observation": {"results": [{"content": "screen"}]}},
    ]  # fmt: skip
    error, handoff, plan_only = atif.turns({"steps": steps})
    assert error == {"reply": "not json", "parse_error": True, "observation": steps[1][
        "observation"]["results"][0]["content"]}  # fmt: skip
    assert handoff == {"source": "system", "message": "Performed context summarization."}
    assert (plan_only["analysis"], plan_only["plan"], plan_only["observation"]) == (
        "",
        "wait",
        "screen",
    )


def test_agent_files_are_text_and_not_huge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "trajectory.json").write_text("{}")
    (tmp_path / "sessions").mkdir()
    (tmp_path / "sessions" / "a.jsonl").write_text("line\n")
    (tmp_path / "blob.bin").write_bytes(b"\xff\x00\x01")
    (tmp_path / "big.log").write_text("x" * 100)
    monkeypatch.setattr(atif, "MAX_FILE_BYTES", 50)
    files, skipped = atif.agent_files(tmp_path)
    assert files == {"sessions__a.jsonl": "line\n", "trajectory.json": "{}"}
    assert sorted(skipped) == ["big.log", "blob.bin"]


def test_no_python_312_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(venv.PYTHON_VAR, sys.executable if sys.version_info < (3, 12) else "/no")
    with pytest.raises(UserError, match=r"is not a Python >= 3\.12"):
        venv.find_python()
    monkeypatch.setenv(venv.VENV_VAR, str(tmp_path))
    with pytest.raises(UserError, match=r"is not a venv with harbor==0\.26\.0"):
        venv.harbor_venv()


def test_an_installed_agents_turns_start_at_its_first_step() -> None:
    """mini-swe-agent's trajectory (as Harbor converts it) opens with a system and a user
    step: the first request holds them; its turns are its tool calls and their output."""
    call = {"tool_call_id": "c1", "function_name": "bash", "arguments": {"command": "ls"}}
    steps = [
        {"step_id": 1, "source": "system", "message": "You are a helpful assistant."},
        {"step_id": 2, "source": "user", "message": "Please solve this issue: ..."},
        {"step_id": 3, "source": "agent", "message": "Looking.", "tool_calls": [call],
         "observation": {"results": [{"content": '{"returncode": 0, "output": "notes"}'}]}},
    ]  # fmt: skip
    [turn] = atif.turns({"steps": steps})
    assert turn == {
        "analysis": "Looking.",
        "plan": "",
        "commands": [],
        "task_complete": False,
        "tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}],
        "observation": '{"returncode": 0, "output": "notes"}',
    }


def test_an_installed_agent_runs_harbors_adapter_on_its_install() -> None:
    """Harbor's adapter skips its own install (gem-eval's is in the container) and calls
    the endpoint as the container reaches it, the episode's token its key."""
    agent = QwenCode()
    episode = cast(Any, SimpleNamespace(sandbox_base_url="http://10.0.0.1:5/v1", api_key="gem-t"))
    assert agent.agent_kwargs(episode) == {"skip_install": True}
    assert agent.agent_config(episode) == {
        "base_url": "http://10.0.0.1:5/v1",
        "env": {"OPENAI_API_KEY": "gem-t"},
    }
    assert (agent.harbor_name, MiniSweAgent().harbor_name) == ("qwen-coder", "mini-swe-agent")
    assert agent.describe()["install"]["version"] == "0.24.4"
