"""``gem-eval results export --format atif``: real runs (the CLI against the fake model
server) exported and checked against the ATIF pydantic model and against a JSON schema
written from the RFC (tests/fixtures/atif/), with what each document must say."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema  # a dependency of litellm and mcp (the dev extra)
import pytest
from pydantic import ValidationError

from gem_eval.export.atif_schema import ATIF_VERSION, Trajectory
from tests.e2e.conftest import harness_errors
from tests.fixtures.openai_server import Fault, Reply, ToolCallSpec, serve

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "tests/fixtures/atif/atif-v1.7.schema.json").read_text())
OVERFLOW = "This model's maximum context length is 16 tokens; reduce the length of the messages."

SUITE = """\
name: atif-export
defaults:
  category: qa
  seed: 0
  samples: 1
  limits: {max_turns: 6}
  tools:
    - {name: search, corpus: ROOT/tasks/data/search/corpus.jsonl, k: 1}
tasks:
"""
TASK = """\
  - id: NAME
    env: qa:QA-v0
    dataset: {path: ROOT/tasks/qa/questions.jsonl, fields: {question: question, answer: answers}}
    tool_mode: MODE
    system_prompt: MODE NAME
"""
TASKS = {"native": "native", "text": "text", "overflow": "native", "infra": "native"}


def suite_yaml() -> str:
    tasks = "".join(
        TASK.replace("NAME", name).replace("MODE", mode) for name, mode in TASKS.items()
    )
    return (SUITE + tasks).replace("ROOT", str(ROOT))


def scripted(body: dict[str, Any]) -> Reply | Fault:
    """The fake model: per task (named in the system prompt), by turn."""
    messages = body["messages"]
    task = messages[0]["content"].split()[1]
    turn = sum(m["role"] == "assistant" for m in messages)
    if task == "infra":
        return Fault.status(503)
    if task == "native" and turn == 0:
        good = ToolCallSpec("search", {"query": "Verran Lighthouse"}, id="call_good")
        return Reply(tool_calls=[good, ToolCallSpec("search", "{not json", id="call_bad")])
    if task == "overflow":
        if turn == 0:
            return Reply(tool_calls=[ToolCallSpec("search", {"query": "x"}, id="call_x")])
        return Fault.status(400, body={"error": {"message": OVERFLOW, "code": 400}})
    if task == "text" and turn == 0:
        return Reply(
            'Searching.\n<tool_call>{"name": "search", "arguments": {"query": "Verran"}}'
            "</tool_call>\n<search>lighthouse height</search>"
        )
    if task == "text" and turn == 1:  # numbered call_0 again: a repeated id to rename
        return Reply('<tool_call>{"name": "search", "arguments": {"query": "Quessel"}}</tool_call>')
    return Reply("<answer>Odile Marchetti</answer>")


def gem_eval(*args: str, results: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GEM_EVAL_RESULTS": str(results), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "gem_eval", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=env,
    )


class Exported:
    def __init__(self, results: Path, out: Path, export: subprocess.CompletedProcess[str]):
        self.results, self.out, self.export = results, out, export
        self.files = sorted(out.glob("*.json"))
        self.raw = {p: json.loads(p.read_text()) for p in self.files}
        self.by_task = {doc["extra"]["task_id"]: doc for doc in self.raw.values()}


def run_file(exported: Exported, name: str) -> str:
    [run_dir] = [p for p in exported.results.iterdir() if (p / "manifest.json").exists()]
    return (run_dir / name).read_text()


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Exported]:
    base = tmp_path_factory.mktemp("atif")
    suite = base / "suite.yaml"
    suite.write_text(suite_yaml())
    results, out = base / "results", base / "out"
    with serve(scripted) as server:
        run = gem_eval(
            "run", "--suite", str(suite), "--model", "openai/fake", "-q", "--limit", "1",
            "--model-base-url", server.base_url, "--max-retries", "0",
            results=results,
        )  # fmt: skip
    assert run.returncode == 3, run.stdout + run.stderr  # the infra_error: not scored
    assert not harness_errors(results)
    export = gem_eval("results", "export", "latest", "--format", "atif", "--out", str(out),
                      results=results)  # fmt: skip
    yield Exported(results, out, export)


def test_one_document_per_episode_and_one_summary_line(exported: Exported) -> None:
    assert exported.export.returncode == 0, exported.export.stderr
    [line] = exported.export.stdout.strip().splitlines()
    run_id = next(iter(exported.raw.values()))["extra"]["run_id"]
    assert "atif-export" in run_id
    assert line == f"exported 4 episodes of {run_id} as atif: 4 files in {exported.out}"
    assert sorted(exported.by_task) == ["infra", "native", "overflow", "text"]
    for path, doc in exported.raw.items():
        assert path.name.startswith("openai-fake-" + doc["extra"]["task_id"])
        assert doc["session_id"] == f"{doc['extra']['run_id']}/{doc['extra']['key']}"


@pytest.mark.parametrize("task", ["native", "text", "overflow", "infra"])
def test_every_document_validates_against_the_model_and_the_json_schema(
    exported: Exported, task: str
) -> None:
    doc = exported.by_task[task]
    assert doc["schema_version"] == ATIF_VERSION == "ATIF-v1.7"
    Trajectory.model_validate_json(json.dumps(doc))
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)


def test_native_tool_calls_match_their_results_and_keep_bad_arguments(exported: Exported) -> None:
    doc = exported.by_task["native"]
    system, user, call, answer = doc["steps"]
    assert (system["source"], system["message"]) == ("system", "native native")
    [record] = [json.loads(line) for line in run_file(exported, "episodes.jsonl").splitlines()
                if json.loads(line)["task_id"] == "native"]  # fmt: skip
    assert user == {"step_id": 2, "source": "user",
                    "message": record["trajectory"]["initial_observation"]}  # fmt: skip
    assert [c["tool_call_id"] for c in call["tool_calls"]] == ["call_good", "call_bad"]
    good, bad = call["tool_calls"]
    assert good == {
        "tool_call_id": "call_good",
        "function_name": "search",
        "arguments": {"query": "Verran Lighthouse"},
    }
    assert bad["arguments"] == {} and bad["extra"] == {"raw_arguments": "{not json"}
    results = call["observation"]["results"]
    assert [r["source_call_id"] for r in results] == ["call_good", "call_bad"]
    assert "Verran" in results[0]["content"] and results[0]["extra"]["is_error"] is False
    assert results[1]["extra"]["is_error"] is True and "JSON" in results[1]["content"]
    assert call["llm_call_count"] == 1 and call["metrics"]["prompt_tokens"] > 0
    assert call["extra"] == {"reward": 0.0, "finish_reason": "tool_calls"}
    # The answer went to the env: its reply is a result without a call id.
    assert answer["message"] == "<answer>Odile Marchetti</answer>" and "tool_calls" not in answer
    [env_reply] = answer["observation"]["results"]
    assert "source_call_id" not in env_reply and env_reply["extra"] == {"env_step": True}
    assert answer["extra"]["terminated"] is True and answer["extra"]["reward"] in (0.0, 1.0)
    facts = doc["extra"]
    assert facts["outcome"] == "completed" and facts["score"] == answer["extra"]["reward"]
    assert facts["env_id"] == "qa:QA-v0" and (facts["sample"], facts["seed"]) == (0, 0)
    totals = doc["final_metrics"]
    steps = [s for s in doc["steps"] if s["source"] == "agent"]
    assert totals["total_prompt_tokens"] == sum(s["metrics"]["prompt_tokens"] for s in steps)
    assert totals["total_steps"] == 4


def test_text_protocol_calls_get_objects_and_ids_unique_in_the_document(
    exported: Exported,
) -> None:
    doc = exported.by_task["text"]
    system, _user, first, second, _answer = doc["steps"]
    assert system["message"].startswith("text text\n\nYou can call tools.")
    assert doc["agent"]["extra"] == {"tool_mode": "text"}
    assert [d["function"]["name"] for d in doc["agent"]["tool_definitions"]] == ["search"]
    tagged = f"search_{first['message'].index('<search>')}"
    assert [(c["tool_call_id"], c["arguments"]) for c in first["tool_calls"]] == [
        ("call_0", {"query": "Verran"}),
        (tagged, {"query": "lighthouse height"}),
    ]
    # The second reply's call_0 is renamed, on the call and on its result alike.
    [again] = second["tool_calls"]
    assert again["tool_call_id"] == "call_0#4" and again["arguments"] == {"query": "Quessel"}
    [result] = second["observation"]["results"]
    assert result["source_call_id"] == "call_0#4" and result["content"]
    ids = [c["tool_call_id"] for s in doc["steps"] for c in s.get("tool_calls", [])]
    assert len(ids) == len(set(ids)) == 3
    for step in doc["steps"]:
        calls = {c["tool_call_id"] for c in step.get("tool_calls", [])}
        for r in step.get("observation", {}).get("results", []):
            assert r.get("source_call_id") is None or r["source_call_id"] in calls


def test_a_model_error_keeps_the_steps_before_it(exported: Exported) -> None:
    doc = exported.by_task["overflow"]
    assert [s["source"] for s in doc["steps"]] == ["system", "user", "agent"]
    [call] = doc["steps"][2]["tool_calls"]
    assert doc["steps"][2]["observation"]["results"][0]["source_call_id"] == call["tool_call_id"]
    facts = doc["extra"]
    assert facts["outcome"] == "model_error" and facts["score"] == 0.0
    assert "maximum context length" in facts["error"]


def test_an_infra_error_exports_with_no_agent_step_and_no_score(exported: Exported) -> None:
    doc = exported.by_task["infra"]
    assert [s["source"] for s in doc["steps"]] == ["system", "user"]
    facts = doc["extra"]
    assert facts["outcome"] == "infra_error" and facts["score"] is None
    assert "503" in facts["error"]
    assert doc["final_metrics"]["total_prompt_tokens"] == 0


# -- the model and the schema reject what the RFC forbids ---------------------------------


def _doc(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema_version": "ATIF-v1.7",
        "agent": {"name": "a", "version": "1"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "hi"},
            {
                "step_id": 2,
                "source": "agent",
                "message": "",
                "tool_calls": [{"tool_call_id": "c1", "function_name": "f", "arguments": {}}],
                "observation": {"results": [{"source_call_id": "c1", "content": "ok"}]},
            },
        ],
    }
    for path, value in changes.items():
        target: Any = doc
        *parents, last = path.split("__")
        for key in parents:
            target = target[int(key)] if key.isdigit() else target[key]
        target[last] = value
    return doc


BROKEN: dict[str, dict[str, Any]] = {
    "unknown version": {"schema_version": "ATIF-v2.0"},
    "step ids not from 1": {"steps__0__step_id": 2},
    "a result for another call": {"steps__1__observation": {"results": [{"source_call_id": "c9"}]}},
    "tool calls on a user step": {"steps__0__tool_calls": []},
    "an unknown field": {"steps__0__mood": "fine"},
    "no steps": {"steps": []},
    "a bad source": {"steps__0__source": "tool"},
    "arguments not an object": {
        "steps__1__tool_calls": [{"tool_call_id": "c1", "function_name": "f", "arguments": "x"}]
    },
    "no agent version": {"agent": {"name": "a"}},
}
# Cross-field rules a JSON schema cannot state: the pydantic model alone checks them.
MODEL_ONLY = {"step ids not from 1", "a result for another call", "tool calls on a user step"}


def test_the_unbroken_document_is_valid() -> None:
    Trajectory.model_validate(_doc())
    jsonschema.Draft202012Validator(SCHEMA).validate(_doc())


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_documents_are_rejected(name: str) -> None:
    doc = _doc(**BROKEN[name])
    with pytest.raises(ValidationError):
        Trajectory.model_validate(doc)
    if name not in MODEL_ONLY:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.Draft202012Validator(SCHEMA).validate(doc)


# -- errors are one line -------------------------------------------------------------------


def test_a_missing_run_and_an_empty_run_are_one_line_errors(tmp_path: Path) -> None:
    from gem_eval.records import RunManifest
    from gem_eval.store import RunDir

    results = tmp_path / "results"
    results.mkdir()
    missing = gem_eval("results", "export", "nope", "--out", str(tmp_path / "o"), results=results)
    assert missing.returncode == 2 and missing.stderr.startswith("error: no run 'nope'")
    assert len(missing.stderr.strip().splitlines()) == 1

    manifest = RunManifest(
        run_id="empty-run", suite="s", suite_hash="h", models=[], tasks=[],
        episodes_planned=1, gem_eval_version="0", host="h", started_at=0.0,
    )  # fmt: skip
    RunDir.create(results, manifest)
    empty = gem_eval("results", "export", "empty-run", "--out", str(tmp_path / "o"),
                     results=results)  # fmt: skip
    assert empty.returncode == 2
    assert empty.stderr == "error: run empty-run has no episodes to export\n"
    assert not (tmp_path / "o").exists()

    bad = gem_eval("results", "export", "empty-run", "--format", "parquet", "--out", "o",
                   results=results)  # fmt: skip
    assert bad.returncode == 2 and "parquet" in bad.stderr and "atif" in bad.stderr


# -- episodes that end early: built by hand, as the agent loop leaves them ---------------


def _record(trajectory: Any) -> Any:
    from gem_eval.records import EpisodeRecord

    return EpisodeRecord(
        run_id="r", key="m|t|0|0", model="m", task_id="t", sample=0, epoch=0,
        outcome=trajectory.outcome if trajectory else "harness_error", score=None,
        success=False, turns=0, started_at=0.0, finished_at=1.0, trajectory=trajectory,
    )  # fmt: skip


def test_an_episode_whose_reset_failed_is_one_empty_system_step() -> None:
    from gem_eval.export.atif import to_atif
    from gem_eval.trajectory import Trajectory as Episode

    failed = Episode(env_id="e", model="m", outcome="env_error", error="ValueError: no data")
    for record in (_record(failed), _record(None)):
        doc = json.loads(to_atif(record).to_json())
        jsonschema.Draft202012Validator(SCHEMA).validate(doc)
        assert doc["steps"] == [
            {"step_id": 1, "source": "system", "message": "", "extra": {"empty_episode": True}}
        ]
        assert doc["extra"]["outcome"] == record.outcome
    assert json.loads(to_atif(_record(failed)).to_json())["extra"]["error"] == "ValueError: no data"


def test_a_step_added_to_grade_without_a_model_call_has_no_llm_call() -> None:
    """A limit ended the episode before any model call; the env graded its end state on a
    step the loop added (``_finish_unanswered``): no LLM call, so no metrics."""
    from gem_eval.export.atif import to_atif
    from gem_eval.models.base import ModelOutput
    from gem_eval.trajectory import Step
    from gem_eval.trajectory import Trajectory as Episode

    graded = Step(index=0, output=ModelOutput(), action="", reward=1.0, truncated=True)
    episode = Episode(
        env_id="e", model="m", outcome="truncated", truncated_by="max_time",
        messages=[{"role": "user", "content": "go"}], steps=[graded],
    )  # fmt: skip
    doc = json.loads(to_atif(_record(episode)).to_json())
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    user, agent = doc["steps"]
    assert user == {"step_id": 1, "source": "user", "message": "go"}
    assert agent["llm_call_count"] == 0 and "metrics" not in agent
    assert agent["extra"] == {"reward": 1.0, "terminated": False, "truncated": True}
    assert doc["extra"]["truncated_by"] == "max_time"
