"""``check_suite`` / ``suites validate``: what a run would fail on, every mistake of a
file, one line each with its file, line and field, before any run."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gem_eval.cli.suites import suites_app
from gem_eval.suites import list_suites, load_suite
from gem_eval.suites.check import check_file, check_suite
from gem_eval.suites.selection import Selection

QUESTIONS = [
    {"id": "q1", "question": "Capital of France?", "answers": ["Paris"]},
    {"id": "q2", "question": "2 + 2?", "answers": ["4"]},
    {"id": "q3", "question": None, "answers": ["x"]},
]


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with a dataset of three questions (the last without one)."""
    import json

    monkeypatch.chdir(tmp_path)
    lines = [json.dumps(row) for row in QUESTIONS]
    (tmp_path / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


def suite_file(here: Path, text: str, name: str = "suite.yaml") -> Path:
    path = here / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def validate(*paths: str) -> tuple[int, list[str]]:
    """Exit code and the lines ``suites validate`` prints."""
    result = CliRunner().invoke(suites_app, ["validate", *paths])
    return result.exit_code, result.output.strip().splitlines()


def test_a_dataset_without_fields_is_one_line_at_the_dataset(here: Path) -> None:
    suite_file(
        here,
        """
        tasks:
          - env: qa:QA-v0
            dataset:
              path: questions.jsonl
        """,
    )
    code, lines = validate("suite.yaml")
    assert code == 2
    [line] = lines
    assert line.startswith("error: suite.yaml:3: tasks[0].dataset: qa:QA-v0 takes no parameter")
    assert "'id', 'answers'" in line and "fields: {question: question, answer: answers}" in line


def test_an_argument_the_env_refuses_is_one_line_at_that_argument(here: Path) -> None:
    suite_file(
        here,
        """
        tasks:
          - env: game:GuessTheNumber-v0-easy
            args: {max_number: -5}
        """,
    )
    code, lines = validate("suite.yaml")
    assert (code, lines) == (
        2,
        [
            "error: suite.yaml:3: tasks[0].args.max_number: game:GuessTheNumber-v0-easy: "
            "max_number must be >= min_number"
        ],
    )


def test_a_generation_setting_of_the_wrong_type_is_one_line(here: Path) -> None:
    suite_file(
        here,
        """
        tasks:
          - env: game:GuessTheNumber-v0-easy
            generation: {temperature: abc}
        """,
    )
    code, lines = validate("suite.yaml")
    assert code == 2
    assert lines == [
        "error: suite.yaml:3: tasks[0].generation.temperature: Input should be a valid number "
        "(got 'abc')"
    ]


def test_every_mistake_of_a_file_is_reported_not_only_the_first(here: Path) -> None:
    suite_file(
        here,
        """
        tasks:
          - env: qa:QA-v0
            dataset: {path: questions.jsonl}
          - env: game:GuessTheNumber-v0-easy
            args: {max_number: -5}
          - env: game:Wordle-v0-easy
            generation: {temperature: abc}
          - env: game:Hangman-v0-easy
        """,
    )
    code, lines = validate("suite.yaml")
    assert code == 2
    assert [line.split(": ")[1] for line in lines] == [
        "suite.yaml:3",
        "suite.yaml:5",
        "suite.yaml:7",
    ]
    assert [line.split(": ")[2] for line in lines] == [
        "tasks[0].dataset",
        "tasks[1].args.max_number",
        "tasks[2].generation.temperature",
    ]
    assert not any(line.startswith("ok") for line in lines)


def test_mistakes_within_one_task_and_the_schema_are_all_reported(here: Path) -> None:
    suite_file(
        here,
        """
        description: 3
        defaults:
          limits: {max_turns: 0}
        tasks:
          - env: game:GuessTheNumber-v0-easy
            args: {max_number: -5}
            generation: {temperature: -1, top_p: 2}
            tags: [a, 1]
          - env: game:Mastermind-v0-easy
            args: {colours: 3}
        """,
    )
    _, problems = check_file("suite.yaml")
    assert [(p.line, p.field) for p in problems] == [
        (1, "description"),
        (3, "defaults.limits.max_turns"),
        (6, "tasks[0].args.max_number"),
        (7, "tasks[0].generation.temperature"),
        (7, "tasks[0].generation.top_p"),
        (8, "tasks[0].tags[1]"),
        (10, "tasks[1].args.colours"),
    ]
    assert all(p.path == "suite.yaml" for p in problems)


def test_a_mistake_in_what_every_task_inherits_hides_no_task_mistake(here: Path) -> None:
    suite_file(
        here,
        """
        defaults:
          args: {max_turns: 3}
        tasks:
          - env: game:Wordel-v0-easy
        """,
    )
    _, problems = check_file("suite.yaml")
    assert [(p.line, p.field) for p in problems] == [(2, "defaults.args"), (4, "tasks[0].env")]


def test_a_task_file_reports_all_its_mistakes_in_its_own_lines(here: Path) -> None:
    (here / "tasks").mkdir()
    (here / "tasks" / "t.yaml").write_text(
        "env: game:GuessTheNumber-v0-easy\nepochs: 0\nargs: {max_number: -5}\n"
    )
    suite_file(here, "tasks:\n  - file: tasks/t.yaml\n")
    _, problems = check_file("suite.yaml")
    assert [str(p) for p in problems] == [
        "tasks/t.yaml:2: epochs: Input should be greater than or equal to 1 (got 0)",
        "tasks/t.yaml:3: args.max_number: game:GuessTheNumber-v0-easy: max_number must be >= "
        "min_number",
    ]


def test_rows_that_fail_are_named_by_sample_at_the_dataset(here: Path) -> None:
    suite = load_suite(
        suite_file(
            here,
            """
            tasks:
              - env: qa:QA-v0
                dataset:
                  path: questions.jsonl
                  fields: {question: question, answer: answers}
            """,
        )
    )
    [problem] = check_suite(suite)
    assert (problem.line, problem.field) == (5, "tasks[0].dataset.fields.question")
    assert problem.message.startswith("sample 2: qa:QA-v0: give a question")
    # Only what the run plays is checked.
    assert check_suite(suite, limit=2) == []
    assert check_suite(suite, select=Selection.parse(samples="0-1")) == []


def test_a_field_that_is_also_an_argument_is_a_problem(here: Path) -> None:
    suite = load_suite(
        suite_file(
            here,
            """
            tasks:
              - env: qa:QA-v0
                args: {question: fixed}
                dataset:
                  path: questions.jsonl
                  fields: {question: question, answer: answers}
            """,
        )
    )
    [problem] = check_suite(suite)
    assert problem.field == "tasks[0].args.question"
    assert "both in the task's args and a field" in problem.message


def test_generation_settings_are_checked_also_in_a_suite_made_in_code() -> None:
    from gem_eval.records import TaskSpec
    from gem_eval.suites import Suite, SuiteTask

    spec = TaskSpec(id="t", env_id="game:Wordle-v0-easy", generation={"stop": 7, "top_k": 5})
    suite = Suite(name="s", tasks=[SuiteTask(spec=spec, samples=1, epochs=1, source="s.py:9")])
    [problem] = check_suite(suite)
    assert str(problem) == "s.py:9: expected a string or a list of strings (got 7)"


def test_bad_overrides_are_one_line(here: Path) -> None:
    from gem_eval.suites import SuiteError

    suite = load_suite(suite_file(here, "tasks:\n  - env: game:Wordle-v0-easy\n"))
    with pytest.raises(SuiteError) as err:
        check_suite(suite, overrides={"generation": {"stop": 7}})
    assert str(err.value) == "overrides.generation.stop: Input should be a valid string (got 7)"


@pytest.mark.parametrize("name", sorted(list_suites()))
def test_every_bundled_suite_checks_clean_without_starting_anything(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"a check started a process: {args[:1]}")

    # Importing reasoning_gym imports matplotlib, which on a machine that never ran it
    # scans the system's fonts (fc-list) once: a library's import, not the check's doing.
    with contextlib.suppress(ImportError):
        import matplotlib.font_manager  # noqa: F401
    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    monkeypatch.setattr(asyncio, "create_subprocess_exec", refuse)
    suite, problems = check_file(name)
    missing = [p for p in problems if "pip install" in p.message]  # an extra not installed
    if missing:
        pytest.skip(str(missing[0]))
    assert suite is not None and problems == []
    code, lines = validate(name)
    assert code == 0 and lines[0].startswith("ok: ")


# --- list and show print identifiers whole ----------------------------------------------


LONG_SUITE = "a-suite-with-a-rather-long-name-for-a-narrow-pipe"
LONG_TASK = "guess-the-number-with-a-task-id-longer-than-sixty"


@pytest.mark.parametrize("command", ["list", "show"])
def test_list_and_show_keep_ids_whole_in_a_narrow_pipe(tmp_path: Path, command: str) -> None:
    (tmp_path / f"{LONG_SUITE}.yaml").write_text(
        f"description: {'words ' * 30}\n"
        f"tasks:\n  - env: game:GuessTheNumber-v0-easy\n    id: {LONG_TASK}\n"
    )
    args = ["list", "--dir", str(tmp_path)] if command == "list" else ["show", LONG_SUITE]
    if command == "show":
        args += ["--dir", str(tmp_path)]
    result = CliRunner().invoke(suites_app, args, env={"COLUMNS": "60"})
    assert result.exit_code == 0, result.output
    assert LONG_SUITE in result.output
    if command == "show":
        assert LONG_TASK in result.output and "game:GuessTheNumber-v0-easy" in result.output
