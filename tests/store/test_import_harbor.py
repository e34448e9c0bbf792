"""Importing job folders that Harbor itself wrote (``tests/fixtures/harbor_jobs``: Harbor
0.26.0, its oracle agent and Terminus-2, ATIF-v1.8 trajectories), and folders in which one
job or trial cannot be read: the rest imports, and the one left out is named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from gem_eval.cli import main
from gem_eval.errors import UserError
from gem_eval.export.atif_schema import Trajectory
from gem_eval.store.importers import import_results, read_runs
from tests.store.test_import import cli, load

JOBS = Path(__file__).parents[1] / "fixtures" / "harbor_jobs" / "jobs"


def trial(job: Path, task: str) -> Path:
    """The trial directory of ``task`` in ``job`` (Harbor names it ``<task>__<random>``)."""
    [found] = job.glob(f"{task}__*")
    return found


@pytest.fixture
def jobs(tmp_path: Path) -> Path:
    """A copy of the Harbor-written jobs, to break."""
    return Path(shutil.copytree(JOBS, tmp_path / "jobs"))


def runs_by_job(results: Path, run_ids: list[str]) -> dict[str, Any]:
    out = {}
    for run_id in run_ids:
        manifest, records = load(results, run_id)
        out[manifest.extra["imported"]["job_name"]] = (manifest, records)
    return out


def test_jobs_that_harbor_wrote_import_with_their_v1_8_transcripts(tmp_path: Path) -> None:
    results = tmp_path / "results"
    runs = runs_by_job(results, import_results(JOBS, results))
    assert set(runs) == {"oracle", "terminus-2"}

    manifest, records = runs["oracle"]
    imported = manifest.extra["imported"]
    assert (imported["source"], imported["version"], manifest.suite) == (
        "harbor",
        "0.26.0",
        "tasks",
    )
    assert "atif_versions" not in imported  # the oracle writes no trajectory
    assert [m.name for m in manifest.models] == ["oracle"]
    assert {task: (r.outcome, r.score) for (task, _), r in records.items()} == {
        "hello-file": ("completed", 1.0),
        "count-lines": ("completed", 1.0),
    }

    manifest, records = runs["terminus-2"]
    imported = manifest.extra["imported"]
    assert imported["atif_versions"] == ["ATIF-v1.8"] and "skipped" not in imported
    assert [m.name for m in manifest.models] == ["openai/scripted"]
    assert manifest.episodes_planned == 2 and manifest.suite_hash == runs["oracle"][0].suite_hash
    solved, wrong = records[("hello-file", 0)], records[("count-lines", 0)]
    assert (solved.score, solved.success, wrong.score, wrong.success) == (1.0, True, 0.0, False)
    assert (solved.input_tokens, solved.output_tokens, solved.turns) == (1800, 120, 2)
    assert solved.latency_s > 0
    traj = solved.trajectory
    assert traj is not None
    # step 1 is Terminus-2's prompt (a user step); one command: its output answers the call
    assert [m["role"] for m in traj.messages] == ["user", "assistant", "tool", "assistant", "user"]
    assert "Write the word `hi`" in traj.initial_observation
    first = traj.messages[1]
    assert first["content"].startswith("Analysis: The terminal is empty")
    assert [c["function"]["name"] for c in first["tool_calls"]] == [
        "bash_command",
        "mark_task_complete",
    ]
    assert json.loads(first["tool_calls"][0]["function"]["arguments"]) == {
        "keystrokes": "echo hi > /app/hello.txt\n",
        "duration": 0.1,
    }
    assert "echo hi > /app/hello.txt" in traj.steps[0].tool_events[0].output
    assert traj.steps[-1].reward == 1.0
    # two commands share one terminal output: a result naming no call, read as the env's
    wrong_traj = wrong.trajectory
    assert wrong_traj is not None
    assert [m["role"] for m in wrong_traj.messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert (
        "Are you sure you want to mark the task as complete?" in wrong_traj.messages[2]["content"]
    )


def test_a_folder_with_broken_jobs_and_trials_imports_the_rest(jobs: Path) -> None:
    # named as Harbor names jobs, its own files broken: still a job (by its trials), skipped
    broken = Path(shutil.copytree(jobs / "oracle", jobs / "2026-12-06__17-00-00"))
    (broken / "config.json").write_text("{not json")
    (broken / "result.json").write_text('{"n_total_trials": 2, ')
    terminus = jobs / "terminus-2"
    count = trial(terminus, "count-lines")
    (count / "result.json").write_text('{"task_name": "count-lines", ')
    trajectory = trial(terminus, "hello-file") / "agent" / "trajectory.json"
    doc = json.loads(trajectory.read_text())
    trajectory.write_text(json.dumps(doc | {"schema_version": "ATIF-v1.9"}))
    (terminus / "fix-git__Unfinish").mkdir()  # a trial that never wrote its result
    (terminus / "fix-git__Unfinish" / "trial.log").write_text("")
    results = jobs.parent / "results"

    result = cli("results", "import", str(jobs), "--results-dir", str(results))

    assert result.exit_code == 0, result.output
    warnings = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert warnings == [
        f"warning: skipped {broken}: config.json:1: not JSON: Expecting property "
        "name enclosed in double quotes",
        f"warning: skipped trial {count}: result.json:1: not JSON: Expecting "
        "property name enclosed in double quotes",
        f"warning: skipped trial {terminus / 'fix-git__Unfinish'}: result.json: missing (the "
        "trial did not finish)",
        f"warning: transcript not imported: {trajectory}: ATIF version 'ATIF-v1.9' is unknown "
        "(gem-eval reads up to ATIF-v1.8)",
    ]
    assert result.output.count("imported 2026-") == 2
    runs = runs_by_job(results, sorted(p.name for p in results.iterdir() if p.is_dir()))
    assert set(runs) == {"oracle", "terminus-2"}
    manifest, records = runs["terminus-2"]
    assert list(records) == [("hello-file", 0)] and manifest.episodes_planned == 3
    hello = records[("hello-file", 0)]
    assert hello.score == 1.0 and hello.trajectory is not None and not hello.trajectory.messages
    assert manifest.extra["imported"]["skipped"] == [
        w.removeprefix("warning: ") for w in warnings[1:]
    ]


def test_a_folder_with_nothing_readable_is_one_error(
    jobs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for job in ("oracle", "terminus-2"):
        for result in (jobs / job).glob("*__*/result.json"):
            result.write_text("[]")
    with pytest.raises(UserError) as caught:
        read_runs(jobs / "oracle")
    assert str(caught.value) == (
        f"{jobs / 'oracle'}: no trial could be read ({trial(jobs / 'oracle', 'count-lines')}: "
        "result.json: expected a JSON object, found list)"
    )
    with pytest.raises(SystemExit) as exit_info:
        main(["results", "import", str(jobs), "--results-dir", str(jobs.parent / "results")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: {jobs}: none of 2 could be read; the first, {jobs / 'oracle'}")
    assert not (jobs.parent / "results").exists() or not any((jobs.parent / "results").iterdir())


# -- ATIF v1.8: audio parts ---------------------------------------------------------------


def v1_8(message: Any) -> dict[str, Any]:
    return {
        "schema_version": "ATIF-v1.8",
        "agent": {"name": "a", "version": "1"},
        "steps": [{"step_id": 1, "source": "user", "message": message}],
    }


AUDIO = {"type": "audio", "source": {"media_type": "audio/wav", "path": "a.wav"}}


def test_v1_8_audio_parts_are_read_and_their_spellings_normalized() -> None:
    doc = Trajectory.model_validate(
        v1_8(
            [
                {"type": "text", "text": "Transcribe this:"},
                AUDIO,
                {
                    "type": "audio",
                    "source": {"media_type": "audio/MP3", "path": "b.mp3", "duration_sec": 2.5},
                },
            ]
        )
    )
    parts = doc.steps[0].message
    assert isinstance(parts, list)
    assert [p.source.media_type for p in parts[1:] if p.source] == ["audio/wav", "audio/mpeg"]


@pytest.mark.parametrize(
    "part",
    [
        {"type": "audio", "source": {"media_type": "image/png", "path": "x.png"}},
        {"type": "image", "source": {"media_type": "audio/wav", "path": "x.wav"}},
        {"type": "audio", "text": "x", "source": AUDIO["source"]},
        {"type": "audio"},
        {"type": "audio", "source": {"media_type": "audio/wav", "path": "x", "duration_sec": -1}},
        {"type": "video", "source": {"media_type": "audio/wav", "path": "x"}},
    ],
)
def test_malformed_media_parts_are_refused(part: dict[str, Any]) -> None:
    Trajectory.model_validate(v1_8([AUDIO]))  # a sound one passes
    with pytest.raises(ValidationError):
        Trajectory.model_validate(v1_8([part]))


def test_an_audio_part_in_a_harbor_transcript_reads_as_its_file(jobs: Path) -> None:
    trajectory = trial(jobs / "terminus-2", "hello-file") / "agent" / "trajectory.json"
    doc = json.loads(trajectory.read_text())
    doc["steps"][0]["message"] = [{"type": "text", "text": "Listen:"}, AUDIO]
    trajectory.write_text(json.dumps(doc))
    [run] = read_runs(jobs / "terminus-2")
    hello = next(e for e in run.episodes if e.task_id == "hello-file")
    assert hello.messages[0] == {"role": "user", "content": "Listen:\n(audio: a.wav)"}


def test_an_unreadable_log_beside_the_jobs_is_skipped_too(jobs: Path) -> None:
    """Skipping is not Harbor's alone: an inspect_ai log that is no zip is named and left
    out, and the jobs beside it import."""
    (jobs / "2026-12-06T17-00-00_arith.eval").write_bytes(b"not a zip")
    lines: list[str] = []
    runs = read_runs(jobs, warn=lines.append)
    assert sorted(r.details["job_name"] for r in runs) == ["oracle", "terminus-2"]
    assert len(lines) == 1 and lines[0].startswith(
        f"skipped {jobs / '2026-12-06T17-00-00_arith.eval'}: "
    )
