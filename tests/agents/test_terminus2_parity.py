"""``--agent terminus-2`` sends the model what Harbor's own Terminus-2 sends.

Harbor's CLI (``harbor run --agent terminus-2 --env docker``, from ``$HARBOR_VENV``) and
gem-eval's CLI (``gem-eval run --agent terminus-2``) each play the same two task
directories (``tests/fixtures/harbor_jobs/tasks``: ``hello-file`` solved, ``count-lines``
answered wrong) against a scripted OpenAI-compatible server of their own that answers
alike: its replies exercise Terminus-2's parser and loop (``hello-file``: JSON after a
line of extra text, a warning; ``count-lines``: no JSON at all, a parse error, then the
fix answered as a prompt too long for the model, which Terminus-2 meets by summarising
its context in three calls; both: the confirmation turn before completion). Each server
records every request it gets.

What is compared, task by task, in the order made: every request's decoded JSON body,
encoded again with sorted keys, compared byte for byte after one normalisation:

* the container's hostname (12 hex digits after ``root@`` in the shell's prompt) becomes
  ``<host>``: each harness starts its own container, and Docker names its hostname
  after the container id.

Why the bodies are decoded rather than the bytes compared: gem-eval's requests reach the
server through gem-eval (Terminus-2 sends them to the run's endpoint, and the run's
model client sends them on), so their JSON encoding (key order, spacing, escapes) is
gem-eval's client's, not the agent's; everything the agent put in them (the model name,
each message's role and text, and which fields there are) is compared. The key differs
on purpose: the episode's token stays in gem-eval (the test checks it never reaches the
server). Also compared: the verifier's verdict (gem-eval's score and Harbor's reward),
and each trajectory's steps (message, tool calls, observation; the hostname normalised,
and the trial's name, random in each harness, in the summarising subagents' ids).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import IN_CI
from tests.fixtures.openai_server import Answer, Fault, Reply, serve

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "tests" / "fixtures" / "harbor_jobs" / "tasks"
BASE = "python:3.12-slim-bookworm"
"""The tasks' base image: a local tag of gem-eval's base image unless one exists."""
CONFIRM = "Are you sure you want to mark the task as complete?"
HOST = re.compile(r"(?<=root@)[0-9a-f]{12}(?=:)")
TRIAL = re.compile(r"[\w.-]+__[0-9A-Za-z]{7}__agent")
OVERFLOW = {
    "message": "This model's maximum context length is 4096 tokens. However, your messages "
    "resulted in 5000 tokens. Please reduce the length of the messages.",
    "type": "invalid_request_error",
    "param": "messages",
    "code": "context_length_exceeded",
}
"""The error an OpenAI-compatible server answers a prompt too long for the model with."""

pytestmark = [pytest.mark.docker, pytest.mark.harbor]


def answer(request: dict[str, Any]) -> Answer:
    """Terminus-2's replies, by where its conversation is (both harnesses alike)."""
    messages = request.get("messages") or []
    first, last = (str(messages[i].get("content") or "") for i in (0, -1))
    hello = "/app/hello.txt" in first

    def reply(analysis: str, commands: list[str], complete: bool, before: str = "") -> Reply:
        keys = [{"keystrokes": k, "duration": 0.1} for k in commands]
        body = {"analysis": analysis, "plan": "Go on.", "commands": keys}
        body["task_complete"] = complete
        usage = {"prompt_tokens": 900, "completion_tokens": 60}
        return Reply(before + json.dumps(body), usage=usage)

    if CONFIRM in last:
        return reply("It is done.", [], True)
    if not hello and len(messages) == 3 and "parsing errors" in last:  # once: the overflow
        return Fault.status(400, body={"error": OVERFLOW})
    if len(messages) == 1 and hello:  # extra text before the JSON: a warning
        return reply("No file yet.", ["echo hi > /app/hello.txt\n"], False, "Here it is:\n")
    if len(messages) == 1:  # no JSON at all: a parse error
        return Reply("I would count the lines with wc.", usage={"prompt_tokens": 900})
    if hello:
        return reply("The file is written.", [], True)
    commands = ["echo 2 > /app/count.txt\n", "cat /app/count.txt\n"]
    return reply("Guessing the count.", commands, True)


def task_of(body: dict[str, Any]) -> str:
    return "hello-file" if "/app/hello.txt" in body["messages"][0]["content"] else "count-lines"


def normalised(value: Any) -> str:
    return HOST.sub("<host>", json.dumps(value, sort_keys=True, ensure_ascii=False))


def by_task(bodies: list[dict[str, Any]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {"hello-file": [], "count-lines": []}
    for body in bodies:
        out[task_of(body)].append(normalised(body))
    return out


def first_difference(ours: list[str], theirs: list[str]) -> str:
    """The first request that differs, as a diff of its JSON (gem-eval's against Harbor's)."""
    for index, (a, b) in enumerate(zip(ours, theirs)):
        if a != b:
            lines = [json.dumps(json.loads(x), indent=1).splitlines() for x in (a, b)]
            diff = difflib.unified_diff(*lines, "gem-eval", "harbor", lineterm="", n=1)
            return f"request {index}:\n" + "\n".join(diff)
    return f"{len(ours)} requests from gem-eval, {len(theirs)} from Harbor"


def steps(trajectory: dict[str, Any]) -> list[str]:
    """A trajectory's steps, the hostname and the trial's name (random in each harness;
    in the summarising subagents' ids, never in a request) normalised."""
    keep = ("source", "message", "tool_calls", "observation")
    texts = [normalised({k: s.get(k) for k in keep}) for s in trajectory["steps"]]
    return [TRIAL.sub("<trial>", text) for text in texts]


@pytest.fixture(scope="module")
def harbor_cli() -> Path:
    """Harbor's CLI (``$HARBOR_VENV/bin/harbor``, with Docker Compose v2 for its docker
    environment; ``.ci/run`` installs both), and the tasks' base image: a local tag of
    gem-eval's base image unless the image exists. Missing: skipped, failed in CI."""
    harbor = Path(os.environ.get("HARBOR_VENV", "/nonexistent")) / "bin" / "harbor"
    problem = None if harbor.is_file() else "HARBOR_VENV names no venv with Harbor's CLI"
    if subprocess.run(["docker", "compose", "version"], capture_output=True).returncode:
        problem = "docker compose (Compose v2, the CLI plugin) does not run"
    if problem is not None:
        if IN_CI:
            pytest.fail(f"CI=true, but the parity test cannot run: {problem}", pytrace=False)
        pytest.skip(problem)
    if subprocess.run(["docker", "image", "inspect", BASE], capture_output=True).returncode:
        subprocess.run(["docker", "tag", "gem-eval/base:bookworm", BASE], check=True)
    return harbor


@dataclass
class HarborRun:
    requests: list[Any]
    rewards: dict[str, float]
    trajectories: dict[str, Any]


@pytest.fixture(scope="module")
def harbor_run(harbor_cli: Path, tmp_path_factory: pytest.TempPathFactory) -> HarborRun:
    """Harbor's own run (once for the module): its requests, each task's reward and
    trajectory."""
    tmp = tmp_path_factory.mktemp("harbor")
    env = {**os.environ, "OPENAI_API_KEY": "harbor-key", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env["HARBOR_TELEMETRY"] = "0"
    with serve(answer, model="scripted") as server:
        argv = [str(harbor_cli), "run", "--path", str(TASKS), "--env", "docker"]
        argv += ["--job-name", "parity", "--jobs-dir", str(tmp), "--n-concurrent", "1"]
        argv += ["--yes", "--quiet", "--agent", "terminus-2", "--model", "openai/scripted"]
        argv += ["--ak", f"api_base={server.base_url}"]
        subprocess.run(argv, check=True, env=env, timeout=900, capture_output=True)
        run = HarborRun(server.requests, {}, {})
    for result in (tmp / "parity").glob("*/result.json"):
        data = json.loads(result.read_text())
        assert data.get("exception_info") is None, data["exception_info"]
        run.rewards[data["task_name"]] = data["verifier_result"]["rewards"]["reward"]
        trajectory = result.parent / "agent" / "trajectory.json"
        run.trajectories[data["task_name"]] = json.loads(trajectory.read_text())
    return run


def play_gem_eval(tmp: Path, backend: str) -> tuple[list[Any], dict[str, Any], dict[str, Any]]:
    """gem-eval's run: its requests as the server got them, each task's record, and
    each task's trajectory as attached to it. The suite sets generation settings for
    gem-eval's own loop: an agent program's requests do not take them."""
    suite = tmp / "parity.yaml"
    suite.write_text(
        f"name: parity\ndefaults:\n  generation: {{max_tokens: 4096}}\n"
        f"tasks:\n  - id: p\n    env: terminal:Task-v0\n    args: {{path: {TASKS}}}\n"
    )
    results = tmp / "results"
    with serve(answer, model="scripted") as server:
        argv = [sys.executable, "-m", "gem_eval", "run", "--suite", str(suite)]
        argv += ["--agent", "terminus-2", "--model", "openai/scripted"]
        argv += ["--model-base-url", server.base_url, "--model-backend", backend]
        argv += ["--results-dir", str(results), "-q"]
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=1800)
        assert done.returncode == 0, done.stderr[-3000:]
        requests = server.requests
    [run_dir] = [p for p in results.iterdir() if p.is_dir()]
    records, trajectories = {}, {}
    for line in (run_dir / "episodes.jsonl").read_text().splitlines():
        record = json.loads(line)
        task = record["task_id"].split("/")[-1]
        records[task] = record
        [attached] = [a for a in record["attachments"] if a.endswith("trajectory.json")]
        trajectories[task] = json.loads((run_dir / attached).read_text())
    return requests, records, trajectories


@pytest.mark.parametrize("backend", ["openai", "litellm"])
def test_terminus2_sends_what_harbor_sends(
    tmp_path: Path, harbor_run: HarborRun, backend: str
) -> None:
    gem_requests, records, gem_steps = play_gem_eval(tmp_path, backend)

    harbor_bodies = by_task([r.body for r in harbor_run.requests])
    gem_bodies = by_task([r.body for r in gem_requests])
    # hello-file: the reply with a warning, its fix, the confirmation; count-lines: the
    # reply it cannot parse, the fix (overflowing), the three summarising calls (summary,
    # questions, answers), the fix again, the confirmation.
    assert [len(harbor_bodies[t]) for t in ("hello-file", "count-lines")] == [3, 7]
    for task in ("hello-file", "count-lines"):
        assert gem_bodies[task] == harbor_bodies[task], first_difference(
            gem_bodies[task], harbor_bodies[task]
        )
        assert steps(gem_steps[task]) == steps(harbor_run.trajectories[task]), task
    # Harbor's requests carry only the model and the messages; the parser's feedback
    # reached the model in both.
    assert {key for r in harbor_run.requests for key in r.body} == {"model", "messages"}
    said = " ".join(normalised(r.body) for r in gem_requests)
    assert "Previous response had warnings" in said and "parsing errors" in said
    assert "You are about to hand off your work to another AI agent" in said
    # The episode's token never leaves gem-eval: the server saw gem-eval's own key.
    assert not any("gem-" in (r.authorization or "") for r in gem_requests)

    assert harbor_run.rewards == {"hello-file": 1.0, "count-lines": 0.0}
    scores = {task: (r["outcome"], r["score"]) for task, r in records.items()}
    assert scores == {"hello-file": ("completed", 1.0), "count-lines": ("completed", 0.0)}
    run = records["hello-file"]["trajectory"]["agent_run"]
    assert run["version"] == "2.0.0" and run["setup_s"] > 0 and run["run_s"] > 0
    turns = records["count-lines"]["trajectory"]["agent_run"]["turns"]
    kinds = [turn.get("source") or ("parse error" if turn.get("parse_error") else "agent")
             for turn in turns]  # fmt: skip
    assert kinds == ["parse error", "system", "user", "agent", "agent"]  # the handoff between
