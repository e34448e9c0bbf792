"""The verifier's protections without Docker: the integrity audit's verdict on two
listings, what the probe reads from test scripts and prints, the test run's environment,
and gem-eval's ``sitecustomize`` in a real Python process (the host's)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gem_eval.envs.terminal import verifier
from gem_eval.envs.terminal.audit import changes, findings
from gem_eval.envs.terminal.layout import load_task
from gem_eval.envs.terminal.toolchain import (
    LISTING_FORMAT,
    Toolchain,
    parse,
    parse_listing,
    probe_script,
    script_words,
)
from gem_eval.envs.terminal.verifier_site import confined, pytest_arguments
from gem_eval.errors import TaskFormatError

ROOT = Path(__file__).resolve().parents[2]
TB2 = ROOT / "tests" / "fixtures" / "terminal" / "tb2-count-words"
SITE = "/usr/local/lib/python3.11/dist-packages"
CHANGED, ADDED, REMOVED = 0, 1, 2


def toolchain() -> Toolchain:
    return Toolchain(
        sealed={"/usr/bin/python3.11", "/usr/bin/python3", "/usr/lib/python3.11", "/root/.bashrc"},
        sites={SITE, "/usr/lib/python3/dist-packages"},
        modules={"json", "pytest", "_pytest", "iniconfig"},
    )


def diff(*entries: tuple[str, int]) -> list[dict[str, object]]:
    """A change list as Docker gives it, with the directories above each entry."""
    found: dict[str, int] = {}
    for path, kind in entries:
        found[path] = kind
        parent = os.path.dirname(path)
        while parent != "/" and parent not in found:
            found[parent] = CHANGED
            parent = os.path.dirname(parent)
    return [{"Path": p, "Kind": k} for p, k in found.items()]


def test_a_change_under_a_sealed_path_is_tampering() -> None:
    entries = diff(
        ("/usr/bin/python3", CHANGED),
        ("/usr/lib/python3.11/site.py", CHANGED),
        ("/usr/lib/python3.11/sitecustomize.py", ADDED),
        ("/root/.bashrc", REMOVED),
    )
    tampered, _ = findings(entries, toolchain())
    assert tampered == [
        "added /usr/lib/python3.11/sitecustomize.py",
        "changed /usr/bin/python3",
        "changed /usr/lib/python3.11/site.py",
        "removed /root/.bashrc",
    ]


def test_work_elsewhere_and_byte_code_are_not() -> None:
    entries = diff(
        ("/app/top3.txt", ADDED),
        ("/root/notes.txt", ADDED),  # beside /root/.bashrc, not it
        ("/usr/bin/jq", ADDED),  # a new program no test script names
        ("/usr/lib/python3.11/__pycache__/os.cpython-311.pyc", ADDED),
        (f"{SITE}/requests/__pycache__/api.cpython-311.pyc", ADDED),
    )
    assert findings(entries, toolchain()) == ([], [])


def test_a_new_package_is_allowed_unless_it_hooks_shadows_or_plugs_in() -> None:
    entries = diff(
        (f"{SITE}/requests", ADDED),
        (f"{SITE}/requests/__init__.py", ADDED),
        (f"{SITE}/requests-2.0.dist-info", ADDED),
        (f"{SITE}/requests-2.0.dist-info/METADATA", ADDED),
        (f"{SITE}/helper.py", ADDED),
    )
    tampered, metadata = findings(entries, toolchain())
    assert tampered == [] and metadata == [f"{SITE}/requests-2.0.dist-info"]

    hooks = diff(
        (f"{SITE}/zz.pth", ADDED),
        (f"{SITE}/usercustomize.py", ADDED),
        (f"{SITE}/sitecustomize", ADDED),
        (f"{SITE}/sitecustomize/__init__.py", ADDED),
        (f"{SITE}/iniconfig", ADDED),  # shadows the one pytest imports
        (f"{SITE}/iniconfig/__init__.py", ADDED),
        (f"{SITE}/pytest.py", ADDED),
    )
    tampered, _ = findings(hooks, toolchain())
    assert tampered == [
        f"added {SITE}/iniconfig",
        f"added {SITE}/pytest.py",
        f"added {SITE}/sitecustomize",
        f"added {SITE}/usercustomize.py",
        f"added {SITE}/zz.pth",
    ]


def test_installed_packages_must_not_change() -> None:
    entries = diff(
        ("/usr/lib/python3/dist-packages/_pytest/__init__.py", CHANGED),
        ("/usr/lib/python3/dist-packages/_pytest/evil.py", ADDED),  # in an existing package
        ("/usr/lib/python3/dist-packages/pluggy", REMOVED),
        (SITE, REMOVED),
    )
    tampered, _ = findings(entries, toolchain())
    assert tampered == [
        "added /usr/lib/python3/dist-packages/_pytest/evil.py",
        "changed /usr/lib/python3/dist-packages/_pytest/__init__.py",
        "removed /usr/lib/python3/dist-packages/pluggy",
        f"removed {SITE}",
    ]


def test_removing_a_directory_above_the_toolchain_removes_it() -> None:
    tampered, _ = findings(diff(("/usr/lib", REMOVED), ("/srv/data", REMOVED)), toolchain())
    assert tampered == ["removed /usr/lib"]


def test_a_path_the_task_excludes_may_change() -> None:
    entries = diff(("/root/.bashrc", CHANGED), (f"{SITE}/zz.pth", ADDED))
    tampered, _ = findings(entries, toolchain(), exclude=["/root/.bashrc", SITE])
    assert tampered == []


def test_script_words() -> None:
    script = textwrap.dedent(
        """\
        #!/bin/bash
        # python3 in a comment is not a command
        apt-get update > /dev/null; curl -LsSf https://astral.sh/uv/install.sh | sh
        source $HOME/.local/bin/env
        . /opt/venv/bin/activate
        cd /app && PYTHONPATH=/app python3 -m pytest $TEST_DIR/test_outputs.py -rA
        if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; fi
        uvx -p 3.13 -w pytest==8.4.1 pytest --ctrf /logs/verifier/ctrf.json
        exec /usr/local/bin/node /tests/check.js | tee out.txt
        env -i X=1 jq . < /app/out.json
        bash /tests/run-uv-pytest.sh
        """
    )
    names, programs, sourced = script_words([script])
    assert {"apt-get", "curl", "sh", "cd", "python3", "echo", "uvx", "tee", "jq", "bash"} <= names
    assert "pytest" not in names  # an argument of uvx, not a command
    assert programs == {"/usr/local/bin/node"}
    assert sourced == {"/root/.local/bin/env", "/opt/venv/bin/activate"}


def test_parse_the_probe() -> None:
    output = (
        "@environ\nPATH=/usr/bin:/bin\nMOTD=line one\nline two\nHOME=/root\n\n@end\n"
        "sealed /usr/bin/python3\nsealed /usr/lib/python3.11/\n"
        "site /usr/lib/python3/dist-packages\nsealed /usr/lib/python3/dist-packages\n"
        "module json\ntool bash=/usr/bin/bash\n"
        "tool bash=/bin/bash\ncache UV_CACHE_DIR=/root/.cache/uv\nnoise\n"
        "checker find aa11 /usr/bin/find\nchecker timeout bb22 /usr/bin/timeout\n"
        "checker libc.so.6 cc33 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
        "checker loader dd44 /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2\n"
    )
    found = parse(output)
    assert found.environ == {"PATH": "/usr/bin:/bin", "MOTD": "line one\nline two", "HOME": "/root"}
    assert found.sealed == {"/usr/bin/python3", "/usr/lib/python3.11"}
    assert found.sites == {"/usr/lib/python3/dist-packages"}
    assert found.modules == {"json"} and found.tools == {"bash": "/usr/bin/bash"}
    assert found.caches == {"UV_CACHE_DIR": "/root/.cache/uv"}
    checker = found.checker
    assert checker is not None and checker.find == "/usr/bin/find"
    assert checker.libraries == {"libc.so.6": "/usr/lib/x86_64-linux-gnu/libc.so.6"}
    assert checker.loader == "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
    assert checker.sha256["/usr/bin/timeout"] == "bb22" and checker.preload is None
    assert parse("sealed /x\n").checker is None  # no GNU find: the change-list fallback


def test_a_listing_and_its_changes() -> None:
    # What `find -printf LISTING_FORMAT` writes: NUL-separated, so a file name may hold
    # a newline and still be one path.
    assert LISTING_FORMAT == r"%y %C@ %p\0%l\0"
    data = (
        b"f 100.5 /usr/bin/python3.11\0\0l 90.0 /usr/bin/python3\0python3.11\0"
        b"d 200.0 /usr/lib/python3.11\0\0f 150.0 /usr/lib/python3.11/os.py\0\0"
        b"f 300.0 /usr/lib/python3.11/evil\nname.py\0\0"
    )
    after = parse_listing(data)
    assert after["/usr/bin/python3"] == ("l", 90.0, "python3.11")
    assert "/usr/lib/python3.11/evil\nname.py" in after
    before = ["/usr/bin/python3.11", "/usr/bin/python3", "/usr/lib/python3.11",
              "/usr/lib/python3.11/os.py", "/usr/lib/python3.11/site.py"]  # fmt: skip
    found = {(e["Path"], e["Kind"]) for e in changes(before, after, since=120.0)}
    # os.py's ctime is later than the agent's start: changed, whatever its mtime says;
    # the directory's is too, but what changed in it is listed (site.py went, a file came).
    assert found == {
        ("/usr/lib/python3.11/os.py", CHANGED),
        ("/usr/lib/python3.11/site.py", REMOVED),
        ("/usr/lib/python3.11/evil\nname.py", ADDED),
    }


def test_the_probe_names_the_scripts_commands_but_not_the_agents_programs(tmp_path: Path) -> None:
    task = tmp_path / "t"
    shutil.copytree(TB2, task)
    (task / "tests" / "test.sh").write_text(
        "#!/bin/bash\nsource ~/.cargo/env\n/app/build/prog\n/usr/bin/node x.js\npython3 -m pytest\n"
    )
    script = probe_script(load_task(task))
    assert "NAMES='bash mkdir mv python python3 rm sh timeout'" in script
    assert "PROGRAMS=/usr/bin/node" in script  # /app is the agent's work directory
    assert "/root/.cargo/env" in script.split("FILES=", 1)[1].splitlines()[0]


# --- the test run's environment ------------------------------------------------------


def test_the_run_starts_from_what_the_task_declares(tmp_path: Path) -> None:
    task = load_task(TB2)
    task.verifier_env = {"MODE": "strict"}
    found = Toolchain(
        environ={
            "PATH": "/opt/venv/bin:/usr/bin",
            "HOME": "/root",
            "PYTHONPATH": "/app/src",
            "BASH_ENV": "/etc/image-bash-env",
            "PYTEST_ADDOPTS": "-x",
        },
        tools={"bash": "/usr/bin/bash"},
        caches={"UV_CACHE_DIR": "/root/.cache/uv"},
    )
    launch = verifier.plan(task, found)
    env = launch.env
    assert env["PATH"] == "/opt/venv/bin:/usr/bin" and env["MODE"] == "strict"
    assert env["BASH_ENV"] == env["ENV"] == env["PYTHONHOME"] == env["PYTHONSTARTUP"] == ""
    assert env["PYTHONNOUSERSITE"] == "1"
    assert env["PYTHONPATH"] == f"{verifier.SITE_DIR}:/app/src"
    assert env["PYTEST_ADDOPTS"].startswith("-x --rootdir=/tests -c /logs/gem-eval/pytest.ini")
    assert "--confcutdir=/tests" in env["PYTEST_ADDOPTS"]
    assert "UV_CACHE_DIR" not in env  # the image ships one: the audit covers it
    assert env["UV_PYTHON_INSTALL_DIR"] == "/logs/gem-eval/uv-python"
    # What the tests' own processes get back.
    assert launch.restore["PYTHONPATH"] == "/app/src" and launch.restore["PYTEST_ADDOPTS"] == "-x"
    assert launch.restore["BASH_ENV"] == "/etc/image-bash-env"
    assert launch.restore["PYTHONNOUSERSITE"] is None
    settings = json.loads(launch.files[f"{verifier.SITE_DIR}/gem_eval_verifier.json"])
    assert settings["restore"] == launch.restore and settings["confine"] == launch.confine
    argv = verifier.command(launch, "/tests/test.sh", "/logs/out.txt")
    assert argv[:4] == ["/usr/bin/bash", "--noprofile", "--norc", "-c"]
    assert argv[4] == "exec /usr/bin/bash --noprofile --norc /tests/test.sh > /logs/out.txt 2>&1"


def test_the_tasks_own_pytest_configuration_is_used(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    assert verifier.pytest_config(tests) is None
    (tests / "setup.cfg").write_text("[metadata]\nname = x\n")  # not pytest's
    assert verifier.pytest_config(tests) is None
    (tests / "pyproject.toml").write_text("[tool.pytest.ini_options]\nmarkers = ['slow']\n")
    assert verifier.pytest_config(tests) == "/tests/pyproject.toml"
    (tests / "pytest.ini").write_text("[pytest]\n")
    assert verifier.pytest_config(tests) == "/tests/pytest.ini"


def test_audit_settings_are_read_and_checked(tmp_path: Path) -> None:
    task = tmp_path / "t"
    shutil.copytree(TB2, task)
    toml = task / "task.toml"
    base = toml.read_text()
    assert load_task(task).audit and load_task(task).audit_exclude == []
    toml.write_text(base.replace("[verifier]", '[verifier]\naudit_exclude = ["/root/.bashrc"]'))
    assert load_task(task).audit_exclude == ["/root/.bashrc"]
    toml.write_text(base.replace("[verifier]", "[verifier]\naudit = false"))
    assert not load_task(task).audit
    toml.write_text(base.replace("[verifier]", '[verifier]\naudit_exclude = ["relative"]'))
    with pytest.raises(TaskFormatError, match="audit_exclude"):
        load_task(task)
    toml.write_text(base.replace("[verifier]", '[verifier]\naudit = "no"'))
    with pytest.raises(TaskFormatError, match="audit must be"):
        load_task(task)


# --- gem-eval's sitecustomize, in a real Python --------------------------------------


def test_pytest_arguments() -> None:
    assert pytest_arguments(["python3", "-m", "pytest", "/tests/t.py", "-rA"]) == [
        "/tests/t.py",
        "-rA",
    ]
    assert pytest_arguments(["python3", "-B", "-W", "error", "-mpytest", "x"]) == ["x"]
    assert pytest_arguments(["/usr/bin/python3", "/usr/bin/pytest", "-q"]) == ["-q"]
    assert pytest_arguments(["python3", "-c", "import pytest"]) is None
    assert pytest_arguments(["python3", "-m", "pip", "install", "pytest"]) is None
    assert pytest_arguments(["python3", "/tests/check.py", "pytest"]) is None


def test_confined(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tests, app = tmp_path / "tests", tmp_path / "app"
    (tests / "sub").mkdir(parents=True)
    app.mkdir()
    (tests / "t.py").write_text("")
    monkeypatch.chdir(app)
    assert confined([str(tests / "t.py") + "::test_a", "-rA", "--ctrf", "/x.json"], str(tests))
    assert confined([str(tests / "sub")], str(tests))
    assert not confined([str(tests / "t.py"), str(app)], str(tests))  # the agent's suite too
    assert not confined(["-q"], str(tests))  # the working directory: /app
    monkeypatch.chdir(tests)
    assert confined(["-q"], str(tests))


@pytest.fixture()
def guarded(tmp_path: Path) -> dict[str, Path]:
    """A verifier's directories on the host: the guard, /tests, an agent's /app."""
    site, tests, app = tmp_path / "site", tmp_path / "tests", tmp_path / "app"
    for d in (site, tests, app):
        d.mkdir()
    shutil.copy(Path(verifier.__file__).with_name("verifier_site.py"), site / "sitecustomize.py")
    (tests / "test_env.py").write_text(
        "import os, subprocess, sys\n"
        "def test_env():\n"
        "    print('ADDOPTS', os.environ.get('PYTEST_ADDOPTS'))\n"
        "    print('CHILD', subprocess.run([sys.executable, '-c',\n"
        "        'import os; print(os.environ.get(\"PYTHONNOUSERSITE\"))'],\n"
        "        capture_output=True, text=True).stdout.strip())\n"
        "    assert False\n"
    )
    return {"site": site, "tests": tests, "app": app}


def run_guarded(dirs: dict[str, Path], *args: str, pythonpath: str = "") -> str:
    empty = dirs["site"] / "empty.ini"
    empty.write_text("")
    confine = [f"--rootdir={dirs['tests']}", "-c", str(empty), f"--confcutdir={dirs['tests']}"]
    settings = {
        "tests_dir": str(dirs["tests"]),
        "confine": confine,
        "restore": {"PYTHONNOUSERSITE": None, "PYTEST_ADDOPTS": None},
    }
    (dirs["site"] / "gem_eval_verifier.json").write_text(json.dumps(settings))
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": os.pathsep.join(p for p in (str(dirs["site"]), pythonpath) if p),
        "PYTHONNOUSERSITE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "-s", *args],
        cwd=dirs["app"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return result.stdout + result.stderr


def test_the_guard_imports_pytest_before_the_working_directory(
    guarded: dict[str, Path],
) -> None:
    # `python -m pytest` puts the working directory first on sys.path: the agent's
    # pytest.py there would run instead (here: exit 0, every test "passed").
    (guarded["app"] / "pytest.py").write_text("raise SystemExit(0)\n")
    (guarded["app"] / "src").mkdir()
    (guarded["app"] / "src" / "_pytest").mkdir()  # on the task's PYTHONPATH: not trusted
    (guarded["app"] / "src" / "_pytest" / "__init__.py").write_text("raise SystemExit(0)\n")
    out = run_guarded(guarded, str(guarded["tests"] / "test_env.py"))
    assert "FAILED" in out and "test_env" in out, out
    (guarded["site"] / "sitecustomize.py").unlink()  # without the guard, the trap works
    assert "FAILED" not in run_guarded(guarded, str(guarded["tests"] / "test_env.py"))


def test_the_guard_confines_pytest_and_gives_the_tests_the_tasks_environment(
    guarded: dict[str, Path],
) -> None:
    # A conftest.py above /tests that would pass every test: confined, it is not read.
    (guarded["tests"].parent / "conftest.py").write_text(
        "import pytest\n"
        "@pytest.hookimpl(hookwrapper=True)\n"
        "def pytest_runtest_makereport(item, call):\n"
        "    outcome = yield\n"
        "    outcome.get_result().outcome = 'passed'\n"
    )
    out = run_guarded(guarded, str(guarded["tests"] / "test_env.py"))
    assert "FAILED" in out and f"rootdir: {guarded['tests']}" in out, out
    assert "ADDOPTS None" in out and "CHILD None" in out  # the tests' processes: restored
    # A run that names the agent's own suite is not confined (it keeps its own
    # configuration, as without gem-eval).
    (guarded["app"] / "test_mine.py").write_text("def test_mine():\n    assert False\n")
    out = run_guarded(guarded, str(guarded["app"] / "test_mine.py"))
    assert f"rootdir: {guarded['app']}" in out, out


def test_the_guard_runs_the_images_own_sitecustomize(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gem_eval.envs.terminal import verifier_site

    marker = tmp_path / "ran.txt"
    image, agent = tmp_path / "image-site", tmp_path / "app-src"
    for where, name in ((image, "image"), (agent, "agent")):
        where.mkdir()
        (where / "sitecustomize.py").write_text(
            f"open({str(marker)!r}, 'a').write({name!r} + ' ')\n"
        )
    # The task's PYTHONPATH (the agent may write it) comes first, then the image's site.
    monkeypatch.setattr(sys, "path", [str(agent), str(image), *sys.path])
    monkeypatch.setenv("PYTHONPATH", str(agent))
    verifier_site._chain()
    assert marker.read_text() == "image "
