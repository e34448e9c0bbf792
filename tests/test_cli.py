from __future__ import annotations

import subprocess
import sys

from typer.testing import CliRunner

from gem_eval.cli.app import app
from tests.fixtures.openai_server import FakeOpenAIServer, Reply

runner = CliRunner()


def run_cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gem_eval", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.startswith("gem-eval 0.")


def test_envs_list_filters_by_family() -> None:
    result = runner.invoke(app, ["envs", "list", "--family", "game"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "game:Wordle-v0-easy" in result.output
    assert "game:Sudoku-v0-hard" in result.output


def test_envs_show_prints_settings_and_first_observation() -> None:
    result = runner.invoke(app, ["envs", "show", "game:GuessTheNumber-v0-easy"])
    assert result.exit_code == 0
    assert "max_number=10" in result.output
    assert "between 1 and 10" in result.output


def test_play_oracle_prints_a_solved_transcript() -> None:
    result = runner.invoke(
        app, ["play", "game:GuessTheNumber-v0-hard", "--seed", "3"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    assert "Correct! The number was" in result.output
    assert "terminated" in result.output
    assert "yes" in result.output  # success column


def test_play_with_env_arguments() -> None:
    result = runner.invoke(
        app,
        ["play", "game:GuessTheNumber-v0", "-a", "max_number=3", "--seed", "1"],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "between 1 and 3" in result.output


def test_user_errors_are_one_line_with_exit_code_2() -> None:
    for args, message in [
        (["play", "game:Wordel-v0-easy"], "Did you mean: game:Wordle-v0-easy"),
        (["play", "game:Wordle-v0-easy", "--policy", "smart"], "unknown policy 'smart'"),
        (["play", "game:Wordle-v0-easy", "-a", "lenght=3"], "no parameter 'lenght'"),
        (["play", "game:Wordle-v0-easy", "-a", "oops"], "key=value"),
        (["envs", "list", "--family", "nope"], "no envs in family"),
    ]:
        result = run_cli(*args)
        assert result.returncode == 2, (args, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
        assert message in lines[0]
        assert "Traceback" not in result.stderr


def test_help_imports_no_heavy_packages() -> None:
    code = (
        "import sys\n"
        "from gem_eval.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('litellm', 'pandas', 'docker', 'mcp', 'numpy') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "HEAVY []" in out.stdout


def test_play_as_a_human_reads_moves_from_stdin() -> None:
    # Seed 0 of -easy hides 7: these four moves miss it, one of them unboxed.
    moves = "\\boxed{5}\nno box\n\\boxed{8}\n\\boxed{6}\n"
    result = run_cli(
        "play", "game:GuessTheNumber-v0-easy", "--policy", "human", "--seed", "0", stdin=moves
    )
    assert result.returncode == 0, result.stderr
    assert "5 is too low" in result.stdout
    assert "Format error" in result.stdout
    assert "Out of turns (4)" in result.stdout


def test_human_input_ending_early_is_a_user_error() -> None:
    result = run_cli(
        "play", "game:GuessTheNumber-v0-easy", "--policy", "human", "--seed", "0", stdin=""
    )
    assert result.returncode == 2
    assert result.stderr.strip() == "error: input ended before the episode did"


def test_play_with_a_model_served_over_http(openai_server: FakeOpenAIServer) -> None:
    openai_server.enqueue(Reply("I guess \\boxed{5}"), Reply("\\boxed{7}"))
    args = ["play", "game:GuessTheNumber-v0-easy", "--seed", "0", "--model", "openai/fake"]
    args += ["--model-base-url", openai_server.base_url, "--temperature", "0.2"]
    result = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "5 is too low" in result.output and "Correct! The number was 7" in result.output
    assert "outcome  completed" in result.output and "success  yes" in result.output
    assert openai_server.requests[0].body["temperature"] == 0.2


def test_missing_api_key_is_one_line_before_any_episode() -> None:
    import os

    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    result = subprocess.run(
        [sys.executable, "-m", "gem_eval", "play", "game:GuessTheNumber-v0", "-m", "openai/gpt-4o"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        "error: model 'openai/gpt-4o' needs OPENAI_API_KEY: set it in the environment"
    ]
