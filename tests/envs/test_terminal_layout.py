"""Terminal-Bench task directories without Docker: reading both layouts (TB1 ``task.yaml``,
TB2 ``task.toml``) and their errors, finding tasks, what ``TerminalEnv`` asks of the
sandbox, its expansion of a directory of tasks, and reading the tests' results (pytest's
summary, the reward file)."""

from __future__ import annotations

import math
import re
import textwrap
from pathlib import Path

import pytest

from gem_eval.envs.terminal.env import TerminalEnv
from gem_eval.envs.terminal.layout import find_tasks, is_task_dir, load_task
from gem_eval.envs.terminal.results import parse_pytest, parse_reward, pytest_reward
from gem_eval.errors import TaskFormatError, UserError

TB2_TOML = """
    version = "1.0"

    [metadata]
    difficulty = "hard"
    category = "data-processing"
    tags = ["text", "counting"]

    [agent]
    timeout_sec = 450.0

    [verifier]
    timeout_sec = 90

    [verifier.env]
    MODE = "strict"
    LEVEL = 3

    [environment]
    cpus = 2
    memory_mb = 3072
    allow_internet = false
"""

TB1_YAML = """
    instruction: |-
      Sum the numbers in /app/numbers.csv.
    difficulty: easy
    category: data-processing
    tags: [csv, math]
    parser_name: pytest
    max_agent_timeout_sec: 180
    max_test_timeout_sec: 45.5
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def tb2(
    root: Path,
    name: str = "count-words",
    toml: str = TB2_TOML,
    dockerfile: str | None = "FROM python:3.12-slim\nWORKDIR /srv\nRUN true\nWORKDIR /srv/app\n",
    instruction: str | None = "\n  Count the words in /srv/app/in.txt.  \n",
    solution: bool = True,
    test_sh: bool = True,
) -> Path:
    """A TB2 task directory under ``root``; ``None``/``False`` leave a file out."""
    path = root / name
    write(path / "task.toml", toml)
    if instruction is not None:
        (path / "instruction.md").write_text(instruction)
    if dockerfile is not None:
        write(path / "environment" / "Dockerfile", dockerfile)
    if solution:
        write(path / "solution" / "solve.sh", "echo 3 > /srv/app/out.txt\n")
    if test_sh:
        write(path / "tests" / "test.sh", "echo 1 > /logs/verifier/reward.txt\n")
    return path


def tb1(
    root: Path,
    name: str = "sum-numbers",
    yaml_text: str = TB1_YAML,
    dockerfile: str = "FROM python:3.12\nWORKDIR /app\n",
    compose: str | None = None,
    run_tests: bool = True,
    solution: bool = True,
) -> Path:
    path = root / name
    write(path / "task.yaml", yaml_text)
    write(path / "Dockerfile", dockerfile)
    if compose is not None:
        write(path / "docker-compose.yaml", compose)
    if run_tests:
        write(path / "run-tests.sh", "pytest -rA $TEST_DIR/test_outputs.py\n")
    write(path / "tests" / "test_outputs.py", "def test_sum():\n    pass\n")
    if solution:
        write(path / "solution.sh", "echo 6 > /app/sum.txt\n")
    return path


def format_error(path: Path) -> str:
    with pytest.raises(TaskFormatError) as err:
        load_task(path)
    message = str(err.value)
    assert "\n" not in message
    return message


# --- TB2 -------------------------------------------------------------------------------------


def test_tb2_full_parse(tmp_path: Path) -> None:
    path = tb2(tmp_path)
    task = load_task(path)
    assert task.layout == "tb2"
    assert task.name == "count-words"
    assert task.path == path.resolve()
    assert task.instruction == "Count the words in /srv/app/in.txt."
    assert task.context == path.resolve() / "environment"
    assert task.image is None
    assert task.dockerfile == "Dockerfile"
    assert task.agent_timeout_s == 450.0
    assert task.test_timeout_s == 90.0
    assert task.cpus == 2.0
    assert task.memory_mb == 3072
    assert task.network is False
    assert task.verifier_env == {"MODE": "strict", "LEVEL": "3"}
    assert task.tests == path.resolve() / "tests"
    assert task.test_script == "test.sh"
    assert task.solution == path.resolve() / "solution"
    assert task.workdir == "/srv/app"
    assert task.difficulty == "hard"
    assert task.category == "data-processing"
    assert task.tags == ["text", "counting"]
    assert task.test_weights == {}


def test_tb2_defaults(tmp_path: Path) -> None:
    task = load_task(tb2(tmp_path, toml='version = "1.0"\n', dockerfile="FROM debian:12\n"))
    assert (task.agent_timeout_s, task.test_timeout_s) == (600.0, 600.0)
    assert (task.cpus, task.memory_mb, task.network) == (1.0, 2048, True)
    assert task.workdir == "/app"  # no WORKDIR in the Dockerfile
    assert task.verifier_env == {}
    assert (task.difficulty, task.category, task.tags) == (None, None, [])


@pytest.mark.parametrize(
    ("memory", "expected"),
    [('"4G"', 4096), ('"512m"', 512), ('"1.5GB"', 1536), ('"2048"', 2048), ("1024", 1024)],
)
def test_tb2_memory_sizes(tmp_path: Path, memory: str, expected: int) -> None:
    task = load_task(tb2(tmp_path, toml=f"[environment]\nmemory = {memory}\n"))
    assert task.memory_mb == expected


def test_tb2_bad_memory_size(tmp_path: Path) -> None:
    message = format_error(tb2(tmp_path, toml='[environment]\nmemory = "lots"\n'))
    assert "task.toml" in message
    assert "'lots'" in message


def test_tb2_no_solution_means_no_oracle(tmp_path: Path) -> None:
    assert load_task(tb2(tmp_path, solution=False)).solution is None


def test_tb2_prebuilt_image_without_environment_dir(tmp_path: Path) -> None:
    toml = '[environment]\ndocker_image = "ghcr.io/example/task:1"\n'
    task = load_task(tb2(tmp_path, toml=toml, dockerfile=None))
    assert task.image == "ghcr.io/example/task:1"
    assert task.context is None
    assert task.workdir == "/app"


def test_tb2_needs_a_dockerfile_or_an_image(tmp_path: Path) -> None:
    path = tb2(tmp_path, toml='version = "1.0"\n', dockerfile=None)
    message = format_error(path)
    assert message.startswith(f"{path.resolve()}: ")
    assert "Dockerfile" in message


def test_tb2_missing_instruction(tmp_path: Path) -> None:
    path = tb2(tmp_path, instruction=None)
    message = format_error(path)
    assert message.startswith(f"{path.resolve()}: ")
    assert "instruction.md" in message


def test_tb2_missing_test_script(tmp_path: Path) -> None:
    path = tb2(tmp_path, test_sh=False)
    message = format_error(path)
    assert message.startswith(f"{path.resolve()}: ")
    assert "tests/test.sh" in message


def test_tb2_bad_toml_names_its_line(tmp_path: Path) -> None:
    path = tb2(tmp_path, toml='version = "1.0"\n\n[agent]\ntimeout_sec 300\n')
    message = format_error(path)
    assert message.startswith(f"{path.resolve() / 'task.toml'}:4: ")


@pytest.mark.parametrize(
    "toml",
    [
        "[agent]\ntimeout_sec = -5\n",
        "[verifier]\ntimeout_sec = 0\n",
        '[agent]\ntimeout_sec = "long"\n',
        "[environment]\ncpus = true\n",
    ],
)
def test_tb2_bad_numbers(tmp_path: Path, toml: str) -> None:
    path = tb2(tmp_path, toml=toml)
    message = format_error(path)
    assert message.startswith(f"{path.resolve() / 'task.toml'}: ")
    assert "must be a number > 0" in message


def test_tb2_table_that_is_not_a_table(tmp_path: Path) -> None:
    message = format_error(tb2(tmp_path, toml='agent = "fast"\n'))
    assert "[agent] must be a table" in message


def test_tb2_wins_over_tb1_when_both_are_present(tmp_path: Path) -> None:
    path = tb2(tmp_path)
    write(path / "task.yaml", "instruction: the TB1 text\n")
    assert load_task(path).layout == "tb2"


def test_tb2_relative_workdir_follows_the_previous_one(tmp_path: Path) -> None:
    task = load_task(tb2(tmp_path, dockerfile="FROM debian:12\nWORKDIR /srv\nWORKDIR app\n"))
    assert task.workdir == "/srv/app"


# --- TB1 -------------------------------------------------------------------------------------


def test_tb1_full_parse(tmp_path: Path) -> None:
    compose = """
        services:
          client:
            build:
              dockerfile: Dockerfile.agent
            image: ${T_BENCH_TASK_DOCKER_CLIENT_IMAGE_NAME}
            environment:
              - TEST_DIR=${T_BENCH_TEST_DIR}
              - LOGS=$T_BENCH_CONTAINER_LOGS_PATH/run
              - OTHER=${SOMETHING_ELSE}
    """
    path = tb1(tmp_path, dockerfile="FROM python:3.12\nWORKDIR /wrong\n", compose=compose)
    write(path / "Dockerfile.agent", "FROM python:3.12\nWORKDIR /opt/work\n")
    task = load_task(path)
    assert task.layout == "tb1"
    assert task.name == "sum-numbers"
    assert task.instruction == "Sum the numbers in /app/numbers.csv."
    assert task.agent_timeout_s == 180.0
    assert task.test_timeout_s == 45.5
    assert task.context == path.resolve()
    assert task.dockerfile == "Dockerfile.agent"
    assert task.workdir == "/opt/work"  # from the compose file's Dockerfile
    assert task.env == {
        "TEST_DIR": "/tests",
        "LOGS": "/logs/run",
        "OTHER": "${SOMETHING_ELSE}",
    }
    assert task.test_script == "run-tests.sh"
    assert task.tests == path.resolve() / "tests"
    assert task.verifier_env == {"TEST_DIR": "/tests"}
    assert task.solution == path.resolve() / "solution.sh"
    assert (task.difficulty, task.category, task.tags) == (
        "easy",
        "data-processing",
        ["csv", "math"],
    )


def test_tb1_defaults_and_no_compose(tmp_path: Path) -> None:
    task = load_task(tb1(tmp_path, yaml_text="instruction: Do it.\n", solution=False))
    assert (task.agent_timeout_s, task.test_timeout_s) == (360.0, 60.0)
    assert task.dockerfile == "Dockerfile"
    assert task.env == {}
    assert task.solution is None
    assert task.test_weights == {}


def test_tb1_compose_environment_mapping_and_build_context(tmp_path: Path) -> None:
    compose = """
        services:
          client:
            build:
              context: docker
              dockerfile: Dockerfile
            environment:
              TEST_DIR: ${T_BENCH_TEST_DIR}
              AGENT_LOGS: ${T_BENCH_CONTAINER_AGENT_LOGS_PATH}
    """
    path = tb1(tmp_path, compose=compose)
    write(path / "docker" / "Dockerfile", "FROM debian:12\nWORKDIR /work\n")
    task = load_task(path)
    assert task.context == path.resolve() / "docker"
    assert task.workdir == "/work"
    assert task.env == {"TEST_DIR": "/tests", "AGENT_LOGS": "/agent-logs"}


def test_tb1_legacy_descriptions(tmp_path: Path) -> None:
    text = """
        descriptions:
          - key: base
            description: |
              Write hello to /app/out.txt.
          - key: hard
            description: Something else.
    """
    task = load_task(tb1(tmp_path, yaml_text=text))
    assert task.instruction == "Write hello to /app/out.txt."


def test_tb1_weights(tmp_path: Path) -> None:
    text = "instruction: x\ntest_weights:\n  test_sum: 3\n  test_max: 0.5\n"
    assert load_task(tb1(tmp_path, yaml_text=text)).test_weights == {
        "test_sum": 3.0,
        "test_max": 0.5,
    }


def test_tb1_missing_instruction_is_line_1(tmp_path: Path) -> None:
    path = tb1(tmp_path, yaml_text="difficulty: easy\ncategory: x\n")
    message = format_error(path)
    assert message.startswith(f"{path.resolve() / 'task.yaml'}:1: ")
    assert "instruction" in message


def test_tb1_blank_instruction(tmp_path: Path) -> None:
    message = format_error(tb1(tmp_path, yaml_text='instruction: "   "\n'))
    assert "task.yaml:1: " in message


def test_tb1_unsupported_parser_names_its_line(tmp_path: Path) -> None:
    path = tb1(tmp_path, yaml_text="instruction: x\ndifficulty: easy\nparser_name: swebench\n")
    message = format_error(path)
    assert message.startswith(f"{path.resolve() / 'task.yaml'}:3: ")
    assert "'swebench'" in message


@pytest.mark.parametrize(
    "weights",
    ["test_weights:\n  test_a: -1\n", "test_weights:\n  test_a: lots\n", "test_weights: [a, b]\n"],
)
def test_tb1_bad_weights_name_their_line(tmp_path: Path, weights: str) -> None:
    path = tb1(tmp_path, yaml_text=f"instruction: x\ndifficulty: easy\n{weights}")
    message = format_error(path)
    assert message.startswith(f"{path.resolve() / 'task.yaml'}:3: ")
    assert "test_weights" in message


def test_tb1_bad_timeout_names_its_line(tmp_path: Path) -> None:
    path = tb1(tmp_path, yaml_text="instruction: x\n\nmax_agent_timeout_sec: 0\n")
    message = format_error(path)
    assert message.startswith(f"{path.resolve() / 'task.yaml'}:3: ")
    assert "max_agent_timeout_sec" in message


def test_tb1_yaml_syntax_error_names_its_line(tmp_path: Path) -> None:
    path = tb1(tmp_path, yaml_text="instruction: x\ntags: [a, b\ncategory: c\n")
    assert format_error(path).startswith(f"{path.resolve() / 'task.yaml'}:")


def test_tb1_not_a_mapping(tmp_path: Path) -> None:
    assert "task.yaml:1: must be a mapping" in format_error(tb1(tmp_path, yaml_text="- a\n"))


def test_tb1_multi_service_compose_needs_a_client(tmp_path: Path) -> None:
    # Sidecars are read (tests/envs/test_terminal_compose.py); the agent's is `client`.
    compose = """
        services:
          agent:
            build: {dockerfile: Dockerfile}
          db:
            image: postgres:16
    """
    path = tb1(tmp_path, compose=compose)
    message = format_error(path)
    assert message.startswith(f"{path.resolve() / 'docker-compose.yaml'}:1: ")
    assert "agent, db" in message


def test_tb1_missing_run_tests(tmp_path: Path) -> None:
    path = tb1(tmp_path, run_tests=False)
    message = format_error(path)
    assert message.startswith(f"{path.resolve()}: ")
    assert "run-tests.sh" in message


def test_not_a_task_directory(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert "not a task directory" in format_error(tmp_path / "empty")


# --- finding tasks ---------------------------------------------------------------------------


def test_find_tasks(tmp_path: Path) -> None:
    root = tmp_path / "tasks"
    b = tb2(root, "b-task")
    a = tb1(root / "group", "a-task")
    (root / "notes").mkdir()
    write(root / "notes" / "task.txt", "not a task\n")
    assert is_task_dir(a) and is_task_dir(b)
    assert not is_task_dir(root)
    assert find_tasks(root) == [b, a]  # sorted by path: b-task < group/a-task
    assert find_tasks(a) == [a]


def test_find_tasks_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such directory"):
        find_tasks(tmp_path / "missing")
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    with pytest.raises(UserError, match="no task directories"):
        find_tasks(tmp_path / "empty")


# --- TerminalEnv -----------------------------------------------------------------------------


def test_env_resources_of_a_built_task(tmp_path: Path) -> None:
    path = tb1(tmp_path, compose="services:\n  c:\n    environment: [A=1]\n")
    env = TerminalEnv(
        str(path), command_timeout_s=30.0, pids=64, image_map={"python:3*": "local/py"}
    )
    assert env.instruction() == "Sum the numbers in /app/numbers.csv."
    resources = env.resources()
    sandbox = resources.sandbox
    assert sandbox.type == "docker"
    assert sandbox.image is None
    assert sandbox.build == str(path.resolve())
    assert sandbox.dockerfile == "Dockerfile"
    assert sandbox.image_map == {"python:3*": "local/py"}
    assert sandbox.network is True
    assert sandbox.memory == "2048m"
    assert sandbox.cpus == 1.0
    assert sandbox.pids == 64
    assert sandbox.user == "root"
    assert sandbox.workdir == "/app"
    assert sandbox.env == {"A": "1"}
    assert [(t.name, t.settings) for t in resources.tools] == [("bash", {"timeout_s": 30.0})]
    assert resources.max_time_s == 180.0


def test_env_resources_of_a_tb2_task(tmp_path: Path) -> None:
    path = tb2(tmp_path)
    resources = TerminalEnv(str(path)).resources()
    assert resources.sandbox.build == str(path.resolve() / "environment")
    assert resources.sandbox.network is False
    assert resources.sandbox.memory == "3072m"
    assert resources.sandbox.cpus == 2.0
    assert resources.sandbox.workdir == "/srv/app"
    assert resources.max_time_s == 450.0
    assert resources.tools[0].settings == {"timeout_s": 180.0}


def test_env_resources_of_a_prebuilt_image(tmp_path: Path) -> None:
    toml = '[environment]\ndocker_image = "ghcr.io/example/task:1"\n'
    sandbox = TerminalEnv(str(tb2(tmp_path, toml=toml, dockerfile=None))).resources().sandbox
    assert sandbox.image == "ghcr.io/example/task:1"
    assert sandbox.build is None


def test_env_expand(tmp_path: Path) -> None:
    root = tmp_path / "tasks"
    a = tb1(root, "a-task")
    b = tb2(root, "b-task", toml='[metadata]\ntags = ["x"]\n')
    out = TerminalEnv.expand({"path": str(root), "pids": 99})
    assert out is not None
    assert [t.name for t in out] == ["a-task", "b-task"]
    assert [t.args for t in out] == [{"path": str(a), "pids": 99}, {"path": str(b), "pids": 99}]
    assert [t.category for t in out] == ["data-processing", None]
    assert [t.tags for t in out] == [["easy", "csv", "math"], ["x"]]


def test_env_expand_leaves_one_task_alone(tmp_path: Path) -> None:
    assert TerminalEnv.expand({"path": str(tb2(tmp_path))}) is None
    assert TerminalEnv.expand({}) is None


def test_env_expand_reports_a_broken_task(tmp_path: Path) -> None:
    tb1(tmp_path / "tasks", "good")
    bad = tb1(tmp_path / "tasks", "bad", yaml_text="instruction: x\nparser_name: other\n")
    with pytest.raises(TaskFormatError, match=f"^{bad.resolve() / 'task.yaml'}:2: "):
        TerminalEnv.expand({"path": str(tmp_path / "tasks")})


# --- pytest's summary ------------------------------------------------------------------------

PYTEST_OUTPUT = """
============================= test session starts ==============================
collected 7 items

tests/test_outputs.py .FsxXE                                             [100%]

=================================== FAILURES ===================================
___________________________________ test_max ___________________________________
    def test_max():
>       assert read() == 9
E       AssertionError
=========================== short test summary info ============================
PASSED tests/test_outputs.py::test_sum
FAILED tests/test_outputs.py::test_max - assert 3 == 9
ERROR tests/test_outputs.py::test_setup - RuntimeError: no file
XFAIL tests/test_outputs.py::test_known - flaky upstream
XPASS tests/test_outputs.py::test_lucky - known
SKIPPED [1] tests/test_outputs.py:40: needs network
PASSED tests/test_outputs.py::test_param[a::b]
==== 1 failed, 2 passed, 1 skipped, 1 xfailed, 1 xpassed, 1 error in 0.10s =====
"""


def test_parse_pytest_statuses() -> None:
    statuses = parse_pytest(PYTEST_OUTPUT)
    assert statuses is not None
    assert statuses["test_sum"] == "PASSED"
    assert statuses["test_max"] == "FAILED"
    assert statuses["test_setup"] == "ERROR"
    assert statuses["test_known"] == "XFAIL"
    assert statuses["test_lucky"] == "XPASS"
    assert statuses["test_param[a::b]"] == "PASSED"  # only the file is stripped
    skipped = [name for name, status in statuses.items() if status == "SKIPPED"]
    assert len(skipped) == 1 and re.fullmatch(r"\S+\.py:\d+", skipped[0])  # keyed by place
    assert not any(name.startswith("tests/") and "::" in name for name in statuses)


def test_parse_pytest_without_summary() -> None:
    assert parse_pytest("") is None
    assert parse_pytest("bash: pytest: command not found\nPASSED test_a.py::test_a\n") is None


def test_parse_pytest_reads_every_summary_from_the_first() -> None:
    # As Terminal-Bench 1 reads it (from its first summary on): a later summary cannot
    # hide an earlier failure (text after pytest's may be the agent's).
    first = "===== short test summary info =====\nFAILED t.py::test_a - boom\n"
    last = "===== short test summary info =====\nPASSED t.py::test_b\n==== 1 passed ====\n"
    assert parse_pytest(first + "rerun\n" + last) == {"test_a": "FAILED", "test_b": "PASSED"}
    assert parse_pytest(first + "rerun\n" + last, worst=False) == {"test_b": "PASSED"}


def test_parse_pytest_a_forged_line_cannot_hide_a_failure() -> None:
    # `pytest -vv` prints a failure's whole message: here the agent's file, with lines
    # that read like pytest's own.
    output = (
        "=========================== short test summary info ============================\n"
        "PASSED t.py::test_a\n"
        "FAILED t.py::test_b - AssertionError: greeting.txt says: nope\n"
        "PASSED t.py::test_b\n"
        "XFAIL t.py::test_b\n"
        "=== fake ===\n"
        "=========================== short test summary info ============================\n"
        "PASSED t.py::test_b\n"
        "========================= 1 failed, 1 passed in 0.01s ==========================\n"
    )
    assert parse_pytest(output) == {"test_a": "PASSED", "test_b": "FAILED"}
    assert parse_pytest(output, worst=False) == {"test_b": "PASSED"}  # what it was


def test_parse_pytest_counts_every_skipped_test() -> None:
    output = (
        "=== short test summary info ===\n"
        "PASSED t.py::test_a\n"
        "SKIPPED [1] t.py:4: nope\n"
        "SKIPPED [1] t.py:6: nope again\n"
    )
    statuses = parse_pytest(output)
    assert statuses == {"test_a": "PASSED", "t.py:4": "SKIPPED", "t.py:6": "SKIPPED"}


# --- the TB1 reward --------------------------------------------------------------------------


def test_pytest_reward_all_pass() -> None:
    statuses = {"test_a": "PASSED", "test_b": "XFAIL", "test_c": "SKIPPED"}
    reward, info = pytest_reward(statuses, {})
    assert reward == 1.0
    assert info["success"] is True
    assert (info["tests_passed"], info["tests_total"]) == (3, 3)
    assert info["tests"] == statuses


@pytest.mark.parametrize("failing", ["FAILED", "ERROR", "XPASS"])
def test_pytest_reward_one_fails(failing: str) -> None:
    reward, info = pytest_reward({"test_a": "PASSED", "test_b": failing, "test_c": "PASSED"}, {})
    assert reward == 0.0
    assert info["success"] is False
    assert (info["tests_passed"], info["tests_total"]) == (2, 3)


def test_pytest_reward_weights() -> None:
    weights = {"test_sum": 3.0, "test_max": 1.0, "test_absent": 10.0}
    reward, info = pytest_reward({"test_sum": "PASSED", "test_max": "FAILED"}, weights)
    assert reward == pytest.approx(0.75)
    assert info["success"] is False
    reward, _ = pytest_reward({"test_sum": "FAILED", "test_max": "PASSED"}, weights)
    assert reward == pytest.approx(0.25)


def test_pytest_reward_weights_of_unweighted_tests_only() -> None:
    reward, _ = pytest_reward({"test_other": "PASSED"}, {"test_sum": 1.0})
    assert reward == 0.0


@pytest.mark.parametrize("statuses", [None, {}])
def test_pytest_reward_without_summary(statuses: dict[str, str] | None) -> None:
    reward, info = pytest_reward(statuses, {"test_a": 1.0})
    assert reward == 0.0
    assert info["success"] is False
    assert "pytest summary" in info["verifier_error"]


def test_pytest_reward_of_real_output() -> None:
    reward, info = pytest_reward(parse_pytest(PYTEST_OUTPUT), {})
    assert reward == 0.0
    assert info["tests_passed"] == 4  # test_sum, test_known, the skip, test_param


# --- the TB2 reward file ---------------------------------------------------------------------


def test_parse_reward_txt() -> None:
    assert parse_reward("reward.txt", "  0.5\n\n") == (0.5, {"reward": 0.5})
    assert parse_reward("/logs/verifier/reward.txt", "1") == (1.0, {"reward": 1.0})


def test_parse_reward_json_with_reward_key() -> None:
    value, rewards = parse_reward("reward.json", '{"accuracy": 0.9, "reward": 0.25}')
    assert value == 0.25
    assert rewards == {"accuracy": 0.9, "reward": 0.25}


def test_parse_reward_json_mean() -> None:
    assert parse_reward("reward.json", '{"a": 1, "b": 0, "c": 0.5}')[0] == pytest.approx(0.5)
    assert parse_reward("reward.json", '{"only": 0.3}') == (0.3, {"only": 0.3})


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("reward.txt", "nan"),
        ("reward.txt", "inf"),
        ("reward.txt", "passed"),
        ("reward.txt", ""),
        ("reward.json", '{"reward": Infinity}'),
        ("reward.json", '{"a": 1, "b": NaN}'),
        ("reward.json", "[1, 2]"),
        ("reward.json", "0.5"),
        ("reward.json", "{}"),
        ("reward.json", '{"reward": "high"}'),
        ("reward.json", "{not json"),
    ],
)
def test_parse_reward_rejects(name: str, text: str) -> None:
    with pytest.raises(ValueError):
        parse_reward(name, text)


def test_parse_reward_values_are_finite() -> None:
    value, rewards = parse_reward("reward.json", '{"x": 2, "y": 4}')
    assert math.isfinite(value) and value == 3.0
    assert rewards == {"x": 2.0, "y": 4.0}
