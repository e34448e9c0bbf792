"""The wheel carries the bundled suites and tasks, and an installed layout finds them.

The wheel is built as pip builds it (PEP 517, through hatchling, offline: no build
isolation, hatchling comes with the ``dev`` extra). ``.ci/wheel-check`` goes further: it
installs the wheel into a fresh venv and runs ``gem-eval`` from outside the checkout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = "gem_eval/_bundled"


def _source_files() -> set[str]:
    """Every file under the top-level ``suites/`` and ``tasks/`` (bytecode aside)."""
    found = set()
    for top in ("suites", "tasks"):
        for path in (ROOT / top).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                found.add(path.relative_to(ROOT).as_posix())
    return found


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    argv = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    done = subprocess.run(
        [*argv, "--no-index", "--quiet", "-w", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    (built,) = out.glob("gem_eval-*.whl")
    return built


def test_the_wheel_holds_every_bundled_suite_and_task_file(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {f"{BUNDLED}/{name}" for name in _source_files()}
    assert len(expected) > 100  # the walk saw the tasks (a guard on the guard)
    assert sorted(expected - names) == []
    assert {"gem_eval/bundled.py", "gem_eval/datasets.py", "gem_eval/cli/app.py"} <= names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


# Run from a directory outside the checkout, importing gem_eval from the unpacked wheel:
# where the bundled root is, which suites are found, and every path the chosen suites
# resolved (datasets, a search corpus, task directories, image-map builds, task files).
_PROBE = """
import json, sys
from gem_eval.bundled import bundled_root
from gem_eval.suites import list_suites, load_suite
import gem_eval

resolved = {}
for name in sys.argv[1:]:
    suite = load_suite(name)
    resolved[name] = [
        [task.spec.model_dump(mode="json"), task.source, str(suite.path)]
        for task in suite.tasks
    ]
print(json.dumps({
    "package": gem_eval.__file__,
    "root": str(bundled_root()),
    "suites": {name: str(path) for name, path in list_suites().items()},
    "resolved": resolved,
}))
"""

# One suite of each kind of bundled path: `file:` task files (smoke), dataset files
# (code), a dataset and a search corpus (qa), task directories with image-map builds
# (terminal-bench, mcpmark).
_LOADED = ["smoke", "code", "qa", "terminal-bench", "mcpmark"]


def test_an_unpacked_wheel_finds_its_own_suites_and_tasks(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *_LOADED],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert Path(found["package"]).is_relative_to(site)
    assert Path(found["root"]) == site / BUNDLED
    shipped = {p.stem for p in (ROOT / "suites").glob("*.yaml")}
    assert set(found["suites"]) == shipped
    assert all(Path(p).is_relative_to(site / BUNDLED) for p in found["suites"].values())
    text = json.dumps(found["resolved"])
    assert set(found["resolved"]) == set(_LOADED)
    assert str(site / BUNDLED / "tasks") in text  # paths did resolve into the copy...
    assert str(ROOT) not in text  # ...and none into the checkout
