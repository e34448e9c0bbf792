"""Reading a registry in Harbor's format and looking NAME@VERSION up in it (no git here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gem_eval.errors import RegistryError, UserError
from gem_eval.registry.index import DatasetRef, read_registry
from gem_eval.registry.source import DEFAULT_REGISTRY, ENV_VAR, registry_source

TASK = {"name": "t1", "git_url": "https://example.com/r.git", "git_commit_id": None, "path": "t1"}


def registry(tmp_path: Path, rows: object) -> Path:
    path = tmp_path / "registry.json"
    path.write_text(json.dumps(rows))
    return path


def test_a_ref_is_name_at_version() -> None:
    assert DatasetRef.parse("terminal-bench@2.0") == DatasetRef("terminal-bench", "2.0")
    assert DatasetRef.parse("org/swe-bench@head") == DatasetRef("org/swe-bench", "head")
    assert str(DatasetRef("a", "1.0")) == "a@1.0"
    for text in ("smoke", "suites/smoke.yaml", "a@", "@1", "a@b@c", "../x/y@1"):
        assert DatasetRef.parse(text) is None, text


def test_the_default_is_harbors_unless_the_variable_names_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert registry_source() == DEFAULT_REGISTRY
    assert DEFAULT_REGISTRY.endswith("laude-institute/harbor/main/registry.json")
    monkeypatch.setenv(ENV_VAR, "/srv/registry.json")
    assert registry_source() == "/srv/registry.json"
    assert registry_source("mine.json") == "mine.json"


def test_an_entry_is_found_by_name_and_version_harbors_keys_ignored(tmp_path: Path) -> None:
    rows = [
        {"name": "bench", "version": "1.0", "description": "d", "tasks": [TASK], "metrics": []},
        {"name": "bench", "version": 2.0, "tasks": [{**TASK, "extra": 1}]},  # a JSON number
        {"name": "broken", "version": "1.0"},  # malformed, and not asked for: no matter
    ]
    found = read_registry(str(registry(tmp_path, rows)))
    assert found.source == str((tmp_path / "registry.json").resolve())
    entry = found.find(DatasetRef("bench", "1.0"))
    assert (entry.description, [t.path for t in entry.tasks]) == ("d", ["t1"])
    assert found.find(DatasetRef("bench", "2.0")).description == ""
    assert found.names() == ["bench", "broken"]


def test_a_file_url_is_read_as_the_file(tmp_path: Path) -> None:
    path = registry(tmp_path, [{"name": "bench", "version": "1", "tasks": [TASK]}])
    found = read_registry(path.resolve().as_uri())
    assert found.source == str(path.resolve())  # as a manifest records a file
    assert found.find(DatasetRef("bench", "1")).tasks[0].name == "t1"


def test_unknown_names_and_versions_are_one_line_with_what_is_known(tmp_path: Path) -> None:
    rows = [
        {"name": "terminal-bench", "version": "1.0", "tasks": [TASK]},
        {"name": "terminal-bench", "version": "2.0", "tasks": [TASK]},
        {"name": "swebench-verified", "version": "1.0", "tasks": [TASK]},
    ]
    found = read_registry(str(registry(tmp_path, rows)))
    with pytest.raises(RegistryError, match=r"unknown dataset 'terminal-bnch' in registry .*"
                       r"Did you mean: terminal-bench\?"):  # fmt: skip
        found.find(DatasetRef("terminal-bnch", "2.0"))
    with pytest.raises(RegistryError, match=r"It has 2: terminal-bench, swebench-verified\.$"):
        found.find(DatasetRef("zzz", "1"))
    with pytest.raises(
        RegistryError, match=r"'terminal-bench' has no version '3.0' .*; its versions: 1.0, 2.0$"
    ):
        found.find(DatasetRef("terminal-bench", "3.0"))
    assert issubclass(RegistryError, UserError)  # the command line: one line, exit 2


def test_a_malformed_entry_names_its_place(tmp_path: Path) -> None:
    rows = [{"name": "bench", "version": "1", "tasks": [{"name": "t1", "git_url": "u"}]}]
    found = read_registry(str(registry(tmp_path, rows)))
    with pytest.raises(
        RegistryError, match=r"entry 0 \(bench@1\): tasks\[0\]\.path: Field required"
    ):
        found.find(DatasetRef("bench", "1"))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, r"cannot read registry .*registry\.json: no such file"),
        ("[{", r"registry .*: not JSON \(line 1: "),
        ('{"name": "bench"}', r"a JSON list of datasets expected"),
    ],
)
def test_an_unreadable_registry_is_one_line(
    tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "registry.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(RegistryError, match=message):
        read_registry(str(path))


def test_an_unreachable_url_is_one_line() -> None:
    with pytest.raises(
        RegistryError, match=r"cannot read registry http://127\.0\.0\.1:9/r\.json: "
    ):
        read_registry("http://127.0.0.1:9/r.json")
