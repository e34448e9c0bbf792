"""MCPMark's own tree, without Docker: ``tests/fixtures/mcpmark_checkout`` is laid out as
github.com/eval-sys/mcpmark lays out its checkout (levels, ``test_environments/``,
``postgres_state/``, ``prepare_environment.py``, a ``github`` task, no solutions)."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from gem_eval.envs.mcpmark.env import McpTaskEnv
from gem_eval.envs.mcpmark.layout import (
    UnsupportedServiceError,
    find_tasks,
    load_task,
    scan,
)
from gem_eval.envs.mcpmark.state import StartState
from gem_eval.errors import TaskFormatError, UserError

CHECKOUT = Path(__file__).resolve().parents[1] / "fixtures" / "mcpmark_checkout"
TASKS = CHECKOUT / "tasks"
STANDARD = TASKS / "filesystem" / "standard" / "notes" / "tally_total"
EASY = TASKS / "filesystem" / "easy" / "notes" / "tally_total"
RESTOCK = TASKS / "postgres" / "shop" / "restock"  # the layout without a level
EVENTS = TASKS / "postgres" / "standard" / "audit" / "event_counts"
GITHUB = TASKS / "github" / "standard" / "demo-repo" / "close_stale_issue"


@pytest.mark.parametrize("root", [CHECKOUT, TASKS], ids=["checkout", "tasks"])
def test_a_checkout_expands_into_its_tasks_of_both_layouts(root: Path) -> None:
    out = McpTaskEnv.expand({"path": str(root)})
    assert out is not None
    assert [t.name for t in out] == [
        "filesystem/easy/notes/tally_total",
        "filesystem/notes/tally_total",  # standard: the default level, not in the id
        "postgres/shop/restock",
        "postgres/audit/event_counts",
    ]
    assert [t.category for t in out] == [
        "filesystem/notes",
        "filesystem/notes",
        "postgres/shop",
        "postgres/audit",
    ]
    assert [t.tags for t in out] == [
        ["filesystem", "easy", "L1", "counting"],
        ["filesystem", "standard", "L2", "counting"],
        ["postgres", "L1", "data update"],
        ["postgres", "standard", "L2", "aggregation"],
    ]
    assert [Path(t.args["path"]) for t in out] == [EASY, STANDARD, RESTOCK, EVENTS]


def test_the_level_is_read_not_taken_for_the_service() -> None:
    standard, easy, old = load_task(STANDARD), load_task(EASY), load_task(RESTOCK)
    assert (standard.service, standard.level, standard.name) == (
        "filesystem",
        "standard",
        "notes/tally_total",
    )
    assert (easy.level, easy.display_name) == ("easy", "filesystem/easy/notes/tally_total")
    assert (old.service, old.level, old.display_name) == ("postgres", None, "postgres/shop/restock")
    assert standard.solution is None and easy.solution is None  # as published


def test_starting_states_are_found_where_mcpmark_keeps_them() -> None:
    assert load_task(STANDARD).state == StartState("tree", CHECKOUT / "test_environments" / "notes")
    assert load_task(EASY).state == load_task(STANDARD).state
    assert load_task(RESTOCK).state == StartState(
        "pg_dump", CHECKOUT / "postgres_state" / "shop.backup"
    )
    assert load_task(EVENTS).state == StartState("prepare", EVENTS / "prepare_environment.py")


def test_a_task_without_its_state_is_one_error_naming_where_it_looked(tmp_path: Path) -> None:
    checkout = tmp_path / "mcpmark"
    shutil.copytree(CHECKOUT, checkout)
    shutil.rmtree(checkout / "test_environments" / "notes")
    task = checkout / "tasks" / "filesystem" / "standard" / "notes" / "tally_total"
    with pytest.raises(TaskFormatError) as err:
        load_task(task)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{task}: no starting state for filesystem category 'notes'")
    for looked in (
        task / "initial_state",
        task.parent / "initial_state",
        checkout / "tasks" / "test_environments" / "notes",
        checkout / "test_environments" / "notes",
    ):
        assert str(looked) in message
    # The suite loader reports it too, before any episode.
    with pytest.raises(TaskFormatError, match="no starting state"):
        McpTaskEnv.expand({"path": str(checkout)})


def test_the_category_id_of_meta_json_names_the_state(tmp_path: Path) -> None:
    checkout = tmp_path / "mcpmark"
    shutil.copytree(CHECKOUT, checkout)
    (checkout / "test_environments" / "notes").rename(checkout / "test_environments" / "memos")
    meta = checkout / "tasks" / "filesystem" / "easy" / "notes" / "tally_total" / "meta.json"
    meta.write_text(meta.read_text().replace('"category_id": "notes"', '"category_id": "memos"'))
    task = load_task(meta.parent)
    assert task.state == StartState("tree", checkout / "test_environments" / "memos")
    assert task.category == "notes"  # the id stays the directory's


def test_a_plain_sql_dump_wins_over_an_archive_and_either_over_a_prepare_script(
    tmp_path: Path,
) -> None:
    checkout = tmp_path / "mcpmark"
    shutil.copytree(CHECKOUT, checkout)
    state = checkout / "postgres_state"
    events = checkout / "tasks" / "postgres" / "standard" / "audit" / "event_counts"
    shutil.copy(state / "shop.backup", state / "audit.backup")
    assert load_task(events).state == StartState("pg_dump", state / "audit.backup")
    (state / "audit.sql").write_text("CREATE TABLE events (kind text);\n")
    assert load_task(events).state == StartState("sql_dump", state / "audit.sql")


@pytest.mark.parametrize(("minor", "ok"), [(14, True), (15, False), (16, False)])
def test_an_archive_newer_than_postgresql_15_reads_is_a_load_error(
    tmp_path: Path, minor: int, ok: bool
) -> None:
    checkout = tmp_path / "mcpmark"
    shutil.copytree(CHECKOUT, checkout)
    archive = checkout / "postgres_state" / "shop.backup"
    data = archive.read_bytes()
    assert data[:7] == b"PGDMP\x01\x0e"  # made by PostgreSQL 15: format 1.14
    archive.write_bytes(data[:6] + bytes([minor]) + data[7:])
    restock = checkout / "tasks" / "postgres" / "shop" / "restock"
    if ok:
        assert load_task(restock).state == StartState("pg_dump", archive)
        return
    with pytest.raises(TaskFormatError) as err:
        load_task(restock)
    assert str(err.value) == (
        f"{archive}: a pg_dump archive of format 1.{minor}, newer than PostgreSQL 15's "
        "pg_restore reads (1.14): convert it with a pg_restore as new as the archive, "
        f"`pg_restore --no-owner --no-privileges -f {archive.with_suffix('.sql')} {archive}`; "
        "gem-eval then loads shop.sql"
    )
    archive.write_text("-- plain SQL under an archive's name\n")
    with pytest.raises(TaskFormatError, match="not a pg_dump custom-format archive"):
        load_task(restock)


def test_a_task_of_a_service_that_needs_an_account_alone_is_refused_in_one_line() -> None:
    with pytest.raises(UnsupportedServiceError) as err:
        load_task(GITHUB)
    message = str(err.value)
    assert "\n" not in message
    assert message == (
        f"{GITHUB}: MCPMark's github tasks need a GitHub account and token: "
        "gem-eval runs filesystem and postgres tasks"
    )
    with pytest.raises(UnsupportedServiceError):
        McpTaskEnv(str(GITHUB))


def test_a_directory_leaves_them_out_with_one_warning_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    found = scan(CHECKOUT)
    assert found.unsupported == {"github": [GITHUB]}
    with caplog.at_level(logging.WARNING, logger="gem_eval"):
        out = McpTaskEnv.expand({"path": str(CHECKOUT)})
    assert out is not None and len(out) == 4
    [line] = [r.getMessage() for r in caplog.records]
    assert line == (
        f"{CHECKOUT}: left out 1 MCP task(s) of services that do not run here: "
        "github (1: needs a GitHub account and token)"
    )


def test_a_directory_of_unsupported_tasks_only_is_an_error_saying_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with pytest.raises(UserError) as err:
        find_tasks(TASKS / "github")
    assert str(err.value) == (
        f"{TASKS / 'github'}: no MCP task that runs here; left out 1 MCP task(s) of "
        "services that do not run here: github (1: needs a GitHub account and token)"
    )
    with (
        caplog.at_level(logging.WARNING, logger="gem_eval"),
        pytest.raises(UserError, match="no MCP task that runs here"),
    ):
        McpTaskEnv.expand({"path": str(TASKS / "github")})
    assert caplog.records == []  # the error says it all, once


def test_starting_states_are_not_searched_for_tasks(tmp_path: Path) -> None:
    checkout = tmp_path / "mcpmark"
    shutil.copytree(CHECKOUT, checkout)
    # A project in a starting tree may hold files named like a task's.
    for where in ("test_environments/notes/proj", "postgres_state/proj", ".mcpmark_backups/x"):
        (checkout / where).mkdir(parents=True)
        (checkout / where / "description.md").write_text("not a task\n")
        (checkout / where / "verify.py").write_text("raise SystemExit(0)\n")
    assert len(scan(checkout).tasks) == 4


def test_the_mcpmark_suite_runs_a_checkout_named_by_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gem_eval.suites import load_suite

    monkeypatch.setenv("MCPMARK_TASKS", str(CHECKOUT))
    suite = load_suite("mcpmark")
    assert [t.spec.id for t in suite.tasks] == [
        "mcp/filesystem/easy/notes/tally_total",
        "mcp/filesystem/notes/tally_total",
        "mcp/postgres/shop/restock",
        "mcp/postgres/audit/event_counts",
    ]
