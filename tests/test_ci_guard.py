"""The conftest guard on ``docker``, ``bwrap`` and ``local_model`` tests, seen from outside.

Each case runs pytest in a subprocess on ``tests/fixtures/marked_probe.py`` (one empty
test per mark) with all three needs removed: ``DOCKER_HOST`` points at a socket that does
not exist, ``PATH`` holds the venv's ``bin`` and the Docker binaries but no ``bwrap``, and
``llama_cpp`` is blocked in ``sys.modules`` before pytest starts (the standard way to make
an installed module unimportable). Locally each probe must be skipped with the reason; under
``CI=true`` each must fail, saying ``CI=true`` and what is missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROBE = "tests/fixtures/marked_probe.py"

# Runs pytest with llama_cpp unimportable; argv follows.
LAUNCHER = "import sys; sys.modules['llama_cpp'] = None; import pytest; sys.exit(pytest.main())"

# What each probe's message must name (the real check's own words).
MISSING = {
    "test_docker": "Docker",
    "test_bwrap": "bubblewrap",
    "test_local_model": "llama-cpp-python",
}


def _run_probes(tmp_path: Path, *, ci: bool) -> dict[str, tuple[str, str]]:
    """``{test name: (outcome, message)}`` of the probes run with nothing they need."""
    # PATH: the venv's bin, and the Docker CLI and daemon where installed (so that the
    # engine is unreachable, not absent), but no bwrap.
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("docker", "dockerd"):
        found = shutil.which(name)
        if found:
            (tools / name).symlink_to(found)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")}
    env.update(
        DOCKER_HOST="unix:///nonexistent.sock",
        PATH=os.pathsep.join([str(Path(sys.executable).parent), str(tools)]),
    )
    if ci:
        env["CI"] = "true"
    report = tmp_path / "report.xml"
    argv = [PROBE, "-p", "no:cacheprovider", "-q", f"--junitxml={report}"]
    done = subprocess.run(
        [sys.executable, "-c", LAUNCHER, *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert report.is_file(), done.stdout + done.stderr
    results: dict[str, tuple[str, str]] = {}
    for case in ET.parse(report).iter("testcase"):
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome, message = child.tag, child.get("message", "")
        results[case.get("name", "")] = (outcome, message)
    assert set(results) == set(MISSING), done.stdout + done.stderr
    assert done.returncode == (1 if ci else 0), done.stdout + done.stderr
    return results


@pytest.fixture(scope="module")
def local_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    return _run_probes(tmp_path_factory.mktemp("local"), ci=False)


@pytest.fixture(scope="module")
def ci_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    return _run_probes(tmp_path_factory.mktemp("ci"), ci=True)


@pytest.mark.parametrize("name", sorted(MISSING))
def test_locally_a_missing_need_skips_with_the_reason(
    local_results: dict[str, tuple[str, str]], name: str
) -> None:
    outcome, message = local_results[name]
    assert outcome == "skipped", (outcome, message)
    assert MISSING[name] in message


@pytest.mark.parametrize("name", sorted(MISSING))
def test_under_ci_a_missing_need_fails_naming_ci_and_what_is_missing(
    ci_results: dict[str, tuple[str, str]], name: str
) -> None:
    outcome, message = ci_results[name]
    # The guard fails the test in its setup, which pytest reports as an error.
    assert outcome in ("failure", "error"), (outcome, message)
    mark = name.removeprefix("test_")
    assert f"CI=true, but this `{mark}` test cannot run" in message
    assert MISSING[name] in message
