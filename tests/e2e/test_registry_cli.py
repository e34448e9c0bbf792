"""``gem-eval run --suite NAME@VERSION --registry FILE``: a registry dataset end to end,
offline (a registry file and a git repository made here), played in Docker."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.e2e.test_run_cli import gem_eval, records, run_dirs
from tests.fixtures.registry import make_dataset


@pytest.mark.docker
def test_a_dataset_by_name_runs_and_its_manifest_names_the_commit(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path)
    results = tmp_path / "results"
    env = {"GEM_EVAL_CACHE": str(tmp_path / "cache"), "GEM_EVAL_REGISTRY": ""}
    args = ["--suite", "mini-bench@1.0", "--registry", str(dataset.registry), "--model", "oracle"]
    done = gem_eval("run", *args, "-q", results=results, env=env)
    assert done.returncode == 0, done.stderr

    [run_dir] = run_dirs(results)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert (manifest["suite"], manifest["suite_path"]) == ("mini-bench@1.0", None)
    [pin] = manifest["extra"]["datasets"]
    assert pin == {
        "name": "mini-bench",
        "version": "1.0",
        "registry": str(dataset.registry.resolve()),
        "repositories": [{"git_url": str(dataset.repo), "commit": dataset.commit}],
        "tasks": 2,
    }
    scores = {r["task_id"]: r["score"] for r in records(run_dir)}
    assert scores == {"terminal/count-lines": 1.0, "terminal/hello-file": 1.0}

    shown = gem_eval("results", "show", run_dir.name, results=results, env=env)
    assert shown.returncode == 0, shown.stderr
    assert f"mini-bench@1.0: {dataset.repo} @ {dataset.commit}" in shown.stdout

    # A resume reads the registry its manifest names (none is given now) and the cached
    # checkout (the repository is gone): the same tasks, so nothing is left to play.
    shutil.rmtree(dataset.repo)
    again = gem_eval("run", "--resume", run_dir.name, "-q", results=results, env=env)
    assert again.returncode == 0, again.stderr
    assert "nothing to play" in again.stdout + again.stderr


def test_a_commit_the_repository_lacks_is_one_line_and_exit_2(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path)
    dataset.write(dataset.entry(git_commit_id="f" * 40))
    env = {"GEM_EVAL_CACHE": str(tmp_path / "cache")}
    args = ["--suite", "mini-bench@1.0", "--registry", str(dataset.registry), "--model", "oracle"]
    done = gem_eval("run", *args, results=tmp_path / "results", env=env)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: commit {'f' * 40} is not in {dataset.repo} (")
    assert not (tmp_path / "results").exists() or run_dirs(tmp_path / "results") == []
