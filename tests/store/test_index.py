from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gem_eval.cli.results import results_app
from gem_eval.errors import UserError
from gem_eval.judge import JudgeSpec
from gem_eval.records import EPISODE_COLUMNS, TaskSpec
from gem_eval.store import Index, RunDir
from gem_eval.store.index import FRAME_COLUMNS, INDEX_SCHEMA_VERSION
from tests.store.test_run_dir import make_manifest, make_record, make_trajectory


def fill(root: Path, index: Index | None = None) -> None:
    """Two smoke runs and one games run, with a replayed episode, written as a runner would:
    each record to the run dir and (when given) the index."""
    plan = {
        "run-1": ("smoke", ["completed", "cancelled", "infra_error"]),
        "run-2": ("smoke", ["completed", "truncated"]),
        "run-3": ("games", ["completed"]),
    }
    for n, (run_id, (suite, outcomes)) in enumerate(plan.items()):
        manifest = make_manifest(run_id, suite=suite, started_at=1000.0 + n)
        run = RunDir.create(root, manifest)
        if index:
            index.add_run(manifest)
        for sample, outcome in enumerate(outcomes):
            for model in ("model-a", "model-b"):
                score = None if outcome in ("cancelled", "infra_error") else sample / 2
                record = make_record(run_id, model, "guess", sample, outcome, score)
                run.append(record.model_copy(update={"trajectory": make_trajectory()}))
                if index:
                    index.add_episode(record)
        # resume plays run-1's cancelled episode again
        if run_id == "run-1":
            record = make_record(run_id, "model-a", "guess", 1, "completed", 0.25)
            run.append(record)
            if index:
                index.add_episode(record)
        manifest = manifest.model_copy(update={"status": "finished", "finished_at": 2000.0})
        run.write_manifest(manifest)
        if index:
            index.update_run(manifest)


def test_wal_mode_and_schema_version(tmp_path: Path) -> None:
    with Index.for_root(tmp_path):
        pass
    conn = sqlite3.connect(tmp_path / "index.sqlite")
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [
        (INDEX_SCHEMA_VERSION,)
    ]
    conn.close()


def test_runs_list_models_status_and_episodes_done(tmp_path: Path) -> None:
    with Index.for_root(tmp_path) as index:
        fill(tmp_path, index)
        runs = index.runs()
    assert [r["run_id"] for r in runs] == ["run-1", "run-2", "run-3"]
    first = runs[0]
    assert first["models"] == ["model-a", "model-b"]
    assert first["status"] == "finished" and first["finished_at"] == 2000.0
    assert first["episodes_planned"] == 4
    # 2 completed + model-a's replayed sample 1; model-b's sample 1 is still cancelled and
    # both sample-2 episodes are infra errors: --resume would play those 3 again.
    assert first["episodes_done"] == 3


def test_a_replayed_episode_replaces_its_row(tmp_path: Path) -> None:
    with Index.for_root(tmp_path) as index:
        index.add_run(make_manifest())
        index.add_episode(make_record(sample=0, outcome="cancelled", score=None))
        index.add_episode(make_record(sample=1))
        index.add_episode(make_record(sample=0, outcome="completed", score=0.5))
        rows = index.episodes()
    assert [(r["sample"], r["outcome"], r["score"]) for r in rows] == [
        (0, "completed", 0.5),
        (1, "completed", 1.0),
    ]
    assert rows[0]["success"] is True


def test_episodes_filter_by_run_and_suite(tmp_path: Path) -> None:
    with Index.for_root(tmp_path) as index:
        fill(tmp_path, index)
        assert {r["run_id"] for r in index.episodes(suite="smoke")} == {"run-1", "run-2"}
        assert {r["run_id"] for r in index.episodes(["run-2", "run-3"])} == {"run-2", "run-3"}
        assert index.episodes(["run-3"], suite="smoke") == []
        assert index.episodes([]) == []


def test_episodes_frame_has_the_episode_columns(tmp_path: Path) -> None:
    with Index.for_root(tmp_path) as index:
        fill(tmp_path, index)
        frame = index.episodes_frame(suite="smoke")
        empty = index.episodes_frame(["nope"])
    assert list(frame.columns) == [*EPISODE_COLUMNS, "suite", "scorer", "agent"] == FRAME_COLUMNS
    assert len(frame) == 10
    assert frame["success"].dtype == bool
    assert frame["cost_usd"].dtype == float
    assert set(frame["suite"]) == {"smoke"} and set(frame["scorer"]) == {"success"}
    assert set(frame["agent"]) == {"gem-eval"}
    assert list(empty.columns) == FRAME_COLUMNS and empty.empty


def test_each_episode_carries_its_tasks_scorer_in_its_run(tmp_path: Path) -> None:
    """A run re-scored with another scorer: both runs stay in the index, each episode
    labelled with the scorer that graded it there; a judge's and a discount's detail
    are part of the label."""
    tasks = [
        TaskSpec(id="guess", env_id="game:GuessTheNumber-v0-easy"),
        TaskSpec(id="qa", env_id="qa:QA-v0", scorer="judge", judge=JudgeSpec(model="openai/j")),
    ]
    again = [t.model_copy(update={"scorer": "discounted_return", "gamma": 0.9}) for t in tasks]
    origin = {"rescored_from": {"run_id": "run-1", "scorer": "discounted_return"}}
    with Index.for_root(tmp_path) as index:
        index.add_run(make_manifest("run-1", tasks=tasks))
        index.add_run(make_manifest("run-2", tasks=again, started_at=2000.0, extra=origin))
        for run_id in ("run-1", "run-2"):
            index.add_episodes(make_record(run_id, task_id=t.id) for t in tasks)
        runs = {r["run_id"]: r for r in index.runs()}
        frame = index.episodes_frame()  # every run: the original is not hidden
    assert runs["run-1"]["scorers"] == {"guess": "success", "qa": "judge:openai/j"}
    assert runs["run-2"]["scorers"] == dict.fromkeys(("guess", "qa"), "discounted_return:0.9")
    assert (runs["run-1"]["rescore_scorer"], runs["run-2"]["rescore_scorer"]) == (
        None, "discounted_return",
    )  # fmt: skip
    assert runs["run-2"]["rescored_from"] == "run-1"
    labels = {(r, t): s for r, t, s in frame[["run_id", "task_id", "scorer"]].itertuples(False)}
    assert labels == {
        ("run-1", "guess"): "success", ("run-1", "qa"): "judge:openai/j",
        ("run-2", "guess"): "discounted_return:0.9", ("run-2", "qa"): "discounted_return:0.9",
    }  # fmt: skip


def test_an_index_without_scorers_is_rebuilt_with_them(tmp_path: Path) -> None:
    """An index written before runs had ``scorers`` (schema 3) is refilled on opening."""
    with Index.for_root(tmp_path) as index:
        fill(tmp_path, index)
    conn = sqlite3.connect(tmp_path / "index.sqlite")
    conn.execute("UPDATE schema_version SET version = 3")
    conn.execute("UPDATE runs SET scorers = NULL")
    conn.commit()
    conn.close()
    with Index.for_root(tmp_path) as index:
        assert {r["scorers"]["guess"] for r in index.runs()} == {"success"}


def test_each_episode_carries_its_tasks_agent_and_an_older_index_is_rebuilt(
    tmp_path: Path,
) -> None:
    """A run whose tasks two agents played, a run written before tasks had an agent
    (gem-eval's own loop) and imported runs (their harness): the index keeps each run's
    agents and each episode's; one written before runs had agents (schema 5) is refilled
    on opening."""
    tasks = [
        TaskSpec(id="guess", env_id="game:GuessTheNumber-v0-easy", agent="terminus-2"),
        TaskSpec(id="qa", env_id="qa:QA-v0"),
    ]
    harbor = {"imported": {"source": "harbor", "agents": ["terminus-2:openai/gpt-5"]}}
    inspect = {"imported": {"source": "inspect_ai", "scorer": "match"}}
    for manifest in (
        make_manifest("mixed", tasks=tasks),
        make_manifest("old"),
        make_manifest("harbor", extra=harbor),
        make_manifest("inspect", extra=inspect),
    ):
        run = RunDir.create(tmp_path, manifest)
        run.extend(make_record(manifest.run_id, task_id=t.id) for t in manifest.tasks)
    old = tmp_path / "old" / "manifest.json"
    written = json.loads(old.read_text())
    del written["tasks"][0]["agent"]
    old.write_text(json.dumps(written))
    with Index.for_root(tmp_path) as index:
        index.rebuild(tmp_path)
    conn = sqlite3.connect(tmp_path / "index.sqlite")
    conn.execute("UPDATE schema_version SET version = 5")
    conn.execute("UPDATE runs SET agents = NULL")
    conn.commit()
    conn.close()
    with Index.for_root(tmp_path) as index:
        runs = {r["run_id"]: r["agents"] for r in index.runs()}
        frame = index.episodes_frame()
    assert runs == {
        "mixed": {"guess": "terminus-2", "qa": "gem-eval"},
        "old": {"guess": "gem-eval"},
        "harbor": {"guess": "harbor:terminus-2"},
        "inspect": {"guess": "inspect_ai"},
    }
    played = {(r, t): a for r, t, a in frame[["run_id", "task_id", "agent"]].itertuples(False)}
    assert played == {
        ("mixed", "guess"): "terminus-2", ("mixed", "qa"): "gem-eval",
        ("old", "guess"): "gem-eval", ("harbor", "guess"): "harbor:terminus-2",
        ("inspect", "guess"): "inspect_ai",
    }  # fmt: skip


def test_rebuild_equals_incremental(tmp_path: Path) -> None:
    root = tmp_path / "results"
    with Index.for_root(root) as incremental:
        fill(root, incremental)
        expected_runs, expected_episodes = incremental.runs(), incremental.episodes()
    with Index(tmp_path / "rebuilt.sqlite") as rebuilt:
        stats = rebuilt.rebuild(root)
        assert (stats.runs, stats.episodes, stats.skipped) == (3, 12, {})
        assert rebuilt.runs() == expected_runs
        assert rebuilt.episodes() == expected_episodes


def test_rebuild_drops_gone_runs_and_reports_broken_ones(tmp_path: Path) -> None:
    with Index.for_root(tmp_path) as index:
        fill(tmp_path, index)
        (tmp_path / "run-3" / "manifest.json").write_text("{")
        stats = index.rebuild(tmp_path)
        assert stats.runs == 2 and list(stats.skipped) == ["run-3"]
        assert [r["run_id"] for r in index.runs()] == ["run-1", "run-2"]


def test_sync_run_catches_up_after_a_crash_between_the_two_writes(tmp_path: Path) -> None:
    with Index.for_root(tmp_path) as index:
        fill(tmp_path, index)
        run = RunDir.open(tmp_path, "run-2")
        run.append(make_record("run-2", "model-b", "guess", 1, "completed", 0.75))
        run.append(make_record("run-2", "model-c", "guess", 0, "completed", 1.0))
        assert index.sync_run(run) == 5
        synced = index.episodes()
    with Index(tmp_path / "rebuilt.sqlite") as rebuilt:
        rebuilt.rebuild(tmp_path)
        assert rebuilt.episodes() == synced


def test_an_index_of_another_schema_is_recreated(tmp_path: Path) -> None:
    with Index.for_root(tmp_path) as index:
        fill(tmp_path, index)
    conn = sqlite3.connect(tmp_path / "index.sqlite")
    conn.execute("UPDATE schema_version SET version = 0")
    conn.commit()
    conn.close()
    with Index.for_root(tmp_path) as index:  # written by another gem-eval: refilled at once
        assert len(index.runs()) == 3
        assert int(conn_version(tmp_path)) == INDEX_SCHEMA_VERSION


def conn_version(root: Path) -> int:
    conn = sqlite3.connect(root / "index.sqlite")
    try:
        return int(conn.execute("SELECT version FROM schema_version").fetchone()[0])
    finally:
        conn.close()


def test_a_new_index_is_left_empty_for_its_opener(tmp_path: Path) -> None:
    """Only an outdated index is refilled by the constructor; a missing one is the
    opener's to fill (the CLI's open_index rebuilds, a run indexes its own episodes)."""
    with Index.for_root(tmp_path) as index:
        fill(tmp_path, index)
    (tmp_path / "index.sqlite").unlink()
    for extra in ("-wal", "-shm"):
        (tmp_path / f"index.sqlite{extra}").unlink(missing_ok=True)
    with Index.for_root(tmp_path) as index:
        assert index.runs() == []


def test_many_episodes_are_one_transaction_and_readers_see_them(tmp_path: Path) -> None:
    with Index.for_root(tmp_path) as writer, Index.for_root(tmp_path) as reader:
        writer.add_run(make_manifest())
        statements: list[str] = []
        writer._conn.set_trace_callback(statements.append)
        writer.add_episodes(make_record(sample=i) for i in range(2000))
        assert statements.count("BEGIN IMMEDIATE") == 1
        assert statements.count("COMMIT") == 1
        assert len(reader.episodes()) == 2000


def test_readers_do_not_wait_for_a_writer(tmp_path: Path) -> None:
    with Index.for_root(tmp_path) as index:
        fill(tmp_path, index)
    writer = sqlite3.connect(tmp_path / "index.sqlite", isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # e.g. a long `results reindex`
    writer.execute("DELETE FROM episodes")
    with Index.for_root(tmp_path, busy_timeout_s=0.01) as reader:
        assert len(reader.runs()) == 3 and len(reader.episodes()) == 12
    writer.execute("ROLLBACK")
    writer.close()


# The CLI front-ends: `gem-eval results ...`.

runner = CliRunner()


def test_cli_list_builds_a_missing_index(tmp_path: Path) -> None:
    fill(tmp_path)
    result = runner.invoke(
        results_app, ["list", "--results-dir", str(tmp_path)], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    assert "3 runs" in result.output and "3/4" in result.output
    assert (tmp_path / "index.sqlite").exists()


def test_cli_reindex_and_show(tmp_path: Path) -> None:
    fill(tmp_path)
    result = runner.invoke(results_app, ["reindex"], env={"GEM_EVAL_RESULTS": str(tmp_path)})
    assert result.exit_code == 0, result.output
    assert "indexed 3 runs, 12 episodes" in result.output
    result = runner.invoke(
        results_app, ["show", "latest", "--results-dir", str(tmp_path)], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    assert "run-3" in result.output and "games" in result.output


def test_cli_unknown_run_is_a_user_error(tmp_path: Path) -> None:
    fill(tmp_path)
    result = runner.invoke(results_app, ["show", "run-4", "--results-dir", str(tmp_path)])
    assert isinstance(result.exception, UserError)
    assert "Did you mean" in str(result.exception)
    result = runner.invoke(results_app, ["list", "--results-dir", str(tmp_path / "nope")])
    assert isinstance(result.exception, UserError)


@pytest.mark.parametrize("command", ["list", "reindex"])
def test_cli_commands_without_results_dir_fail_cleanly(tmp_path: Path, command: str) -> None:
    result = runner.invoke(results_app, [command, "--results-dir", str(tmp_path / "missing")])
    assert isinstance(result.exception, UserError)
    assert not (tmp_path / "missing").exists()


def test_a_run_of_part_or_a_variant_of_its_suite_says_so(tmp_path: Path) -> None:
    """The flags that made a run other than the whole suite as written, as a command line
    says them; a re-scoring keeps its original's, and its play time."""
    part = {"options": {"tasks": ["game:Wordle*"], "samples": [0, 1, 2, 5], "limit": None}}
    varied = {"options": {"limit": 3, "overrides": {"limits": {"max_turns": 2}}}}
    origin = {**part, "rescored_from": {"run_id": "part", "scorer": None, "played_at": 1000.0}}
    with Index.for_root(tmp_path) as index:
        index.add_run(make_manifest("whole", extra={"options": {"tasks": [], "samples": []}}))
        index.add_run(make_manifest("part", extra=part))
        index.add_run(make_manifest("varied", seed=7, extra=varied))
        index.add_run(make_manifest("again", started_at=3000.0, extra=origin))
        runs = {r["run_id"]: r for r in index.runs()}
    assert {r: run["variant"] for r, run in runs.items()} == {
        "whole": None,
        "part": "--task 'game:Wordle*' --sample 0-2,5",
        "varied": "--limit 3 --seed 7 --max-turns 2",
        "again": "--task 'game:Wordle*' --sample 0-2,5",
    }
    assert (runs["part"]["played_at"], runs["again"]["played_at"]) == (1000.0, 1000.0)


def test_cli_show_says_where_a_run_played_and_where_its_time_went(tmp_path: Path) -> None:
    manifest = make_manifest("run-ray", suite="games", started_at=1000.0)
    manifest = manifest.model_copy(
        update={
            "executor": "ray",
            "resources": {
                "ray": {
                    "nodes": {"a1b2c3d4": 2, "e5f6a7b8": 1},
                    "lost": {"e5f6a7b8": "node e5f6a7b8: the Docker engine is unreachable"},
                    "retried": 1,
                }
            },
        }
    )
    run = RunDir.create(tmp_path, manifest)
    for sample, phases in enumerate([{"sandbox_start": 1.0, "agent": 2.0}, {"agent": 4.0}, {}]):
        record = make_record("run-ray", "model-a", "guess", sample, "completed", 1.0)
        run.append(record.model_copy(update={"phases": phases}))
    result = runner.invoke(
        results_app, ["show", "run-ray", "--results-dir", str(tmp_path)], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    shown = " ".join(result.output.split())
    assert (
        "ray (2 nodes: a1b2c3d4: 2, e5f6a7b8: 1); lost node e5f6a7b8: the Docker engine is "
        "unreachable; 1 episode played again on another node"
    ) in shown
    assert "sandbox_start 0.50 s, agent 3.00 s (mean of 2 episodes)" in result.output
