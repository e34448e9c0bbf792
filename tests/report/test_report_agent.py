"""An agent program's episode in the report (headless Chromium): Terminus-2's turns
(analysis, plan, keystrokes, the screen after; a reply it could not parse) and its
terminal recording, replayed from the run's attachment."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gem_eval.models.base import ModelOutput, Usage
from gem_eval.records import EpisodeRecord, ModelSpec, RunManifest, TaskSpec
from gem_eval.report.data import unpack
from gem_eval.store import RunDir
from gem_eval.trajectory import Step, Trajectory
from tests.report.recorded import gem_eval
from tests.report.test_report_browser import Page

RUN = "2026-12-06T10-00-00-tb-cccccc"
TASK = "terminal/hello-file"
SCREEN = "root@abc:/app# echo hi > /app/hello.txt\nroot@abc:/app#"
CAST = "\n".join(
    json.dumps(line)
    for line in [
        {"version": 2, "width": 40, "height": 5, "timestamp": 0},
        [0.1, "o", "\u001b[?2004hroot@abc:/app# "],
        [0.5, "o", "clear\r\n\u001b[H\u001b[J\u001b[3Jroot@abc:/app# "],
        [1.0, "o", "echo hi > /app/hello.txt\r\nroot@abc:/app# "],
    ]
)
TURNS: list[dict[str, Any]] = [
    {"reply": "I would write it.", "parse_error": True,
     "observation": "Previous response had parsing errors:\nERROR: No valid JSON found"},
    {"analysis": "No file yet.", "plan": "Write it.", "task_complete": True,
     "commands": [{"keystrokes": "echo hi > /app/hello.txt\n", "duration": 0.1}],
     "observation": f"Current terminal state:\nNew Terminal Output:\n{SCREEN}"},
]  # fmt: skip


@pytest.fixture(scope="module")
def agent_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("agent") / "results"
    model = ModelSpec(name="openai/scripted")
    manifest = RunManifest(
        run_id=RUN, suite="tb", suite_hash="e" * 64, models=[model],
        tasks=[TaskSpec(id=TASK, env_id="terminal:Task-v0", agent="terminus-2")],
        episodes_planned=1, gem_eval_version="0.0.0", host="test", started_at=1_796_500_000.0,
    )  # fmt: skip
    run = RunDir.create(results, manifest)
    steps = [
        Step(index=i, output=ModelOutput(text="{}", usage=Usage(input_tokens=900)))
        for i in range(2)
    ]
    steps[-1].reward, steps[-1].terminated = 1.0, True
    trajectory = Trajectory(
        env_id="terminal:Task-v0", model=model.name, steps=steps, success=True,
        initial_observation="Write hi into /app/hello.txt.",
    )  # fmt: skip
    trajectory.agent = "terminus-2"
    trajectory.agent_run = {"setup_s": 1.5, "run_s": 2.25, "version": "2.0.0", "turns": TURNS,
                            "timed_out": False, "provided": ["tmux", "asciinema"]}  # fmt: skip
    record = EpisodeRecord(
        run_id=RUN, key=f"{model.name}|{TASK}|0|0", model=model.name, task_id=TASK,
        category="terminal", sample=0, epoch=0, seed=None, outcome="completed", score=1.0,
        success=True, turns=2, input_tokens=1800, output_tokens=0, cost_usd=None,
        latency_s=0.1, started_at=1_796_500_000.0, finished_at=1_796_500_010.0,
        trajectory=trajectory,
    )  # fmt: skip
    record.attach({"recording.cast": CAST, "trajectory.json": "{}"})
    run.append(record)
    run.write_manifest(manifest.model_copy(update={"status": "finished"}))
    out = results.parent / "report.html"
    done = gem_eval("report", RUN, "-o", str(out), results=results)
    assert done.returncode == 0, done.stderr
    return out


def test_the_page_holds_the_agents_cast(agent_report: Path) -> None:
    html = agent_report.read_text()
    start = html.index('id="gem-transcripts">') + len('id="gem-transcripts">')
    blobs = json.loads(html[start : html.index("</script>", start)])
    [transcript] = [unpack(b) for b in blobs]
    assert transcript["casts"] == {"recording.cast": CAST}
    assert transcript["agent_run"]["turns"] == TURNS


def test_an_agent_episode_shows_its_turns_and_replays_its_cast(
    browser: Any, agent_report: Path
) -> None:
    page = Page(browser)
    try:
        p = page.open(agent_report.as_uri())
        p.locator("#episode-list tbody tr").first.click()
        view = p.locator("#episode-view .agent-run")
        view.wait_for()
        head = view.locator("h4").first.inner_text()
        assert "terminus-2 2.0.0" in head and "setup 1.500 s" in head and "run 2.250 s" in head
        turns = view.locator("tr.agent-turn")
        assert turns.count() == 2
        assert "reply not parsed" in turns.nth(0).inner_text()
        second = turns.nth(1).inner_text()
        for text in ("No file yet.", "Write it.", "echo hi > /app/hello.txt", "task complete"):
            assert text in second
        assert "root@abc:/app# echo hi > /app/hello.txt" in second
        screen = view.locator(".cast .cast-screen")
        assert screen.inner_text() == "root@abc:/app# echo hi > /app/hello.txt\nroot@abc:/app#"
        slider = view.locator('.cast input[type="range"]')
        slider.fill("2")  # after the clear: the prompt alone
        assert screen.inner_text() == "root@abc:/app#"
        assert view.locator('.cast a[download="recording.cast"]').count() == 1
        page.shot("report-agent-episode")
        assert page.errors == []
    finally:
        page.page.close()
