"""Suite items naming a directory of tasks (``terminal:Task-v0``, ``mcp:Task-v0``): one
task per directory, ids ``<item id>/<name>``, categories and tags from the tasks,
``${VAR}`` paths, paths relative to the suite file, the errors of a broken or missing
directory, and a suite's ``sandbox.image_map`` with directory targets."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gem_eval.errors import TaskFormatError
from gem_eval.suites import Suite, SuiteError, load_suite


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def terminal_task(
    path: Path, difficulty: str = "easy", category: str = "files", extra: str = ""
) -> Path:
    """A TB1 task directory at ``path``."""
    write(
        path / "task.yaml",
        f"instruction: Do it.\ndifficulty: {difficulty}\ncategory: {category}\n"
        f"tags: [shell]\n{extra}",
    )
    write(path / "Dockerfile", "FROM python:3.12\nWORKDIR /app\n")
    write(path / "run-tests.sh", "pytest -rA\n")
    return path


def mcp_task(root: Path, category: str, name: str, difficulty: str | None = None) -> Path:
    path = root / "filesystem" / category / name
    write(path / "description.md", "Tidy up.\n")
    write(path / "verify.py", "raise SystemExit(0)\n")
    write(path / "initial_state" / "notes.txt", "x\n")  # a task needs a starting state
    if difficulty:
        write(path / "meta.json", f'{{"difficulty": "{difficulty}"}}')
    return path


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run from a directory that is not the suite's, so relative paths must not lean on
    the cwd."""
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd


def suite_with(tmp_path: Path, item: str) -> Path:
    body = textwrap.indent(textwrap.dedent(item).strip("\n"), "    ")
    return write(tmp_path / "suites" / "suite.yaml", f"name: dirs\ntasks:\n  - \n{body}\n")


def load(tmp_path: Path, item: str) -> Suite:
    return load_suite(suite_with(tmp_path, item))


def test_terminal_directory_expands(tmp_path: Path, elsewhere: Path) -> None:
    tasks = tmp_path / "suites" / "tasks" / "terminal"
    a = terminal_task(tasks / "alpha", difficulty="easy", category="files")
    b = terminal_task(tasks / "nested" / "beta", difficulty="hard", category="net")
    suite = load(
        tmp_path,
        """
        id: tb
        env: terminal:Task-v0
        tags: [terminal, shell]
        args:
          path: tasks/terminal
          pids: 64
        """,
    )
    specs = [t.spec for t in suite.tasks]
    assert [s.id for s in specs] == ["tb/alpha", "tb/beta"]
    assert [s.env_id for s in specs] == ["terminal:Task-v0", "terminal:Task-v0"]
    assert [s.env_kwargs for s in specs] == [
        {"path": str(a.resolve()), "pids": 64},
        {"path": str(b.resolve()), "pids": 64},
    ]
    assert [s.category for s in specs] == ["files", "net"]
    assert [s.tags for s in specs] == [["terminal", "shell", "easy"], ["terminal", "shell", "hard"]]


def test_suite_category_wins(tmp_path: Path, elsewhere: Path) -> None:
    terminal_task(tmp_path / "suites" / "tasks" / "one", category="files")
    suite = load(
        tmp_path,
        """
        id: tb
        env: terminal:Task-v0
        category: terminal-bench
        args: {path: ./tasks}
        """,
    )
    assert [(t.spec.id, t.spec.category) for t in suite.tasks] == [("tb/one", "terminal-bench")]


def test_one_task_directory_stays_one_task(tmp_path: Path, elsewhere: Path) -> None:
    task = terminal_task(tmp_path / "suites" / "tasks" / "one")
    suite = load(tmp_path, "id: tb\nenv: terminal:Task-v0\nargs: {path: tasks/one}\n")
    assert [t.spec.id for t in suite.tasks] == ["tb"]
    assert suite.tasks[0].spec.env_kwargs == {"path": str(task.resolve())}


def test_mcp_directory_expands(tmp_path: Path, elsewhere: Path) -> None:
    root = tmp_path / "suites" / "mcp"
    a = mcp_task(root, "project", "sort", difficulty="L1")
    b = mcp_task(root, "notes", "merge")
    suite = load(tmp_path, "id: mcp\nenv: mcp:Task-v0\nargs: {path: ./mcp}\n")
    specs = [t.spec for t in suite.tasks]
    assert [s.id for s in specs] == ["mcp/filesystem/notes/merge", "mcp/filesystem/project/sort"]
    assert [s.category for s in specs] == ["filesystem/notes", "filesystem/project"]
    assert [s.tags for s in specs] == [["filesystem"], ["filesystem", "L1"]]
    assert [s.env_kwargs["path"] for s in specs] == [str(b.resolve()), str(a.resolve())]


def test_path_from_the_environment(
    tmp_path: Path, elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = terminal_task(tmp_path / "mine" / "custom")
    terminal_task(tmp_path / "suites" / "tasks" / "bundled")
    item = "id: tb\nenv: terminal:Task-v0\nargs: {path: '${MY_TASKS:-./tasks}'}\n"
    monkeypatch.setenv("MY_TASKS", str(tmp_path / "mine"))
    suite = load(tmp_path, item)
    assert [(t.spec.id, t.spec.env_kwargs["path"]) for t in suite.tasks] == [
        ("tb/custom", str(mine.resolve()))
    ]


def test_path_default_when_the_variable_is_unset(
    tmp_path: Path, elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundled = terminal_task(tmp_path / "suites" / "tasks" / "bundled")
    monkeypatch.delenv("MY_TASKS", raising=False)
    suite = load(tmp_path, "id: tb\nenv: terminal:Task-v0\nargs: {path: '${MY_TASKS:-./tasks}'}\n")
    assert [(t.spec.id, t.spec.env_kwargs["path"]) for t in suite.tasks] == [
        ("tb/bundled", str(bundled.resolve()))
    ]


def test_variable_inside_a_path(
    tmp_path: Path, elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    terminal_task(tmp_path / "suites" / "sets" / "v2" / "t")
    monkeypatch.setenv("TB_VERSION", "v2")
    suite = load(tmp_path, "id: tb\nenv: terminal:Task-v0\nargs: {path: 'sets/${TB_VERSION}'}\n")
    assert [t.spec.id for t in suite.tasks] == ["tb/t"]


def test_bare_relative_directory_is_next_to_the_suite(tmp_path: Path, elsewhere: Path) -> None:
    terminal_task(tmp_path / "suites" / "tasks" / "one")
    suite = load(tmp_path, "id: tb\nenv: terminal:Task-v0\nargs: {path: tasks}\n")
    assert [t.spec.id for t in suite.tasks] == ["tb/one"]


def test_broken_task_names_its_file_and_line(tmp_path: Path, elsewhere: Path) -> None:
    tasks = tmp_path / "suites" / "tasks"
    terminal_task(tasks / "good")
    bad = terminal_task(tasks / "bad", extra="parser_name: swebench\n")
    with pytest.raises(TaskFormatError) as err:
        load(tmp_path, "id: tb\nenv: terminal:Task-v0\nargs: {path: ./tasks}\n")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{bad.resolve() / 'task.yaml'}:5: ")
    assert "swebench" in message


def test_missing_directory_is_reported_at_args(tmp_path: Path, elsewhere: Path) -> None:
    path = suite_with(
        tmp_path,
        """
        id: tb
        env: terminal:Task-v0
        args:
          path: tasks/missing
        """,
    )
    with pytest.raises(SuiteError) as err:
        load_suite(path)
    assert err.value.path is not None and Path(err.value.path).resolve() == path.resolve()
    assert err.value.line == 6  # `args:` (name, tasks, "- ", id, env, args)
    assert err.value.field == "tasks[0].args"
    assert "no such directory" in err.value.message
    assert "\n" not in str(err.value)


def test_empty_directory_is_reported_at_args(tmp_path: Path, elsewhere: Path) -> None:
    (tmp_path / "suites" / "mcp" / "filesystem").mkdir(parents=True)
    with pytest.raises(SuiteError) as err:
        load(tmp_path, "id: m\nenv: mcp:Task-v0\nargs:\n  path: ./mcp\n")
    assert err.value.line == 6
    assert "no task directories" in err.value.message


def test_image_map_directory_targets_are_absolute(tmp_path: Path, elsewhere: Path) -> None:
    base = tmp_path / "suites" / "images" / "base"
    write(base / "Dockerfile", "FROM scratch\n")
    task = terminal_task(tmp_path / "suites" / "tasks" / "one")
    suite = load(
        tmp_path,
        f"""
        id: tb
        env: terminal:Task-v0
        args: {{path: {task}}}
        sandbox:
          image_map:
            "python:3*": images/base
            "*": debian:12
            "ubuntu:*": images/missing
        """,
    )
    sandbox = suite.tasks[0].spec.sandbox
    assert sandbox is not None
    assert sandbox.image_map == {
        "python:3*": str(base.resolve()),
        "*": "debian:12",
        "ubuntu:*": "images/missing",
    }


def test_image_map_relative_to_the_file_that_sets_it(tmp_path: Path, elsewhere: Path) -> None:
    base = tmp_path / "suites" / "images" / "base"
    base.mkdir(parents=True)
    (elsewhere / "images" / "base").mkdir(parents=True)  # a decoy in the cwd
    terminal_task(tmp_path / "suites" / "tasks" / "one")
    path = write(
        tmp_path / "suites" / "suite.yaml",
        """
        defaults:
          sandbox:
            image_map: {"*": images/base}
        tasks:
          - id: tb
            env: terminal:Task-v0
            args: {path: ./tasks}
        """,
    )
    suite = load_suite(path)
    assert [t.spec.id for t in suite.tasks] == ["tb/one"]
    sandbox = suite.tasks[0].spec.sandbox
    assert sandbox is not None
    assert sandbox.image_map == {"*": str(base.resolve())}
