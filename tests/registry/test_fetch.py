"""Fetching a registry dataset into the cache: offline, from a git repository made here."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from gem_eval.errors import RegistryError
from gem_eval.registry import checkout as checkout_module
from gem_eval.registry import fetch as fetch_module
from gem_eval.registry.fetch import RECORD, fetch_dataset, recorded_registry
from tests.fixtures.registry import LocalDataset, git, make_dataset


@pytest.fixture
def dataset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LocalDataset:
    monkeypatch.setenv("GEM_EVAL_CACHE", str(tmp_path / "cache"))
    return make_dataset(tmp_path)


def test_the_tasks_are_checked_out_at_the_pinned_commit_and_nothing_else(
    dataset: LocalDataset, tmp_path: Path
) -> None:
    fetched = fetch_dataset("mini-bench@1.0", str(dataset.registry))
    assert fetched.root.parent == tmp_path / "cache" / "datasets"
    assert fetched.root.name.startswith("mini-bench@1.0-")
    assert list(fetched.tasks) == ["count-lines", "hello-file"]
    hello = fetched.tasks["hello-file"]
    assert hello == fetched.root / f"repo-{dataset.commit[:12]}" / "tasks" / "hello-file"
    assert (hello / "instruction.md").read_text().startswith("Write the word `hi`")  # not head
    assert (hello / "task.toml").is_file() and (hello / "solution" / "solve.sh").is_file()
    checkout = hello.parent.parent
    assert sorted(p.name for p in checkout.iterdir()) == ["tasks"]  # no other/, no .git
    assert fetched.pin() == {
        "name": "mini-bench",
        "version": "1.0",
        "registry": str(dataset.registry.resolve()),
        "repositories": [{"git_url": str(dataset.repo), "commit": dataset.commit}],
        "tasks": 2,
    }
    record = json.loads((fetched.root / RECORD).read_text())
    assert record["repositories"][0]["commit"] == dataset.commit
    assert record["tasks"]["hello-file"] == f"repo-{dataset.commit[:12]}/tasks/hello-file"


def test_a_second_fetch_reads_the_cache_and_runs_no_git(dataset: LocalDataset) -> None:
    first = fetch_dataset("mini-bench@1.0", str(dataset.registry))
    shutil.rmtree(dataset.repo)  # any git fetch would fail now
    again = fetch_dataset("mini-bench@1.0", str(dataset.registry))
    assert again == first
    assert (again.tasks["count-lines"] / "task.toml").is_file()


def test_concurrent_fetches_check_out_once(
    dataset: LocalDataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real = checkout_module.checkout

    def counted(git_url: str, commit: str, paths: list[str], dest: Path) -> None:
        calls.append(commit)
        real(git_url, commit, paths, dest)

    monkeypatch.setattr(fetch_module, "checkout", counted)
    results: list[Path] = []
    threads = [
        threading.Thread(
            target=lambda: results.append(
                fetch_dataset("mini-bench@1.0", str(dataset.registry)).root
            )
        )
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4 and len(set(results)) == 1
    assert calls == [dataset.commit]


def test_a_branch_or_no_commit_is_pinned_to_where_it_is_now(dataset: LocalDataset) -> None:
    branch = git("rev-parse", "--abbrev-ref", "HEAD", cwd=dataset.repo)
    dataset.write(
        dataset.entry(version="head", git_commit_id=None),
        dataset.entry(version="branch", git_commit_id=branch),
    )
    for version in ("head", "branch"):
        fetched = fetch_dataset(f"mini-bench@{version}", str(dataset.registry))
        assert fetched.repositories == [{"git_url": str(dataset.repo), "commit": dataset.head}]
        instruction = fetched.tasks["hello-file"] / "instruction.md"
        assert instruction.read_text() == "changed after the pinned commit\n"


def test_another_commit_for_a_version_is_another_cache_entry(dataset: LocalDataset) -> None:
    old = fetch_dataset("mini-bench@1.0", str(dataset.registry))
    dataset.write(dataset.entry(git_commit_id=dataset.head))
    new = fetch_dataset("mini-bench@1.0", str(dataset.registry))
    assert new.root != old.root and (old.root / RECORD).is_file()
    assert new.repositories[0]["commit"] == dataset.head


@pytest.mark.parametrize(
    ("task", "message"),
    [
        ({"git_url": "/nowhere/repo"}, r"cannot fetch /nowhere/repo: "),
        ({"git_commit_id": "0" * 40}, r"commit 0{40} is not in .*repo \("),
        ({"path": "tasks/missing"}, r"repo has no 'tasks/missing' at commit [0-9a-f]{40}$"),
        ({"path": "../outside"}, r"task path '../outside' leaves its repository"),
        ({"git_url": None}, r"task 'count-lines' of mini-bench@1.0 names no git_url"),
        ({"git_commit_id": "no-such-branch"}, r"has no branch or tag 'no-such-branch'"),
    ],
)
def test_what_cannot_be_fetched_is_one_line_and_leaves_no_entry(
    dataset: LocalDataset, tmp_path: Path, task: dict[str, Any], message: str
) -> None:
    dataset.write(dataset.entry(**task))
    with pytest.raises(RegistryError, match=message) as caught:
        fetch_dataset("mini-bench@1.0", str(dataset.registry))
    assert "\n" not in str(caught.value)
    cache = tmp_path / "cache" / "datasets"
    assert not cache.exists() or not [p for p in cache.iterdir() if not p.name.startswith(".")]


def test_not_a_ref_and_no_git(dataset: LocalDataset, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(RegistryError, match=r"'mini-bench' does not name a dataset: write NAME@"):
        fetch_dataset("mini-bench", str(dataset.registry))
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(RegistryError, match=r"git is not installed"):
        fetch_dataset("mini-bench@1.0", str(dataset.registry))


def test_the_registry_a_run_recorded_is_read_back() -> None:
    assert recorded_registry({"options": {}}) is None
    pin = {"name": "a", "version": "1", "registry": "/r.json", "repositories": []}
    assert recorded_registry({"datasets": [pin]}) == "/r.json"


def test_checkout_patterns_are_anchored_at_the_root() -> None:
    assert checkout_module._pattern("tasks/a/") == "/tasks/a/"
    assert checkout_module._pattern("./") == "/*"
