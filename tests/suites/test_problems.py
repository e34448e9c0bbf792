"""``suites validate`` reports every mistake of a file: one mistake (a misspelt top-level
key, a task key of the wrong type, a duplicate YAML key) never hides the others."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gem_eval.cli.suites import suites_app
from gem_eval.suites import SuiteError, load_suite
from gem_eval.suites.check import check_file
from gem_eval.suites.yaml_doc import read_yaml


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with a dataset of two questions."""
    monkeypatch.chdir(tmp_path)
    rows = [{"id": "q1", "question": "2 + 2?", "answers": ["4"]}, {"id": "q2", "question": "x"}]
    text = "".join(json.dumps(row) + "\n" for row in rows)
    (tmp_path / "questions.jsonl").write_text(text, encoding="utf-8")
    return tmp_path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def places(name: str) -> list[tuple[str | None, int | None, str]]:
    """``(file, line, field)`` of every problem ``suites validate`` finds in ``name``."""
    _, problems = check_file(name)
    return [(p.path, p.line, p.field) for p in problems]


def test_a_misspelt_top_level_key_hides_no_other_mistake(here: Path) -> None:
    write(
        here / "tasks" / "t.yaml",
        """
        env: game:GuessTheNumber-v0-easy
        epochs: 0
        argz: {max_number: 5}
        args: {max_numbr: 5}
        """,
    )
    write(
        here / "suite.yaml",
        """
        name: many
        defualts:
          samples: 2
        tasks:
          - env: game:GuessTheNumber-v0-easy
            args: {max_number: -5}
          - file: tasks/t.yaml
          - env: qa:QA-v0
            dataset: {path: questions.jsonl}
          - env: game:Wordle-v0-easy
          - env: game:Wordle-v0-easy
          - file: tasks/nowhere.yaml
        """,
    )
    assert places("suite.yaml") == [
        ("suite.yaml", 2, "defualts"),
        ("suite.yaml", 6, "tasks[0].args.max_number"),
        ("suite.yaml", 9, "tasks[2].dataset"),
        ("suite.yaml", 11, "tasks[4].env"),
        ("suite.yaml", 12, "tasks[5].file"),
        ("tasks/t.yaml", 2, "epochs"),
        ("tasks/t.yaml", 3, "argz"),
        ("tasks/t.yaml", 4, "args.max_numbr"),
    ]
    result = CliRunner().invoke(suites_app, ["validate", "suite.yaml"])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 8
    assert lines[0].startswith("error: suite.yaml:2: defualts: unknown key. Did you mean: defaults")
    assert "duplicate task id 'game:Wordle-v0-easy'" in lines[3]
    # A run still stops at the first mistake.
    with pytest.raises(SuiteError, match=r"^suite.yaml:2: defualts: unknown key"):
        load_suite("suite.yaml")


def test_a_task_key_of_the_wrong_type_leaves_the_rest_of_the_task_checked(here: Path) -> None:
    write(
        here / "suite.yaml",
        """
        defaults: 3
        tasks:
          - env: game:Wordel-v0-easy
            arg: {max_turns: 3}
          - env: game:GuessTheNumber-v0-easy
            id: "bad id"
            args: {max_numbr: 5}
          - env: qa:QA-v0
            args: {colour: 2}
            dataset: {path: missing.jsonl, fields: {answr: answers}}
          - env: game:Wordle-v0-easy
            scorer: judge
            tools: [pyhton, serch]
          - env: game:Hangman-v0-easy
            args: 3
            generation: {temperature: -1}
        """,
    )
    assert places("suite.yaml") == [
        ("suite.yaml", 1, "defaults"),
        ("suite.yaml", 3, "tasks[0].env"),
        ("suite.yaml", 4, "tasks[0].arg"),
        ("suite.yaml", 6, "tasks[1].id"),
        ("suite.yaml", 7, "tasks[1].args.max_numbr"),
        ("suite.yaml", 9, "tasks[2].args.colour"),
        ("suite.yaml", 10, "tasks[2].dataset.fields.answr"),
        ("suite.yaml", 10, "tasks[2].dataset.path"),
        ("suite.yaml", 12, "tasks[3].scorer"),
        ("suite.yaml", 13, "tasks[3].tools[0]"),
        ("suite.yaml", 13, "tasks[3].tools[1]"),
        ("suite.yaml", 15, "tasks[4].args"),
        ("suite.yaml", 16, "tasks[4].generation.temperature"),
    ]


def test_an_unknown_key_in_the_defaults_hides_no_task_mistake(here: Path) -> None:
    write(
        here / "suite.yaml",
        """
        defaults:
          args: {max_turns: 3}
          juge: {model: m}
        tasks:
          - env: game:Wordel-v0-easy
          - env: game:Wordle-v0-easy
            scorer: judge
            args: {max_turn: 3}
        """,
    )
    # No "scorer: judge needs a judge": the misspelt `juge` may have been it.
    assert places("suite.yaml") == [
        ("suite.yaml", 2, "defaults.args"),
        ("suite.yaml", 3, "defaults.juge"),
        ("suite.yaml", 5, "tasks[0].env"),
        ("suite.yaml", 8, "tasks[1].args.max_turn"),
    ]


def test_with_no_tasks_to_check_the_rest_is_still_checked(here: Path) -> None:
    write(
        here / "suite.yaml",
        """
        models: [m, m]
        defaults: {limits: {max_turn: 3}}
        tasks: {env: game:Wordle-v0-easy}
        """,
    )
    assert places("suite.yaml") == [
        ("suite.yaml", 1, "models[1]"),
        ("suite.yaml", 2, "defaults.limits.max_turn"),
        ("suite.yaml", 3, "tasks"),
    ]


def test_every_duplicate_yaml_key_is_reported_and_the_rest_checked(here: Path) -> None:
    write(
        here / "tasks" / "t.yaml",
        """
        env: game:Wordle-v0-easy
        samples: 2
        samples: 3
        """,
    )
    write(
        here / "suite.yaml",
        """
        name: a
        tasks:
          - env: game:Wordle-v0-easy
            samples: 2
            samples: 3
          - env: game:Hangman-v0-easy
            args: {max_turns: 3}
            args: {max_turns: 4}
            generation: {temperature: abc}
          - file: tasks/t.yaml
        name: b
        """,
    )
    problems = check_file("suite.yaml")[1]
    assert [str(p) for p in problems] == [
        "suite.yaml:5: tasks[0].samples: duplicate key (first on line 4)",
        "suite.yaml:8: tasks[1].args: duplicate key (first on line 7)",
        "suite.yaml:9: tasks[1].generation.temperature: Input should be a valid number (got 'abc')",
        "suite.yaml:11: name: duplicate key (first on line 1)",
        "tasks/t.yaml:3: samples: duplicate key (first on line 2)",
    ]


def test_a_task_file_named_twice_has_its_mistakes_reported_once(here: Path) -> None:
    write(here / "t.yaml", "env: game:Wordle-v0-easy\nepochs: 0\n")
    write(here / "suite.yaml", "tasks:\n  - file: t.yaml\n  - {file: t.yaml, id: again}\n")
    assert places("suite.yaml") == [("t.yaml", 2, "epochs")]


def test_a_task_id_taken_from_two_task_files_is_reported_at_the_second_file(
    here: Path,
) -> None:
    write(here / "a" / "wordle.yaml", "env: game:Wordle-v0-easy\n")
    write(here / "b" / "wordle.yaml", "env: game:Wordle-v0-hard\n")
    write(here / "suite.yaml", "tasks:\n  - file: a/wordle.yaml\n  - file: b/wordle.yaml\n")
    _, problems = check_file("suite.yaml")
    assert [str(p) for p in problems] == [
        "suite.yaml:3: tasks[1].file: duplicate task id 'wordle' (also tasks[0] on line 2); "
        "give one of them a distinct `id`"
    ]


def test_a_key_repeated_with_a_mapping_is_one_duplicate(tmp_path: Path) -> None:
    path = write(
        tmp_path / "d.yaml",
        """
        defaults:
          limits: {max_turns: 3}
        defaults:
          limits: {max_turns: 4}
          limits: {max_turns: 5}
        """,
    )
    doc = read_yaml(path, collect=True)
    assert [str(e) for e in doc.duplicates] == [
        f"{path}:3: defaults: duplicate key (first on line 1)",
        f"{path}:5: defaults.limits: duplicate key (first on line 4)",
    ]
    assert doc.data == {"defaults": {"limits": {"max_turns": 5}}}  # the last, as PyYAML keeps
    assert doc.lines[("defaults", "limits", "max_turns")] == 5
    with pytest.raises(SuiteError, match=r":3: defaults: duplicate key \(first on line 1\)$"):
        read_yaml(path)


def test_a_key_over_a_merged_mapping_is_no_duplicate(tmp_path: Path) -> None:
    path = write(
        tmp_path / "m.yaml",
        """
        base: &base {max_turns: 3, max_tokens: 100}
        limits:
          <<: *base
          max_turns: 4
        """,
    )
    doc = read_yaml(path)
    assert doc.data["limits"] == {"max_turns": 4, "max_tokens": 100}
    assert doc.lines[("limits", "max_turns")] == 4
