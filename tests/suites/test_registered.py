"""Suites of registry datasets: ``--suite NAME@VERSION`` and a task path naming one
(offline: a registry file and a git repository made here; no Docker)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from gem_eval.bundled import bundled_root
from gem_eval.cli.suites import suites_app
from gem_eval.errors import RegistryError
from gem_eval.records import ModelSpec
from gem_eval.runner.plan import RunOptions, plan_run
from gem_eval.suites import SuiteError, load_suite
from tests.fixtures.registry import FIXTURES, LocalDataset, make_dataset, make_repo

ROOT = bundled_root()


@pytest.fixture
def dataset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LocalDataset:
    monkeypatch.setenv("GEM_EVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("GEM_EVAL_REGISTRY", raising=False)
    return make_dataset(tmp_path)


def test_a_dataset_plays_as_its_familys_suite_pinned(dataset: LocalDataset) -> None:
    suite = load_suite("mini-bench@1.0", registry=str(dataset.registry))
    assert (suite.name, suite.path, suite.description) == (
        "mini-bench@1.0",
        None,  # no file: a resume looks the dataset up again
        "two small terminal tasks",
    )
    assert [t.spec.id for t in suite.tasks] == ["terminal/count-lines", "terminal/hello-file"]
    assert {t.spec.env_id for t in suite.tasks} == {"terminal:Task-v0"}
    hello = Path(suite.tasks[1].spec.env_kwargs["path"])
    assert hello.name == "hello-file" and (hello / "task.toml").is_file()
    # the bundled terminal-bench suite's defaults apply: its turn limit, its image map
    bundled = load_suite("terminal-bench")
    assert suite.defaults == bundled.defaults
    assert suite.tasks[0].spec.limits.max_turns == 100
    assert suite.tasks[0].spec.sandbox is not None and suite.tasks[0].spec.sandbox.image_map
    [pin] = suite.datasets
    assert pin["repositories"] == [{"git_url": str(dataset.repo), "commit": dataset.commit}]


def test_a_new_runs_manifest_names_the_dataset_and_its_commit(
    dataset: LocalDataset, tmp_path: Path
) -> None:
    suite = load_suite("mini-bench@1.0", registry=str(dataset.registry))
    plan = plan_run(suite, [ModelSpec(name="oracle")], RunOptions(), tmp_path / "results")
    [pin] = plan.manifest.extra["datasets"]
    assert (pin["name"], pin["version"], pin["registry"]) == (
        "mini-bench",
        "1.0",
        str(dataset.registry.resolve()),
    )
    assert pin["repositories"][0]["commit"] == dataset.commit
    assert plan.manifest.suite == "mini-bench@1.0" and plan.manifest.suite_path is None


def test_a_suite_file_wins_over_a_dataset_of_its_name(
    dataset: LocalDataset, tmp_path: Path
) -> None:
    path = tmp_path / "mini-bench@1.0"
    path.write_text("tasks:\n  - env: game:GuessTheNumber-v0-easy\n")
    suite = load_suite(str(path), registry=str(dataset.registry))
    assert suite.datasets == [] and suite.tasks[0].spec.env_id == "game:GuessTheNumber-v0-easy"
    with pytest.raises(SuiteError, match=r"unknown suite 'smoek'"):  # not a dataset name
        load_suite("smoek", registry=str(dataset.registry))


def test_a_task_path_may_name_a_dataset(dataset: LocalDataset, tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(
        "name: mine\ntasks:\n  - id: tb\n    env: terminal:Task-v0\n"
        "    args: {path: mini-bench@1.0}\n  - env: game:GuessTheNumber-v0-easy\n"
    )
    suite = load_suite(path, registry=str(dataset.registry))
    assert [t.spec.id for t in suite.tasks][:2] == ["tb/count-lines", "tb/hello-file"]
    assert [t.dataset is not None for t in suite.tasks] == [True, True, False]
    assert suite.datasets[0]["repositories"][0]["commit"] == dataset.commit

    path.write_text("tasks:\n  - env: terminal:Task-v0\n    args: {path: mini-bench@9}\n")
    with pytest.raises(SuiteError) as caught:
        load_suite(path, registry=str(dataset.registry))
    assert str(caught.value) == (
        f"{path}:3: tasks[0].args.path: dataset 'mini-bench' has no version '9' in registry "
        f"{dataset.registry.resolve()}; its versions: 1.0, 2.0"
    )


def test_the_bundled_suites_variable_may_name_a_dataset(
    dataset: LocalDataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TERMINAL_BENCH_TASKS", "mini-bench@1.0")
    monkeypatch.setenv("GEM_EVAL_REGISTRY", str(dataset.registry))  # the default registry
    suite = load_suite("terminal-bench")
    assert [t.spec.id for t in suite.tasks] == ["terminal/count-lines", "terminal/hello-file"]
    assert suite.datasets[0]["name"] == "mini-bench"


def test_an_mcpmark_tree_plays_as_the_mcpmark_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEM_EVAL_CACHE", str(tmp_path / "cache"))
    repo = tmp_path / "mcp-repo"
    commit = make_repo(repo, {"tasks/filesystem": FIXTURES / "mcp" / "filesystem"})
    (tmp_path / "registry.json").write_text(
        '[{"name": "mcp-mini", "version": "1", "tasks": [{"name": "notes", "git_url": '
        f'"{repo}", "git_commit_id": "{commit}", "path": "tasks/filesystem/notes"}}]}}]'
    )
    suite = load_suite("mcp-mini@1", registry=str(tmp_path / "registry.json"))
    assert [(t.spec.id, t.spec.env_id) for t in suite.tasks] == [
        ("mcp/filesystem/notes/tally", "mcp:Task-v0")
    ]
    assert suite.defaults == load_suite("mcpmark").defaults


def test_a_dataset_of_no_family_is_refused(dataset: LocalDataset, tmp_path: Path) -> None:
    dataset.write(dataset.entry(path="other", git_commit_id=dataset.head))  # other/: a README
    with pytest.raises(RegistryError, match=r"are neither Terminal-Bench tasks .* nor MCPMark"):
        load_suite("mini-bench@1.0", registry=str(dataset.registry))


app = typer.Typer()
app.add_typer(suites_app, name="suites")


@app.callback()
def _root() -> None:
    """The suites sub-app alone, as the root app mounts it."""


def test_suites_show_and_validate_a_dataset(dataset: LocalDataset) -> None:
    runner = CliRunner()
    env = {"COLUMNS": "250"}
    registry = str(dataset.registry)
    shown = runner.invoke(
        app, ["suites", "show", "mini-bench@1.0", "--registry", registry], env=env
    )
    assert shown.exit_code == 0, shown.output
    assert "terminal/count-lines" in shown.output and "terminal/hello-file" in shown.output
    assert f"mini-bench@1.0: {dataset.repo} @ {dataset.commit}" in shown.output

    ok = runner.invoke(
        app, ["suites", "validate", "mini-bench@1.0"], env={"GEM_EVAL_REGISTRY": registry}
    )
    assert ok.exit_code == 0, ok.output
    assert ok.output.startswith("ok: 2 tasks, 2 episodes (mini-bench@1.0)")

    bad = runner.invoke(app, ["suites", "validate", "mini-bnch@1.0", "--registry", registry])
    assert bad.exit_code == 2
    assert "unknown dataset 'mini-bnch'" in bad.output and "Did you mean: mini-bench" in bad.output


def test_an_unknown_dataset_is_one_line_and_exit_2(dataset: LocalDataset) -> None:
    args = ["suites", "show", "mini-bench@3.0", "--registry", str(dataset.registry)]
    done = subprocess.run(
        [sys.executable, "-m", "gem_eval", *args],
        capture_output=True, text=True, cwd=ROOT, env=os.environ, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: dataset 'mini-bench' has no version '3.0' in registry "
        f"{dataset.registry.resolve()}; its versions: 1.0, 2.0"
    ]
