"""``gem-eval results import``: inspect_ai, Harbor and lm-eval results become runs.

The logs are written here from each format's published schema (inspect_ai's
``log/_log.py`` and ``.eval`` recorder, Harbor's ``TrialResult`` and ATIF, lm-eval's
``result_schema.py``), small but with the fields those harnesses write.
"""

from __future__ import annotations

import json
import sys
import types
import zipfile
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gem_eval.cli import main
from gem_eval.cli.app import app
from gem_eval.errors import UserError
from gem_eval.records import EpisodeRecord, RunManifest
from gem_eval.store import Index, RunDir
from gem_eval.store.importers import import_results, read_runs
from gem_eval.store.importers._common import sample_number
from gem_eval.store.importers.inspect import value_to_float

TASK = "arith"

# --- inspect_ai -----------------------------------------------------------------------


def inspect_sample(sample_id: int | str, value: Any, **more: Any) -> dict[str, Any]:
    """An ``EvalSample`` with a tool call, its result and the final answer."""
    return {
        "id": sample_id,
        "epoch": 1,
        "input": f"What is question {sample_id}?",
        "target": "4",
        "messages": [
            {"role": "system", "content": "You are helpful.", "source": "input"},
            {"role": "user", "content": f"What is question {sample_id}?", "source": "input"},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "Let me compute."}],
                "tool_calls": [
                    {"id": "call_1", "function": "python", "arguments": {"code": "print(2+2)"}}
                ],
                "model": "gpt-x",
                "source": "generate",
            },
            {"role": "tool", "content": "4\n", "tool_call_id": "call_1", "function": "python"},
            {"role": "assistant", "content": "ANSWER: 4", "source": "generate"},
        ],
        "output": {"model": "gpt-x", "choices": []},
        "scores": {"match": {"value": value, "answer": "4", "explanation": "ANSWER: 4"}},
        "metadata": {},
        "store": {},
        "events": [],
        "model_usage": {
            "openai/gpt-x": {
                "input_tokens": 100,
                "output_tokens": 20,
                "total_tokens": 130,
                "input_tokens_cache_read": 10,
                "total_cost": 0.001,
            }
        },
        "started_at": "2026-11-30T10:00:01+00:00",
        "completed_at": "2026-11-30T10:00:04+00:00",
        "total_time": 3.0,
        "working_time": 2.5,
        "uuid": f"uuid-{sample_id}",
        "attachments": {},
        **more,
    }


def inspect_header(model: str, status: str = "success") -> dict[str, Any]:
    """An ``EvalLog`` without its samples (what ``header.json`` holds)."""
    return {
        "version": 2,
        "status": status,
        "eval": {
            "eval_id": f"eval-{model}",
            "run_id": "run-1",
            "created": "2026-11-30T10:00:00+00:00",
            "task": TASK,
            "task_id": "task-1",
            "task_version": 0,
            "dataset": {"name": "arith", "samples": 3, "sample_ids": [1, "two", 3]},
            "model": model,
            "config": {"epochs": 1},
            "packages": {"inspect_ai": "0.3.150"},
        },
        "plan": {"name": "plan", "steps": [], "config": {}},
        "results": {"total_samples": 3, "completed_samples": 3, "scores": []},
        "stats": {
            "started_at": "2026-11-30T10:00:00+00:00",
            "completed_at": "2026-11-30T10:01:00+00:00",
            "model_usage": {},
        },
    }


def write_inspect_json(path: Path) -> Path:
    """Model A: sample 1 correct, "two" wrong, 3 failed with an error."""
    log = inspect_header("openai/gpt-x")
    log["samples"] = [
        inspect_sample(1, "C"),
        inspect_sample("two", "I"),
        inspect_sample(
            3,
            None,
            scores=None,
            error={"message": "RateLimitError: 429", "traceback": "", "traceback_ansi": ""},
        ),
    ]
    path.write_text(json.dumps(log, indent=2))
    return path


def write_inspect_eval(path: Path, compression: int = zipfile.ZIP_DEFLATED) -> Path:
    """Model B as a ``.eval`` zip: 1 wrong, "two" correct (its answer stored as an
    attachment), 3 partly right after hitting the message limit."""
    two = inspect_sample("two", "C")
    two["messages"][-1]["content"] = "attachment://f00d"
    two["attachments"] = {"f00d": "ANSWER: 4 (from the attachment)"}
    samples = [
        inspect_sample(1, "I"),
        two,
        inspect_sample(3, "P", limit={"type": "message", "limit": 5}),
    ]
    with zipfile.ZipFile(path, "w", compression=compression) as z:
        z.writestr("_journal/start.json", json.dumps({"version": 2}))
        for s in samples:
            z.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
        summaries = [
            {k: s[k] for k in ("id", "epoch", "input", "target", "scores")} for s in samples
        ]
        z.writestr("summaries.json", json.dumps(summaries))
        z.writestr("header.json", json.dumps(inspect_header("anthropic/claude-y")))
    return path


# --- Harbor ---------------------------------------------------------------------------


def trial_result(task: str, trial: str, reward: float | None, exception: bool) -> dict[str, Any]:
    """A ``TrialResult`` as Harbor writes it to ``<trial>/result.json``."""
    return {
        "id": "5f0c7a3e-0000-4000-8000-000000000001",
        "task_name": task,
        "trial_name": trial,
        "trial_uri": f"file:///jobs/job-1/{trial}",
        "task_id": {"path": f"datasets/tb/{task}"},
        "source": "terminal-bench",
        "task_checksum": f"sha-{task}",
        "config": {
            "task": {"path": f"datasets/tb/{task}", "source": "terminal-bench"},
            "trial_name": trial,
            "agent": {"name": "terminus-2", "model_name": "openai/gpt-x"},
        },
        "agent_info": {
            "name": "terminus-2",
            "version": "2.0.0",
            "model_info": {"name": "gpt-x", "provider": "openai"},
        },
        "agent_result": {
            "n_input_tokens": 1500,
            "n_cache_tokens": 500,
            "n_output_tokens": 300,
            "cost_usd": 0.02,
        },
        "verifier_result": None if reward is None else {"rewards": {"reward": reward}},
        "exception_info": (
            {
                "exception_type": "DockerBuildError",
                "exception_message": "image build failed",
                "exception_traceback": "Traceback ...",
                "occurred_at": "2026-11-30T11:00:30",
            }
            if exception
            else None
        ),
        "started_at": "2026-11-30T11:00:00.000000Z",
        "finished_at": "2026-11-30T11:02:00.000000Z",
    }


ATIF = {
    "schema_version": "ATIF-v1.5",
    "session_id": "s-1",
    "agent": {"name": "terminus-2", "version": "2.0.0", "model_name": "openai/gpt-x"},
    "steps": [
        {"step_id": 1, "source": "system", "message": "You are in a terminal."},
        {"step_id": 2, "source": "user", "message": "Create hello.txt saying hi."},
        {
            "step_id": 3,
            "source": "agent",
            "model_name": "openai/gpt-x",
            "message": "I will write the file.",
            "tool_calls": [
                {
                    "tool_call_id": "c1",
                    "function_name": "bash",
                    "arguments": {"command": "echo hi > hello.txt"},
                }
            ],
            "observation": {"results": [{"source_call_id": "c1", "content": "(no output)"}]},
            "metrics": {"prompt_tokens": 1500, "completion_tokens": 300},
        },
        {"step_id": 4, "source": "agent", "message": "Done."},
    ],
    "final_metrics": {"total_prompt_tokens": 1500, "total_completion_tokens": 300},
}


def write_harbor_job(root: Path, name: str = "job-1") -> Path:
    """A job of two trials: one solved, one that failed before the verifier ran."""
    job = root / name
    job.mkdir(parents=True)
    (job / "config.json").write_text(json.dumps({"job_name": name, "n_attempts": 1}))
    job_result = {
        "id": "job",
        "started_at": "2026-11-30T11:00:00Z",
        "n_total_trials": 2,
        "stats": {"n_trials": 2, "n_errors": 1},
        # Harbor's JobResult may list its trials' results: names in a job's result.json
        # must not make the job look like a trial.
        "trial_results": [{"trial_name": "hello-world__AbC1234", "task_name": "hello-world"}],
    }
    (job / "result.json").write_text(json.dumps(job_result))
    for task, trial, reward, exception in (
        ("hello-world", "hello-world__AbC1234", 1.0, False),
        ("fix-git", "fix-git__Xy98765", 0.0, True),  # the verifier graded the broken trial
    ):
        (job / trial / "agent").mkdir(parents=True)
        (job / trial / "verifier").mkdir()
        result = trial_result(task, trial, reward, exception)
        (job / trial / "result.json").write_text(json.dumps(result, indent=2))
        if not exception:
            (job / trial / "agent" / "trajectory.json").write_text(json.dumps(ATIF))
    return job


# --- lm-eval --------------------------------------------------------------------------

DATE = "2026-11-30T12-00-00.123456"


def write_lm_eval(root: Path, model: str, correct: list[bool]) -> Path:
    """``OUT/<model>/results_<date>.json`` and ``samples_arc_easy_<date>.jsonl`` (a
    multiple-choice task: acc under the filter ``none``) for one model."""
    out = root / model.replace("/", "__")
    out.mkdir(parents=True)
    lines = []
    for doc_id, ok in enumerate(correct):
        choices = ["red", "blue"]
        logliks = (
            [["-0.5", "True"], ["-2.0", "False"]] if ok else [["-3.0", "False"], ["-0.1", "True"]]
        )
        sample = {
            "doc_id": doc_id,
            "doc": {"question": f"Q{doc_id}", "choices": choices, "answerKey": "A"},
            "target": "0",
            "arguments": {
                f"gen_args_{i}": {"arg_0": f"Question: Q{doc_id}\nAnswer:", "arg_1": f" {c}"}
                for i, c in enumerate(choices)
            },
            "resps": [[pair] for pair in logliks],
            "filtered_resps": logliks,
            "filter": "none",
            "metrics": ["acc", "acc_norm"],
            "doc_hash": f"dochash{doc_id}",
            "prompt_hash": f"prompthash{doc_id}",
            "target_hash": "targethash",
            "acc": 1.0 if ok else 0.0,
            "acc_norm": 1.0,
        }
        lines.append(json.dumps(sample))
    (out / f"samples_arc_easy_{DATE}.jsonl").write_text("\n".join(lines) + "\n")
    results = {
        "results": {
            "arc_easy": {
                "alias": "arc_easy",
                "acc,none": sum(correct) / len(correct),
                "acc_stderr,none": 0.1,
                "acc_norm,none": 1.0,
                "acc_norm_stderr,none": 0.0,
            }
        },
        "group_subtasks": {"arc_easy": []},
        "configs": {
            "arc_easy": {
                "task": "arc_easy",
                "output_type": "multiple_choice",
                "metric_list": [
                    {"metric": "acc", "aggregation": "mean", "higher_is_better": True},
                    {"metric": "acc_norm", "aggregation": "mean", "higher_is_better": True},
                ],
            }
        },
        "versions": {"arc_easy": 1.0},
        "n-shot": {"arc_easy": 0},
        "higher_is_better": {"arc_easy": {"acc": True, "acc_norm": True}},
        "n-samples": {"arc_easy": {"original": 2376, "effective": len(correct)}},
        "config": {"model": "hf", "model_args": f"pretrained={model}", "batch_size": 1},
        "git_hash": "abc1234",
        "date": 1796040000.0,
        "model_source": "hf",
        "model_name": model,
        "model_name_sanitized": model.replace("/", "__"),
        "lm_eval_version": "0.4.9",
        "total_evaluation_time_seconds": "12.5",
    }
    path = out / f"results_{DATE}.json"
    path.write_text(json.dumps(results, indent=2))
    return path


# --- helpers --------------------------------------------------------------------------


def load(results: Path, run_id: str) -> tuple[RunManifest, dict[tuple[str, int], EpisodeRecord]]:
    run = RunDir(results / run_id)
    records = {(r.task_id, r.sample): r for r in run.latest_by_key().values()}
    return run.read_manifest(), records


def cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "250"})


# --- tests ----------------------------------------------------------------------------


def test_inspect_json_log_becomes_a_run(tmp_path: Path) -> None:
    results = tmp_path / "results"
    [run_id] = import_results(write_inspect_json(tmp_path / "a.json"), results)
    manifest, records = load(results, run_id)
    assert manifest.suite == TASK and [m.name for m in manifest.models] == ["openai/gpt-x"]
    assert manifest.extra["imported"]["source"] == "inspect_ai"
    assert manifest.extra["imported"]["version"] == "0.3.150"  # eval.packages
    assert manifest.status == "finished" and manifest.episodes_planned == 3
    two = sample_number("two", {})
    assert set(records) == {(TASK, 1), (TASK, two), (TASK, 3)}
    first = records[(TASK, 1)]
    assert (first.outcome, first.score, first.success, first.epoch) == ("completed", 1.0, True, 0)
    assert (records[(TASK, two)].score, records[(TASK, two)].success) == (0.0, False)
    failed = records[(TASK, 3)]
    assert failed.outcome == "infra_error" and failed.score is None and not failed.scored
    assert failed.trajectory is not None and "429" in (failed.trajectory.error or "")
    # tokens: input_tokens excludes the cache reads, which count as input
    assert (first.input_tokens, first.output_tokens, first.cost_usd) == (110, 20, 0.001)
    assert first.latency_s == 3.0 and first.finished_at - first.started_at == 3.0
    traj = first.trajectory
    assert traj is not None and first.turns == 2
    assert traj.messages[2]["tool_calls"][0]["function"] == {
        "name": "python",
        "arguments": json.dumps({"code": "print(2+2)"}),
    }
    assert traj.steps[0].tool_events[0].output == "4\n"
    assert traj.messages[3] == {"role": "tool", "content": "4\n", "tool_call_id": "call_1"}


def test_inspect_eval_zip_and_json_compare_by_sample_id(tmp_path: Path) -> None:
    results = tmp_path / "results"
    [a] = import_results(write_inspect_json(tmp_path / "a.json"), results)
    [b] = import_results(write_inspect_eval(tmp_path / "b.eval"), results, source="inspect")
    manifest_a, _ = load(results, a)
    manifest_b, records = load(results, b)
    assert manifest_b.extra["imported"]["source"] == "inspect_ai"
    assert manifest_a.suite_hash == manifest_b.suite_hash  # the same task and samples
    two = sample_number("two", {})
    assert records[(TASK, two)].score == 1.0
    traj = records[(TASK, two)].trajectory
    assert traj is not None and traj.messages[-1]["content"] == "ANSWER: 4 (from the attachment)"
    limited = records[(TASK, 3)]
    assert (limited.outcome, limited.score, limited.scored) == ("truncated", 0.5, True)

    result = cli("compare", a, b, "--results-dir", str(results))
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output  # equal suite hashes
    from gem_eval.metrics.compare import compare_runs

    with Index.for_root(results) as index:
        cmp = compare_runs(index.episodes_frame([a]), index.episodes_frame([b]))
    # sample 3 failed in A: only 1 and "two" pair, each with its own counterpart
    assert cmp.n_pairs == 2 and (cmp.base_mean, cmp.new_mean) == (0.5, 0.5)


def test_harbor_job_with_a_failed_trial(tmp_path: Path) -> None:
    results = tmp_path / "results"
    [run_id] = import_results(write_harbor_job(tmp_path / "jobs"), results)
    manifest, records = load(results, run_id)
    assert manifest.suite == "terminal-bench" and manifest.extra["imported"]["source"] == "harbor"
    # no lock.json: the Harbor version is unknown; the trajectories' ATIF version is known
    assert manifest.extra["imported"]["version"] is None
    assert manifest.extra["imported"]["atif_versions"] == ["ATIF-v1.5"]
    assert [m.name for m in manifest.models] == ["openai/gpt-x"]
    solved = records[("hello-world", 0)]
    assert (solved.outcome, solved.score, solved.success) == ("completed", 1.0, True)
    assert (solved.input_tokens, solved.output_tokens, solved.cost_usd) == (1500, 300, 0.02)
    assert solved.latency_s == 120.0 and solved.turns == 2
    traj = solved.trajectory
    assert traj is not None
    assert [m["role"] for m in traj.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert traj.messages[2]["tool_calls"][0]["function"]["name"] == "bash"
    assert traj.steps[0].tool_events[0].output == "(no output)"
    broken = records[("fix-git", 0)]
    assert broken.outcome == "infra_error" and broken.score is None and not broken.scored
    assert broken.trajectory is not None
    assert broken.trajectory.error == (
        "DockerBuildError: image build failed (the verifier's reward 0 after it is not counted)"
    )


def test_harbor_agent_timeout_is_scored_as_truncated(tmp_path: Path) -> None:
    job = write_harbor_job(tmp_path / "jobs")
    path = job / "fix-git__Xy98765" / "result.json"
    result = json.loads(path.read_text())
    result["exception_info"]["exception_type"] = "AgentTimeoutError"
    path.write_text(json.dumps(result))
    [run_id] = import_results(job, tmp_path / "results")
    timed_out = load(tmp_path / "results", run_id)[1][("fix-git", 0)]
    assert (timed_out.outcome, timed_out.score, timed_out.scored) == ("truncated", 0.0, True)


def test_lm_eval_two_models_share_a_leaderboard_and_compare(tmp_path: Path) -> None:
    results = tmp_path / "results"
    out = tmp_path / "lm_out"
    write_lm_eval(out, "org/small", [True, False, False, True])
    write_lm_eval(out, "org/big", [True, True, True, False])
    big, small = import_results(out, results)  # a directory: its results files, by path
    manifest, records = load(results, small)
    assert manifest.suite == "arc_easy" and manifest.extra["imported"]["source"] == "lm-eval"
    assert manifest.extra["imported"]["metrics"] == {"arc_easy": "acc,none"}
    assert manifest.extra["imported"]["version"] == "0.4.9"
    assert [r.score for _, r in sorted(records.items())] == [1.0, 0.0, 0.0, 1.0]
    wrong = records[("arc_easy", 1)].trajectory
    assert wrong is not None and wrong.messages[1] == {"role": "assistant", "content": " blue"}
    assert load(results, big)[0].suite_hash == manifest.suite_hash

    result = cli("leaderboard", "--format", "json", "--results-dir", str(results))
    assert result.exit_code == 0, result.output
    rows = {row["model"]: row for row in json.loads(result.output)}
    assert set(rows) == {"org/small", "org/big"}
    result = cli("compare", small, big, "--results-dir", str(results))
    assert result.exit_code == 0, result.output
    assert "4" in result.output


def test_one_leaderboard_spans_the_three_harnesses(tmp_path: Path) -> None:
    results = tmp_path / "results"
    import_results(write_inspect_json(tmp_path / "a.json"), results)
    write_harbor_job(tmp_path / "jobs")
    import_results(tmp_path / "jobs", results)  # a directory of jobs
    import_results(write_lm_eval(tmp_path / "lm", "org/small", [True, False]), results)
    result = cli("leaderboard", "--by", "task", "--format", "json", "--results-dir", str(results))
    assert result.exit_code == 0, result.output
    rows = {(row["model"], row["task_id"]) for row in json.loads(result.output)}
    assert rows == {
        ("openai/gpt-x", TASK),
        ("openai/gpt-x", "hello-world"),
        ("openai/gpt-x", "fix-git"),
        ("org/small", "arc_easy"),
    }


@pytest.mark.parametrize("under", ["jobs", "everything/jobs"])
def test_a_folder_of_jobs_named_as_harbor_names_them(tmp_path: Path, under: str) -> None:
    """Harbor names a job ``<date>__<time>``, as it names a trial ``<task>__<id>``: the
    job is told by its result.json, also in a folder that holds the jobs folder and other
    harnesses' logs."""
    results = tmp_path / "results"
    jobs = tmp_path / under
    write_harbor_job(jobs, "2026-11-30__11-00-00")
    write_harbor_job(jobs, "2026-11-30__12-00-00")  # a second job of the same trials
    (tmp_path / "everything" / "logs").mkdir(parents=True)
    (tmp_path / "everything" / "logs" / "loop").symlink_to(tmp_path / "everything")
    write_inspect_json(tmp_path / "everything" / "logs" / "a.json")
    runs = read_runs(tmp_path / under.split("/")[0])
    harbor_runs = [r for r in runs if r.source == "harbor"]
    assert [r.details["job_name"] for r in harbor_runs] == [
        "2026-11-30__11-00-00",
        "2026-11-30__12-00-00",
    ]
    assert all(len(r.episodes) == 2 for r in harbor_runs)
    assert [r.source for r in runs if r.source != "harbor"] == (
        ["inspect_ai"] if under.startswith("everything") else []
    )
    top = tmp_path / under.split("/")[0]
    result = cli("results", "import", str(top), "--results-dir", str(results))
    assert result.exit_code == 0, result.output
    assert result.output.count("(harbor, suite terminal-bench") == 2


def test_reimport_creates_no_second_run(tmp_path: Path) -> None:
    results = tmp_path / "results"
    log = write_inspect_json(tmp_path / "a.json")
    [run_id] = import_results(log, results)
    copy = tmp_path / "copy.json"
    copy.write_bytes(log.read_bytes())
    with pytest.raises(UserError, match=f"already imported as run {run_id}"):
        import_results(copy, results)  # the same bytes under another name
    assert [p.name for p in results.iterdir() if p.is_dir()] == [run_id]


def test_cli_import_prints_runs_and_refuses_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    job = write_harbor_job(tmp_path / "jobs")
    result = cli("results", "import", str(job), "--results-dir", str(results))
    assert result.exit_code == 0, result.output
    assert "(harbor, suite terminal-bench, openai/gpt-x): 2 episodes, 1 scored, 1 not scored" in (
        result.output
    )

    out = tmp_path / "lm"
    path = write_lm_eval(out, "org/small", [True, True])
    samples = path.parent / f"samples_arc_easy_{DATE}.jsonl"
    samples.write_text(samples.read_text() + "{not json\n")
    for argv, expected in (
        ([str(samples)], f"error: {samples}:3: not JSON"),
        ([str(job), "--source", "nope"], "error: unknown source 'nope'"),
        ([str(tmp_path / "missing"), "--source", "nope"], "error: unknown source 'nope'"),
        ([str(tmp_path / "missing.eval")], "no such file"),
        ([str(job)], "already imported as run"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(["results", "import", *argv, "--results-dir", str(results)])
        err = capsys.readouterr().err
        assert exit_info.value.code == 2
        assert err.startswith(expected) or expected in err, err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    shown = cli("results", "import", "--help")
    assert "--source [inspect|harbor|lm-eval]" in shown.output


def test_corpus_metric_and_unreadable_score_are_refused(tmp_path: Path) -> None:
    path = write_lm_eval(tmp_path / "lm", "org/small", [True])
    data = json.loads(path.read_text())
    data["configs"]["arc_easy"]["metric_list"] = [{"metric": "bleu"}]
    path.write_text(json.dumps(data))
    samples = path.parent / f"samples_arc_easy_{DATE}.jsonl"
    row = json.loads(samples.read_text())
    row["bleu"] = [["ref"], "pred"]
    samples.write_text(json.dumps(row) + "\n")
    with pytest.raises(UserError, match=r":1: metric 'bleu' is not a per-sample number"):
        import_results(path, tmp_path / "results")

    log = tmp_path / "odd.json"
    data = inspect_header("m")
    data["samples"] = [inspect_sample(1, "maybe")]
    log.write_text(json.dumps(data))
    with pytest.raises(UserError, match="sample 1: cannot read the score value 'maybe'"):
        import_results(log, tmp_path / "results")


@pytest.mark.parametrize(
    ("value", "expected"),
    [("C", 1.0), ("I", 0.0), ("P", 0.5), ("N", 0.0), ("yes", 1.0), ("false", 0.0),
     (True, 1.0), (3, 3.0), ("0.25", 0.25), ({"acc": "C", "f1": 0.2}, 1.0)],
)  # fmt: skip
def test_score_values_read_as_inspect_ai_reads_them(value: Any, expected: float) -> None:
    assert value_to_float(value) == expected


def _as_zstd_entries(path: Path) -> None:
    """Mark every entry of a stored (uncompressed) zip as zstd-compressed (method 93)."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        infos = z.infolist()
    for info in infos:
        data[info.header_offset + 8 : info.header_offset + 10] = (93).to_bytes(2, "little")
    start = data.rfind(b"PK\x05\x06")
    offset = int.from_bytes(data[start + 16 : start + 20], "little")
    for _ in infos:  # central directory records: the method sits at +10
        assert data[offset : offset + 4] == b"PK\x01\x02"
        data[offset + 10 : offset + 12] = (93).to_bytes(2, "little")
        n, m, k = (
            int.from_bytes(data[offset + i : offset + i + 2], "little") for i in (28, 30, 32)
        )
        offset += 46 + n + m + k
    path.write_bytes(bytes(data))


def test_zstd_eval_entries_need_zstandard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = write_inspect_eval(tmp_path / "b.eval", compression=zipfile.ZIP_STORED)
    _as_zstd_entries(log)
    monkeypatch.setitem(sys.modules, "zstandard", None)  # not installed
    with pytest.raises(UserError, match=r"zstd-compressed .*pip install 'gem-eval\[inspect\]'"):
        import_results(log, tmp_path / "results")

    class Identity:  # a "decompressor" for entries that were stored as they are
        def stream_reader(self, source: Any, read_across_frames: bool) -> Any:
            assert read_across_frames
            return source

    fake = types.SimpleNamespace(ZstdDecompressor=Identity)
    monkeypatch.setitem(sys.modules, "zstandard", fake)
    [run_id] = import_results(log, tmp_path / "results")
    _, records = load(tmp_path / "results", run_id)
    assert records[(TASK, 1)].score == 0.0 and len(records) == 3


def test_sample_numbers_are_stable_across_imports() -> None:
    seen: dict[str, Any] = {}
    assert sample_number(7, seen) == 7 and seen == {}
    two = sample_number("two", seen)
    assert seen == {str(two): "two"} and two >= 1 << 48
    # the same id gets the same number whatever else the log holds
    assert sample_number("two", {str(n): n for n in range(5)}) == two
    assert sample_number("three", {}) != two and sample_number("7", {}) != 7


def test_lm_eval_output_path_naming_a_json_file(tmp_path: Path) -> None:
    # `--output_path out.json` writes out_<date>.json and the samples beside it
    path = write_lm_eval(tmp_path / "lm", "org/small", [False, True])
    renamed = path.with_name(f"out_{DATE}.json")
    path.rename(renamed)
    with pytest.raises(UserError, match="found no"):
        import_results(renamed, tmp_path / "results")  # not told from its name
    [run_id] = import_results(renamed, tmp_path / "results", source="lm-eval")
    _, records = load(tmp_path / "results", run_id)
    assert [records[("arc_easy", i)].score for i in (0, 1)] == [0.0, 1.0]


def test_an_import_that_creates_the_index_indexes_every_run(tmp_path: Path) -> None:
    results = tmp_path / "results"
    [first] = import_results(write_inspect_json(tmp_path / "a.json"), results)
    (results / "index.sqlite").unlink()
    [second] = import_results(write_inspect_eval(tmp_path / "b.eval"), results)
    with Index.for_root(results) as index:
        assert {r["run_id"] for r in index.runs()} == {first, second}


def test_a_log_without_any_score_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "unscored.json"
    data = inspect_header("m")
    data["samples"] = [inspect_sample(1, None, scores={}), inspect_sample(2, None, scores={})]
    log.write_text(json.dumps(data))
    with pytest.raises(UserError, match="no sample was scored"):
        import_results(log, tmp_path / "results")
    assert not (tmp_path / "results").exists()


def test_a_directory_of_inspect_logs_imports_each(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    write_inspect_json(logs / "a.json")
    write_inspect_eval(logs / "b.eval")
    (logs / "notes.json").write_text('{"not": "a log"}')
    runs = import_results(logs, tmp_path / "results")
    models = {load(tmp_path / "results", r)[0].models[0].name for r in runs}
    assert models == {"openai/gpt-x", "anthropic/claude-y"}


def test_an_imported_run_cannot_be_resumed(tmp_path: Path) -> None:
    from gem_eval.runner.session import RunOptions, plan_run

    results = tmp_path / "results"
    [run_id] = import_results(write_inspect_json(tmp_path / "log.json"), results)
    with pytest.raises(UserError, match=r"imported from inspect_ai .*cannot play it on"):
        plan_run(None, [], RunOptions(), results, resume=run_id)
