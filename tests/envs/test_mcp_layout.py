"""MCPMark-style task directories without Docker: reading one (service from the directory
two levels up, the starting state, ``meta.json``), their errors, finding them, and
``McpTaskEnv``'s instruction and expansion of a directory of tasks. ``resources()`` is not
called: it fetches the services' server packages. MCPMark's own tree (levels,
``test_environments/``, services that do not run here) is in ``test_mcpmark_layout.py``."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from gem_eval.envs.mcpmark.env import NOTE, McpTaskEnv
from gem_eval.envs.mcpmark.layout import find_tasks, is_task_dir, load_task
from gem_eval.envs.mcpmark.state import StartState
from gem_eval.errors import TaskFormatError, UserError


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def mcp_task(
    root: Path,
    service: str = "filesystem",
    category: str = "messy_project",
    name: str = "organize",
    meta: dict[str, Any] | str | None = None,
    description: str = "\n  Sort the files by type.  \n",
    state: bool = True,
) -> Path:
    """A task directory ``root/<service>/<category>/<name>``; with ``state``, its
    category's ``initial_state/`` (a file, or ``init.sql`` for postgres)."""
    path = root / service / category / name
    path.mkdir(parents=True, exist_ok=True)
    if state:
        write(
            path.parent / "initial_state" / ("init.sql" if service == "postgres" else "a.txt"), "\n"
        )
    (path / "description.md").write_text(description)
    write(path / "verify.py", "import sys\nsys.exit(0)\n")
    if meta is not None:
        (path / "meta.json").write_text(meta if isinstance(meta, str) else json.dumps(meta))
    return path


def format_error(path: Path) -> str:
    with pytest.raises(TaskFormatError) as err:
        load_task(path)
    message = str(err.value)
    assert "\n" not in message
    return message


def test_load_task(tmp_path: Path) -> None:
    meta = {"task_id": "organize", "difficulty": "L2", "tags": ["files", 3]}
    path = mcp_task(tmp_path, meta=meta)
    write(path / "solution.py", "print('solved')\n")
    task = load_task(path)
    assert task.name == "messy_project/organize"
    assert task.service == "filesystem"
    assert task.category == "messy_project"
    assert task.path == path.resolve()
    assert task.description == "Sort the files by type."
    assert task.verify == path.resolve() / "verify.py"
    assert task.solution == path.resolve() / "solution.py"
    assert task.state == StartState("tree", path.resolve().parent / "initial_state")
    assert task.level is None
    assert task.meta == meta
    assert task.difficulty == "L2"
    assert task.tags == ["files", "3"]


def test_no_meta(tmp_path: Path) -> None:
    task = load_task(mcp_task(tmp_path))
    assert (task.meta, task.difficulty, task.tags, task.solution) == ({}, None, [], None)


def test_tags_that_are_not_a_list_are_dropped(tmp_path: Path) -> None:
    assert load_task(mcp_task(tmp_path, meta={"tags": "files"})).tags == []


def test_solution_sh_before_solution_py(tmp_path: Path) -> None:
    path = mcp_task(tmp_path)
    write(path / "solution.py", "print(1)\n")
    write(path / "solution.sh", "true\n")
    assert load_task(path).solution == path.resolve() / "solution.sh"


def test_category_initial_state_is_the_fallback(tmp_path: Path) -> None:
    path = mcp_task(tmp_path)
    category_state = path.parent / "initial_state"
    assert load_task(path).state == StartState("tree", category_state.resolve())


def test_own_initial_state_wins(tmp_path: Path) -> None:
    path = mcp_task(tmp_path)
    write(path / "initial_state" / "b.txt", "b\n")
    assert load_task(path).state == StartState("tree", path.resolve() / "initial_state")


def test_initial_state_must_be_a_directory(tmp_path: Path) -> None:
    path = mcp_task(tmp_path)
    write(path / "initial_state", "not a directory\n")
    assert load_task(path).state.path == path.resolve().parent / "initial_state"


def test_postgres_state_needs_init_sql(tmp_path: Path) -> None:
    path = mcp_task(
        tmp_path, service="postgres", category="shop", name="top_customers", state=False
    )
    state = path.parent / "initial_state"
    write(state / "schema.sql", "CREATE TABLE t (x int);\n")
    message = format_error(path)
    assert message.startswith(f"{state.resolve()}: ")
    assert "init.sql" in message
    write(state / "init.sql", "CREATE TABLE t (x int);\n")
    task = load_task(path)
    assert (task.service, task.state) == ("postgres", StartState("init_sql", state.resolve()))


@pytest.mark.parametrize("service", ["filesystem", "postgres"])
def test_no_starting_state_is_one_error_naming_where_it_looked(
    tmp_path: Path, service: str
) -> None:
    path = mcp_task(tmp_path, service=service, category="shop", state=False).resolve()
    message = format_error(path)
    assert message.startswith(f"{path}: no starting state for {service} category 'shop'")
    assert str(path / "initial_state") in message
    assert str(path.parent / "initial_state") in message
    if service == "filesystem":
        assert str(tmp_path / "test_environments" / "shop") in message
    else:
        assert str(tmp_path / "postgres_state" / "shop.backup") in message
        assert str(path / "prepare_environment.py") in message


def test_filesystem_state_needs_no_init_sql(tmp_path: Path) -> None:
    path = mcp_task(tmp_path, state=False)
    write(path / "initial_state" / "notes.md", "x\n")
    assert load_task(path).state == StartState("tree", path.resolve() / "initial_state")


def test_unknown_service(tmp_path: Path) -> None:
    path = mcp_task(tmp_path, service="gitlab")
    message = format_error(path)
    assert message.startswith(f"{path.resolve()}: ")
    assert "'gitlab'" in message
    assert "filesystem or postgres" in message


def test_bad_meta_json_names_its_line(tmp_path: Path) -> None:
    path = mcp_task(tmp_path, meta='{\n  "difficulty": "L1",\n  "tags": [,]\n}\n')
    assert format_error(path).startswith(f"{path.resolve() / 'meta.json'}:3: ")


def test_meta_json_must_be_an_object(tmp_path: Path) -> None:
    path = mcp_task(tmp_path, meta='["L1"]')
    assert format_error(path) == f"{path.resolve() / 'meta.json'}:1: must be a JSON object"


@pytest.mark.parametrize("missing", ["description.md", "verify.py"])
def test_not_a_task(tmp_path: Path, missing: str) -> None:
    path = mcp_task(tmp_path)
    (path / missing).unlink()
    assert not is_task_dir(path)
    assert "not an MCP task directory" in format_error(path)


def test_find_tasks(tmp_path: Path) -> None:
    b = mcp_task(tmp_path, category="cat_b", name="t1")
    a2 = mcp_task(tmp_path, category="cat_a", name="t2")
    a1 = mcp_task(tmp_path, category="cat_a", name="t1")
    write(tmp_path / "filesystem" / "cat_a" / "initial_state" / "verify.py", "# data\n")
    assert find_tasks(tmp_path) == [a1, a2, b]
    assert find_tasks(a1) == [a1]


def test_find_tasks_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such directory"):
        find_tasks(tmp_path / "missing")
    write(tmp_path / "filesystem" / "cat" / "task" / "verify.py", "\n")  # no description.md
    with pytest.raises(UserError, match="no task directories"):
        find_tasks(tmp_path)


def test_env_instruction(tmp_path: Path) -> None:
    env = McpTaskEnv(str(mcp_task(tmp_path)), verify_timeout_s=12.0)
    assert env.instruction() == f"Sort the files by type.\n\n{NOTE}"
    assert env.verify_timeout_s == 12.0


def test_env_expand(tmp_path: Path) -> None:
    fs = mcp_task(tmp_path, meta={"difficulty": "L1", "tags": ["files"]})
    pg = mcp_task(tmp_path, service="postgres", category="shop", name="top")
    out = McpTaskEnv.expand({"path": str(tmp_path), "max_time_s": 60})
    assert out is not None
    assert [t.name for t in out] == ["filesystem/messy_project/organize", "postgres/shop/top"]
    assert [t.category for t in out] == ["filesystem/messy_project", "postgres/shop"]
    assert [t.tags for t in out] == [["filesystem", "L1", "files"], ["postgres"]]
    assert [t.args for t in out] == [
        {"path": str(fs), "max_time_s": 60},
        {"path": str(pg), "max_time_s": 60},
    ]


def test_env_expand_of_one_category(tmp_path: Path) -> None:
    mcp_task(tmp_path, name="a")
    mcp_task(tmp_path, name="b")
    out = McpTaskEnv.expand({"path": str(tmp_path / "filesystem" / "messy_project")})
    assert out is not None
    assert [t.name for t in out] == [
        "filesystem/messy_project/a",
        "filesystem/messy_project/b",
    ]


def test_env_expand_leaves_one_task_alone(tmp_path: Path) -> None:
    assert McpTaskEnv.expand({"path": str(mcp_task(tmp_path))}) is None
    assert McpTaskEnv.expand({}) is None


def test_env_expand_reports_a_broken_task(tmp_path: Path) -> None:
    mcp_task(tmp_path, name="good")
    bad = mcp_task(tmp_path, name="bad", meta="{\n  oops\n}")
    with pytest.raises(TaskFormatError, match=f"^{bad.resolve() / 'meta.json'}:2: "):
        McpTaskEnv.expand({"path": str(tmp_path)})
