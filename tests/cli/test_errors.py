"""Every mistake on the command line is one line on stderr, ``error: ...``, exit 2:
Click's own (an unknown option, a value out of range) as gem-eval's; help still shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.invoke import gem_eval


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["run", "--nope"], "no such option: --nope"),
        (["run", "--concurrency", "0"], "invalid value for '--concurrency'"),
        (["run", "--limit", "x"], "invalid value for '--limit'"),
        (["run", "--timeout", "0"], "expected a finite number of seconds above 0 (got 0)"),
        (["run", "--timeout", "-5"], "above 0 (got -5)"),
        (["run", "--timeout", "inf"], "above 0 (got inf)"),
        (["run", "--timeout", "nan"], "above 0 (got nan)"),
        (["run", "--max-retries", "-1"], "invalid value for '--max-retries'"),
        (["run", "-m"], "option '-m' requires an argument"),
        (["suites", "lst"], "no such command 'lst'"),
        (["suites", "show"], "missing argument"),
    ],
)
def test_option_errors_are_one_line(argv: list[str], said: str, tmp_path: Path) -> None:
    if argv[0] == "run":
        argv = ["run", "--results-dir", str(tmp_path / "r"), *argv[1:]]
    result = gem_eval(*argv)
    assert result.code == 2, result
    assert result.lines == [result.lines[0]] and result.lines[0].startswith("error: "), result
    assert said in result.stderr
    # Where the help is, whenever Click says which command it parsed (not for a value
    # missing at the end of the line).
    assert "(see gem-eval " in result.stderr or argv[-1] == "-m"
    assert "Usage:" not in result.stderr and "Try '" not in result.stderr
    assert not (tmp_path / "r").exists()


def test_help_and_a_group_without_command_still_show_help() -> None:
    shown = gem_eval("run", "--help")
    assert shown.code == 0 and "Usage: gem-eval run" in shown.stdout
    assert "--timeout SECONDS" in shown.stdout
    group = gem_eval("suites")
    assert group.code == 2 and "Usage: gem-eval suites" in group.stderr
    assert gem_eval("--version").code == 0


def test_a_timeout_above_zero_and_no_retries_are_taken(tmp_path: Path) -> None:
    result = gem_eval(
        "run", "-s", "smoke", "-m", "oracle", "--timeout", "0.5", "--max-retries", "0",
        "--dry-run", "--results-dir", str(tmp_path),
    )  # fmt: skip
    assert result.code == 0, result


@pytest.mark.parametrize(
    ("where", "said"),
    [
        ("a-file", "results directory '{t}/a-file' is a file (set --results-dir"),
        ("a-file/runs", "'{t}/a-file/runs' cannot be made: '{t}/a-file' is a file"),
    ],
)
def test_a_results_directory_that_is_a_file_is_one_line(
    where: str, said: str, tmp_path: Path
) -> None:
    (tmp_path / "a-file").write_text("not a folder\n")
    result = gem_eval("run", "-s", "smoke", "-m", "oracle", "--results-dir", str(tmp_path / where))
    assert result.code == 2, result
    assert len(result.lines) == 1 and result.lines[0].startswith("error: "), result
    assert said.format(t=tmp_path) in result.lines[0]
    assert "episodes to play" not in result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_a_model_without_a_provider_is_one_line_before_the_run(tmp_path: Path) -> None:
    result = gem_eval("run", "-s", "smoke", "-m", "stub", "--results-dir", str(tmp_path / "r"))
    assert result.code == 2, result
    assert len(result.lines) == 1, result
    assert result.lines[0].startswith("error: model 'stub': litellm cannot tell its provider")
    assert "episodes to play" not in result.stdout and not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("prices", "said"),
    [
        (["oracle"], "--price takes MODEL=IN,OUT (USD per million input, output tokens)"),
        (["oracle=1"], "got 'oracle=1'"),
        (["=1,2"], "got '=1,2'"),
        (["oracle=a,b"], "got 'oracle=a,b': two numbers >= 0"),
        (["oracle=-1,2"], "two numbers >= 0"),
        (["oracle=nan,2"], "two numbers >= 0"),
        (["oracle=1,2", "oracle=1,2"], "--price oracle given twice: price each model once"),
        (["openai/gpt-5=1,2"], "--price openai/gpt-5: the run plays no model 'openai/gpt-5'"),
    ],
)
def test_a_bad_price_is_one_line(prices: list[str], said: str, tmp_path: Path) -> None:
    given = [arg for price in prices for arg in ("--price", price)]
    result = gem_eval(
        "run", "-s", "smoke", "-m", "oracle", *given, "--results-dir", str(tmp_path / "r")
    )
    assert result.code == 2, result
    assert len(result.lines) == 1 and result.lines[0].startswith("error: "), result
    assert said in result.lines[0]
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("model", ["oracle", "noop"])
@pytest.mark.parametrize("dry_run", [False, True])
def test_a_reference_model_for_an_agent_program_is_one_line(
    model: str, dry_run: bool, tmp_path: Path
) -> None:
    # oracle would apply the reference solution and score it as the agent's; noop's
    # "Done." would keep the agent asking until the task's time ran out.
    argv = ["run", "--suite", "terminal-bench", "--agent", "terminus-2", "-m", model]
    argv += ["--task", "terminal/sort-downloads", "--results-dir", str(tmp_path / "r")]
    result = gem_eval(*argv, *(["--dry-run"] if dry_run else []))
    assert result.code == 2, result
    assert result.lines == [
        f"error: --model {model} plays gem-eval's own loop, not agent 'terminus-2': give a "
        "real model for the agent, or `gem-eval tasks check SUITE --agent terminus-2` to "
        "check that the agent runs in each task"
    ]
    assert not (tmp_path / "r").exists()


def test_a_refused_rollout_of_an_env_id_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "batch"
    result = gem_eval(
        "rollout", "game:GuessTheNumber-v0-easy", "--agent", "terminus-2", "-m", "openai/x",
        "--model-base-url", "http://127.0.0.1:1/v1", "--episodes", "1", "--out", str(out),
        "--results-dir", str(tmp_path / "r"),
    )  # fmt: skip
    assert result.code == 2, result
    # Its suite is gem-eval's own (written for the env id): no file and line of it.
    assert result.lines == [
        "error: agent 'terminus-2' cannot play task 'game:GuessTheNumber-v0-easy' (game "
        "tasks): it plays terminal tasks; choose another --agent or task"
    ]
    assert not out.exists() and not (tmp_path / "r").exists()
