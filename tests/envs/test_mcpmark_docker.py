"""A checkout of MCPMark runs unchanged, end to end: ``MCPMARK_TASKS`` points the
``mcpmark`` suite at ``tests/fixtures/mcpmark_checkout`` (both layouts, MCPMark's starting
states, no solutions, a ``github`` task), the CLI in a subprocess, a scripted model behind
the fake OpenAI server, real containers. An agent that solves each task through the MCP
tools scores 1; doing nothing scores 0; ``tasks check`` reports the tasks as having no
reference solution, healthy."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from gem_eval.models.scripted import ScriptedModel
from gem_eval.sandbox import cleanup
from tests.e2e.test_run_cli import ROOT, gem_eval, records, run_dirs
from tests.envs.test_mcp_docker import call, play, tool_events
from tests.fixtures.openai_server import FakeOpenAIServer, Reply, ToolCallSpec

pytestmark = pytest.mark.docker

CHECKOUT = ROOT / "tests" / "fixtures" / "mcpmark_checkout"
ENV = {"MCPMARK_TASKS": str(CHECKOUT)}
SKIPPED = (
    f"{CHECKOUT}: left out 1 MCP task(s) of services that do not run here: "
    "github (1: needs a GitHub account and token)"
)

# Each task (a phrase of its description) and the tool calls that solve it, in order.
SOLUTIONS: dict[str, list[ToolCallSpec]] = {
    "one open task per line": [
        ToolCallSpec("list_allowed_directories", {}),
        ToolCallSpec("read_multiple_files", {"paths": ["/data/inbox/a.txt", "/data/inbox/b.txt"]}),
        ToolCallSpec("write_file", {"path": "/data/total.txt", "content": "3\n"}),
    ],
    "Write the number of files": [
        ToolCallSpec("list_directory", {"path": "/data/inbox"}),
        ToolCallSpec("write_file", {"path": "/data/count.txt", "content": "2"}),
    ],
    "has none left": [
        ToolCallSpec("execute_sql", {"sql": "SELECT * FROM out_of_stock"}),
        ToolCallSpec("execute_sql", {"sql": "UPDATE items SET stock = 10 WHERE stock = 0"}),
    ],
    "kind of event": [
        ToolCallSpec("execute_sql", {"sql": "CREATE TABLE event_counts (kind text PRIMARY KEY, n int)"}),  # noqa: E501
        ToolCallSpec(
            "execute_sql",
            {"sql": "INSERT INTO event_counts SELECT kind, count(*) FROM events GROUP BY kind"},
        ),
    ],
}  # fmt: skip


def solver(request: dict[str, Any]) -> Reply:
    """The next call of the task's solution, one per turn; then done."""
    prompt = str(next(m for m in request["messages"] if m["role"] == "user")["content"])
    [calls] = [calls for phrase, calls in SOLUTIONS.items() if phrase in prompt]
    done = sum(m["role"] == "tool" for m in request["messages"])
    return Reply(tool_calls=[calls[done]]) if done < len(calls) else Reply("Done.")


def test_an_agent_solving_through_the_mcp_tools_scores_1(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.handler = solver
    args = ["run", "--suite", "mcpmark", "--model", "openai/fake", "-q", "--concurrency", "4"]
    result = gem_eval(
        *args, "--model-base-url", openai_server.base_url, results=tmp_path, env=ENV, timeout=900
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.stderr.count("left out") == 1 and SKIPPED in result.stderr
    [run_dir] = run_dirs(tmp_path)
    recs = records(run_dir)
    failed = {r["task_id"]: r["trajectory"]["steps"][-1]["info"] for r in recs if r["score"] != 1}
    assert failed == {}
    assert sorted(r["task_id"] for r in recs) == [
        "mcp/filesystem/easy/notes/tally_total",
        "mcp/filesystem/notes/tally_total",
        "mcp/postgres/audit/event_counts",
        "mcp/postgres/shop/restock",
    ]
    for rec in recs:
        events = [e for s in rec["trajectory"]["steps"] for e in s["tool_events"]]
        assert events and not any(e["is_error"] for e in events), rec["task_id"]
        assert rec["outcome"] == "completed"
    by_task = {r["task_id"]: r for r in recs}
    restock = by_task["mcp/postgres/shop/restock"]["trajectory"]["steps"]
    assert "kettle" in restock[0]["tool_events"][0]["output"]  # the archive was restored
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert cleanup.find(manifest["run_id"], include_live=True) == []


def test_doing_nothing_scores_0_and_tasks_check_reports_no_reference_solution(
    tmp_path: Path,
) -> None:
    result = gem_eval("tasks", "check", "mcpmark", "-q", results=tmp_path, env=ENV, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = " ".join(result.stdout.split())
    assert "4/4 tasks healthy, 4 with no reference solution: do-nothing only" in out
    assert out.count("ok (no reference solution: do-nothing only)") == 4
    assert SKIPPED in result.stderr
    [run_dir] = run_dirs(tmp_path)
    recs = records(run_dir)
    assert {r["model"] for r in recs} == {"noop"} and len(recs) == 4
    assert {(r["outcome"], r["score"]) for r in recs} == {("completed", 0.0)}
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "finished"
    assert cleanup.find(manifest["run_id"], include_live=True) == []


def test_a_plain_sql_dump_converted_by_a_newer_postgresql_loads(tmp_path: Path) -> None:
    """``postgres_state/<category>.sql`` (what ``pg_restore -f`` of a PostgreSQL 17 archive
    writes: a ``transaction_timeout`` that 15 lacks) is used before the archive."""
    checkout = tmp_path / "mcpmark"
    shutil.copytree(CHECKOUT, checkout)
    (checkout / "postgres_state" / "shop.sql").write_text(
        "SET statement_timeout = 0;\n"
        "SET transaction_timeout = 0;\n"
        "CREATE TABLE public.items (id int PRIMARY KEY, name text NOT NULL, stock int NOT NULL);\n"
        "INSERT INTO public.items VALUES (1, 'ladle', 0), (2, 'teapot', 5), (3, 'mug', 0),"
        " (4, 'tray', 2);\n"
    )
    model = ScriptedModel(
        [
            call("execute_sql", sql="SELECT name FROM items WHERE stock = 0 ORDER BY id"),
            call("execute_sql", sql="UPDATE items SET stock = 10 WHERE stock = 0"),
            "Done.",
        ]
    )
    record, _, run_id = play(checkout / "tasks" / "postgres" / "shop" / "restock", model)
    select, update = tool_events(record)
    assert "ladle" in select.output and not update.is_error  # the .sql, not the archive
    assert record.outcome == "completed" and record.score == 1.0
    assert cleanup.find(run_id, include_live=True) == []
