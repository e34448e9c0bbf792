"""A recorded two-model run for the report's tests: ``gem-eval run`` in a subprocess against
the fake model server, with a scripted, deterministic handler.

Suite ``report-demo``: a search task with a tool (three samples) and a guessing game (two
samples), two epochs. ``openai/strong`` searches, then answers the first question right
(the others wrong) and solves the game; ``openai/weak`` searches, then answers wrong, and
guesses 1 for ever. So the run has successes, failures, tool calls and pass@k curves.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.fixtures.openai_server import FakeOpenAIServer, Reply, ToolCallSpec

ROOT = Path(__file__).resolve().parents[2]

SUITE = """\
name: report-demo
description: A search task with a tool and a guessing game, for the report's tests.
defaults: {{seed: 0, scorer: success}}
tasks:
  - id: qa-search
    category: qa
    env: qa:QA-v0
    dataset:
      path: {root}/tasks/qa/questions.jsonl
      fields: {{question: question, answer: answers}}
    tools:
      - {{name: search, corpus: {root}/tasks/data/search/corpus.jsonl, k: 3}}
    limits: {{max_turns: 4}}
    samples: 3
  - env: game:GuessTheNumber-v0-easy
    category: games
    samples: 2
    limits: {{max_turns: 6}}
"""
MODELS = ("openai/strong", "openai/weak")


def handler(body: dict[str, Any]) -> Reply:
    """The scripted models (see the module docstring)."""
    messages = body["messages"]
    strong = "strong" in body["model"]
    if body.get("tools"):
        if not any(m["role"] == "tool" for m in messages):
            question = str(messages[-1]["content"]).splitlines()[0]
            return Reply(tool_calls=[ToolCallSpec("search", {"query": question})])
        right = strong and "Verran Lighthouse on Quessel" in json.dumps(messages)
        return Reply("<answer>Odile Marchetti</answer>" if right else "<answer>nobody</answer>")
    if not strong:
        return Reply("\\boxed{1}")
    return Reply("\\boxed{7}" if len(messages) < 3 else "\\boxed{2}")


def gem_eval(*args: str, results: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """The CLI in a subprocess, as a user runs it (output not a terminal)."""
    env = {**os.environ, "GEM_EVAL_RESULTS": str(results)}
    return subprocess.run(
        [sys.executable, "-m", "gem_eval", *args],
        capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env,
    )  # fmt: skip


def record_run(server: FakeOpenAIServer, results: Path, *extra: str) -> str:
    """Play the demo suite for both models; returns the run id."""
    server.handler = handler
    suite = results.parent / "report-demo.yaml"
    suite.write_text(SUITE.format(root=ROOT))
    args = ["run", "--suite", str(suite), "--epochs", "2", "--model-base-url", server.base_url]
    for model in MODELS:
        args += ["--model", model]
    done = gem_eval(*args, "-q", *extra, results=results)
    assert done.returncode == 0, done.stderr + done.stdout
    runs = sorted(p.name for p in results.iterdir() if (p / "manifest.json").exists())
    return runs[-1]
