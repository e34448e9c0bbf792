from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from gem_eval.errors import GemEvalError, StoreWriteError, UserError
from gem_eval.models.base import ModelOutput, Usage
from gem_eval.records import EpisodeRecord, ModelSpec, RunManifest, TaskSpec
from gem_eval.store import RunDir, check_run_id, list_run_ids, new_run_id
from gem_eval.trajectory import Step, Trajectory
from tests.fixtures.full_disk import FullDisk

REPO = Path(__file__).resolve().parents[2]


def make_manifest(run_id: str = "run-1", **kwargs: Any) -> RunManifest:
    values: dict[str, Any] = {
        "run_id": run_id,
        "suite": "smoke",
        "suite_hash": "abc123",
        "models": [ModelSpec(name="model-a"), ModelSpec(name="model-b")],
        "tasks": [TaskSpec(id="guess", env_id="game:GuessTheNumber-v0-easy")],
        "episodes_planned": 4,
        "gem_eval_version": "0.0.0",
        "host": "test",
        "started_at": 1000.0,
    }
    return RunManifest(**(values | kwargs))


def make_trajectory(observation: str = "Guess a number between 1 and 10.") -> Trajectory:
    output = ModelOutput(text="5", usage=Usage(input_tokens=12, output_tokens=1))
    return Trajectory(
        env_id="game:GuessTheNumber-v0-easy",
        model="model-a",
        initial_observation=observation,
        messages=[{"role": "user", "content": observation}, {"role": "assistant", "content": "5"}],
        steps=[Step(index=0, output=output, action="5", observation="Correct!", reward=1.0)],
        usage=Usage(input_tokens=12, output_tokens=1),
        success=True,
    )


def make_record(
    run_id: str = "run-1",
    model: str = "model-a",
    task_id: str = "guess",
    sample: int = 0,
    outcome: str = "completed",
    score: float | None = 1.0,
    trajectory: Trajectory | None = None,
) -> EpisodeRecord:
    return EpisodeRecord.model_validate(
        {
            "run_id": run_id,
            "key": f"{model}|{task_id}|{sample}|0",
            "model": model,
            "task_id": task_id,
            "sample": sample,
            "epoch": 0,
            "outcome": outcome,
            "score": score,
            "success": bool(score),
            "turns": 1,
            "started_at": 1000.0 + sample,
            "finished_at": 1001.0 + sample,
            "trajectory": trajectory,
        }
    )


def test_run_ids_are_safe_and_sort_by_time() -> None:
    early = new_run_id("my suite/v2", now=1_800_000_000)
    late = new_run_id("a", now=1_800_000_001)
    assert early.startswith("2027-01-15T08-00-00-my-suite-v2-")
    assert len(early.rsplit("-", 1)[1]) == 6
    assert early < late
    assert check_run_id(early) == early
    for bad in ("latest", "../up", "", ".hidden"):
        with pytest.raises(UserError):
            check_run_id(bad)


def test_create_writes_manifest_and_refuses_an_existing_run(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, make_manifest())
    assert run.read_manifest() == make_manifest()
    assert run.episodes_path.read_bytes() == b""
    with pytest.raises(UserError, match="already exists"):
        RunDir.create(tmp_path, make_manifest(status="finished"))
    assert run.read_manifest().status == "running"
    with pytest.raises(UserError, match="invalid run id"):
        RunDir.create(tmp_path, make_manifest(run_id="latest"))


def test_write_manifest_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = RunDir.create(tmp_path, make_manifest())
    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)

    def crash(src: object, dst: object) -> None:
        raise OSError("crash before the rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(StoreWriteError, match=r"cannot write .*manifest.json: crash before"):
        run.write_manifest(make_manifest(status="finished"))
    assert synced  # the new content was on disk before the rename was attempted
    assert run.read_manifest().status == "running"  # the old manifest, whole
    monkeypatch.undo()
    run.write_manifest(make_manifest(status="finished", finished_at=1010.0))
    assert run.read_manifest().status == "finished"
    assert sorted(p.name for p in run.path.iterdir()) == ["episodes.jsonl", "manifest.json"]


def test_a_full_disk_keeps_the_old_manifest_and_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = RunDir.create(tmp_path, make_manifest())
    disk = FullDisk(f".manifest.json.{os.getpid()}.tmp", whole_writes=0).install(monkeypatch)
    with pytest.raises(StoreWriteError) as raised:
        run.write_manifest(make_manifest(status="finished"))
    assert str(raised.value) == f"cannot write {run.manifest_path}: No space left on device"
    assert raised.value.errno == errno.ENOSPC and disk.refused == 1
    assert run.read_manifest().status == "running"
    assert sorted(p.name for p in run.path.iterdir()) == ["episodes.jsonl", "manifest.json"]


@pytest.mark.parametrize("whole_writes", [0, 1, 3])
def test_a_full_disk_mid_append_leaves_the_log_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, whole_writes: int
) -> None:
    run = RunDir.create(tmp_path, make_manifest())
    disk = FullDisk("episodes.jsonl", whole_writes).install(monkeypatch)
    for sample in range(whole_writes):
        run.append(make_record(sample=sample, trajectory=make_trajectory()))
    before = run.episodes_path.read_bytes()
    with pytest.raises(StoreWriteError, match=r"episodes.jsonl: No space left on device$"):
        run.append(make_record(sample=99, trajectory=make_trajectory()))
    assert disk.refused == 1  # half the line went in first, then the disk was full
    assert run.episodes_path.read_bytes() == before  # cut back: no torn line, nothing lost
    with pytest.raises(StoreWriteError):  # a batch is all or nothing too
        run.extend([make_record(sample=100), make_record(sample=101)])
    assert run.episodes_path.read_bytes() == before
    monkeypatch.undo()  # room again: the run resumes where it stopped
    run.append(make_record(sample=99))
    assert [r.sample for r in run.records()] == [*range(whole_writes), 99]


def test_an_unwritable_log_is_a_store_write_error(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, make_manifest())
    run.episodes_path.unlink()
    run.episodes_path.mkdir()  # open() fails with EISDIR, as it would with EROFS or EACCES
    with pytest.raises(StoreWriteError, match=r"cannot write .*episodes.jsonl: Is a directory"):
        run.append(make_record())


def test_append_and_read_back_with_a_trajectory(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, make_manifest())
    records = [make_record(sample=i, trajectory=make_trajectory()) for i in range(3)]
    for record in records:
        run.append(record)
    assert list(run.records()) == records
    reopened = RunDir.open(tmp_path, "run-1")
    assert [r.trajectory for r in reopened.records()] == [make_trajectory()] * 3
    with pytest.raises(ValueError, match="run-2"):
        run.append(make_record(run_id="run-2"))


def test_torn_last_line_is_skipped_then_cut_by_the_next_append(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, make_manifest())
    run.append(make_record(sample=0))
    whole = make_record(sample=1).model_dump_json().encode()
    with open(run.episodes_path, "ab") as f:
        f.write(whole[: len(whole) // 2])  # a crash in the middle of a write
    assert [r.sample for r in run.records()] == [0]
    assert run.done_keys() == {"model-a|guess|0|0"}
    run.append(make_record(sample=2))
    assert [r.sample for r in run.records()] == [0, 2]
    lines = run.episodes_path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and all(json.loads(line) for line in lines[:-1])


def test_a_torn_first_line_is_cut_whole(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, make_manifest())
    run.episodes_path.write_bytes(b'{"run_id": "run-1", "ke')
    assert list(run.records()) == []
    run.append(make_record())
    assert len(run.episodes_path.read_bytes().splitlines()) == 1


def test_a_bad_complete_line_is_an_error(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, make_manifest())
    run.append(make_record())
    with open(run.episodes_path, "ab") as f:
        f.write(b"not json\n")
    with pytest.raises(GemEvalError, match=r"episodes.jsonl:2"):
        list(run.records())
    with pytest.raises(GemEvalError, match=r"episodes.jsonl:2"):
        run.done_keys()


def test_unscored_episodes_are_not_done_and_the_last_record_wins(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, make_manifest())
    run.append(make_record(sample=0, outcome="cancelled", score=None))
    run.append(make_record(sample=1, outcome="cancelled", score=None))
    run.append(make_record(sample=2, outcome="infra_error", score=None))
    run.append(make_record(sample=3, outcome="model_error", score=0.0))
    run.append(make_record(sample=0, outcome="completed", score=0.5))
    assert run.done_keys() == {"model-a|guess|0|0", "model-a|guess|3|0"}
    assert run.done_keys(rerun=("cancelled",)) == {
        "model-a|guess|0|0",
        "model-a|guess|2|0",
        "model-a|guess|3|0",
    }
    latest = run.latest_by_key()
    assert len(latest) == 4
    assert latest["model-a|guess|0|0"].score == 0.5
    assert latest["model-a|guess|1|0"].outcome == "cancelled"


def test_open_latest_is_the_most_recently_started_run(tmp_path: Path) -> None:
    RunDir.create(tmp_path, make_manifest("b-run", started_at=3000.0))
    RunDir.create(tmp_path, make_manifest("c-run", started_at=2000.0))
    RunDir.create(tmp_path, make_manifest("a-run", started_at=1000.0))
    (tmp_path / "not-a-run").mkdir()
    assert list_run_ids(tmp_path) == ["a-run", "b-run", "c-run"]
    assert RunDir.open(tmp_path, "latest").run_id == "b-run"
    with pytest.raises(UserError, match="no runs in"):
        RunDir.open(tmp_path / "empty", "latest")


def test_an_unknown_run_id_names_the_closest(tmp_path: Path) -> None:
    for run_id in ("2026-12-02T13-20-05-smoke-ab12cd", "2026-12-02T14-00-00-games-ffffff"):
        RunDir.create(tmp_path, make_manifest(run_id))
    with pytest.raises(UserError, match="Did you mean: 2026-12-02T13-20-05-smoke-ab12cd"):
        RunDir.open(tmp_path, "2026-12-02T13-20-05-smoke-ab12ce")
    with pytest.raises(UserError, match="Did you mean: 2026-12-02T14-00-00-games-ffffff"):
        RunDir.open(tmp_path, "games-ffffff")
    with pytest.raises(UserError, match=r"no run '\.\./x'"):
        RunDir.open(tmp_path, "../x")
    with pytest.raises(UserError, match="there are no runs"):
        RunDir.open(tmp_path / "nothing", "x")


_WRITER = textwrap.dedent(
    """
    import sys
    from gem_eval.records import EpisodeRecord
    from gem_eval.store import RunDir

    run = RunDir(sys.argv[1])
    padding = "x" * 50_000
    for i in range(100_000):
        run.append(EpisodeRecord(
            run_id=run.run_id, key=f"m|t|{i}|0", model="m", task_id="t", category=padding,
            sample=i, epoch=0, outcome="completed", score=1.0, success=True, turns=1,
            started_at=0.0, finished_at=1.0,
        ))
        print(i, flush=True)
    """
)


def test_a_sigkilled_writer_loses_no_acknowledged_record(tmp_path: Path) -> None:
    # A SIGKILL seldom tears a line (each record is one write call); a power cut can, and
    # that case is test_torn_last_line_is_skipped_then_cut_by_the_next_append.
    run = RunDir.create(tmp_path, make_manifest())
    child = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(run.path)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert child.stdout is not None
    acknowledged = [int(child.stdout.readline()) for _ in range(15)]
    child.send_signal(signal.SIGKILL)
    acknowledged += [int(line) for line in child.stdout.read().split()]
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL

    recorded = [r.sample for r in run.records()]
    assert recorded[: len(acknowledged)] == acknowledged  # in order, none lost
    assert len(recorded) <= len(acknowledged) + 1  # at most the one in flight on top

    run.append(make_record(sample=-1))
    raw = run.episodes_path.read_bytes()
    assert raw.endswith(b"\n")
    lines = raw.splitlines()
    assert len(lines) == len(recorded) + 1
    assert [EpisodeRecord.model_validate_json(line).sample for line in lines] == [*recorded, -1]


def test_attached_files_are_written_before_the_record_and_listed_in_it(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, make_manifest())
    first = make_record(outcome="infra_error", score=None)
    first.attach({"terminal.cast": "first attempt\n"})
    run.append(first)
    [path] = first.attachments
    assert path.startswith("attachments/") and path.endswith("/terminal.cast")
    assert (run.path / path).read_text() == "first attempt\n"
    again = make_record()  # the replay of the same episode replaces the file
    again.attach({"terminal.cast": "second attempt\n"})
    run.append(again)
    assert again.attachments == [path]
    assert (run.path / path).read_text() == "second attempt\n"
    assert [r.attachments for r in RunDir.open(tmp_path, "run-1").records()] == [[path], [path]]
    assert not list((run.path / path).parent.glob(".*"))  # no temporary file left
    assert again.take_files() == {}  # written once


def test_episodes_whose_keys_differ_only_in_unsafe_characters_get_their_own_folders(
    tmp_path: Path,
) -> None:
    run = RunDir.create(tmp_path, make_manifest())
    paths = []
    for task in ("a/b", "a:b"):
        record = make_record(task_id=task)
        record.attach({"x.txt": task})
        run.append(record)
        paths.extend(record.attachments)
    assert len(set(paths)) == 2 and all("/" not in p.split("/")[1] for p in paths)
    assert [(run.path / p).read_text() for p in paths] == ["a/b", "a:b"]


@pytest.mark.parametrize("name", ["../escape", "sub/file", ".hidden"])
def test_an_attachment_name_must_be_a_plain_file_name(tmp_path: Path, name: str) -> None:
    run = RunDir.create(tmp_path, make_manifest())
    record = make_record()
    record.attach({name: "x"})
    with pytest.raises(ValueError, match="plain file name"):
        run.append(record)
    assert list(run.records()) == []
