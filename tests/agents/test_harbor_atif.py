"""What gem-eval keeps of a Harbor agent: its turns read from the ATIF trajectory Harbor
itself wrote (``tests/fixtures/harbor_jobs``), its files; and the venv it runs in."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

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


def test_the_installed_agents_are_not_there_yet() -> None:
    for agent in (MiniSweAgent(), QwenCode()):
        with pytest.raises(UserError, match="not available yet"):
            asyncio.run(agent.start())
