"""A registry dataset fetched into gem-eval's cache: once, at the commits its registry pins.

An entry, ``$GEM_EVAL_CACHE/datasets/<name>@<version>-<digest>/``, holds::

    dataset.json               what it holds: the dataset, each repository's URL and
                               commit, each task's directory
    <repo>-<commit>/<path>/    each task, at its path in its repository (no .git)

``<digest>`` covers every task's repository, commit and path, so a registry that moves a
version to another commit names another entry (the old one stays as it was). Tasks pinned
by a full commit id need no network once their entry is made: the registry is read, the
entry found, and no git runs. A branch, a tag or no commit at all is looked up with
``git ls-remote`` on every use, then pinned like the rest. The entry is a
:class:`~gem_eval.cache.CacheEntry`: made by one process at a time, there whole or not at
all.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from gem_eval.cache import CacheEntry, cache_dir
from gem_eval.errors import RegistryError
from gem_eval.registry.checkout import checkout, resolve_commit
from gem_eval.registry.index import DatasetEntry, DatasetRef, RegistryTask, read_registry

RECORD = "dataset.json"
"""The file in an entry that says what it holds."""

_UNSAFE = re.compile(r"[^\w.@-]+")


@dataclass(frozen=True)
class FetchedDataset:
    """A registry dataset, checked out in the cache.

    Attributes:
        name: The dataset's name (``terminal-bench``).
        version: Its version (``2.0``).
        registry: Where it was looked up: a URL, or a file's absolute path.
        description: The registry's description of it.
        root: The cache entry; each repository's checkout is below it.
        repositories: ``{"git_url", "commit"}`` of each repository, in the registry's order.
        tasks: Each task's name and directory, in the registry's order.
    """

    name: str
    version: str
    registry: str
    description: str
    root: Path
    repositories: list[dict[str, str]]
    tasks: dict[str, Path]

    @property
    def ref(self) -> str:
        """``NAME@VERSION``."""
        return f"{self.name}@{self.version}"

    def pin(self) -> dict[str, Any]:
        """What a run's manifest records of it (``extra.datasets``): enough to fetch the
        same tasks again without the registry."""
        return {
            "name": self.name,
            "version": self.version,
            "registry": self.registry,
            "repositories": [dict(r) for r in self.repositories],
            "tasks": len(self.tasks),
        }


def fetch_dataset(ref: DatasetRef | str, registry: str | None = None) -> FetchedDataset:
    """Look ``ref`` up in ``registry`` and check its tasks out into the cache, unless they
    are there already.

    Args:
        ref: ``NAME@VERSION``.
        registry: A registry file or URL (default: ``$GEM_EVAL_REGISTRY``, else Harbor's).

    Raises:
        RegistryError: ``ref`` is not ``NAME@VERSION``; the registry cannot be read or
            lacks it; a task names no git repository; a repository, commit or path cannot
            be fetched. One line each.
    """
    parsed = ref if isinstance(ref, DatasetRef) else DatasetRef.parse(ref)
    if parsed is None:
        raise RegistryError(f"{ref!r} does not name a dataset: write NAME@VERSION")
    found = read_registry(registry)
    entry = found.find(parsed)
    if not entry.tasks:
        raise RegistryError(f"dataset {parsed} has no tasks in registry {found.source}")
    pinned = _pinned(entry, parsed)
    dirs = _repo_dirs(pinned)
    listing = [[task.git_url, commit, task.path] for task, commit in pinned]
    digest = hashlib.sha256(json.dumps(listing).encode()).hexdigest()[:12]
    root = cache_dir("datasets") / f"{_UNSAFE.sub('-', str(parsed))}-{digest}"
    tasks = {
        task.name: root / dirs[_key(task, commit)] / _inside(task.path) for task, commit in pinned
    }
    fetched = FetchedDataset(
        name=entry.name,
        version=entry.version,
        registry=found.source,
        description=entry.description,
        root=root,
        repositories=[{"git_url": url, "commit": commit} for url, commit in dirs],
        tasks=tasks,
    )
    CacheEntry(root, check=lambda path: (path / RECORD).is_file()).ensure(
        lambda tmp: _build(tmp, fetched, pinned, dirs)
    )
    return fetched


def recorded_registry(extra: Mapping[str, Any]) -> str | None:
    """The registry a run's datasets were looked up in (its manifest's ``extra``), so that a
    resumed or re-scored run reads the same one; ``None`` when it played none."""
    for pin in extra.get("datasets") or ():
        if isinstance(pin, dict) and isinstance(pin.get("registry"), str):
            return str(pin["registry"])
    return None


def _pinned(entry: DatasetEntry, ref: DatasetRef) -> list[tuple[RegistryTask, str]]:
    """Each task with the full commit it is fetched at (looked up once per repository and
    branch, tag or HEAD)."""
    commits: dict[tuple[str, str | None], str] = {}
    out = []
    for task in entry.tasks:
        if task.git_url is None:
            raise RegistryError(
                f"task {task.name!r} of {ref} names no git_url: gem-eval fetches registry "
                "tasks from git (give a local directory of tasks as a path instead)"
            )
        key = (task.git_url, task.git_commit_id)
        if key not in commits:
            commits[key] = resolve_commit(task.git_url, task.git_commit_id)
        out.append((task, commits[key]))
    return out


def _key(task: RegistryTask, commit: str) -> tuple[str, str]:
    assert task.git_url is not None  # checked by _pinned
    return task.git_url, commit


def _repo_dirs(pinned: list[tuple[RegistryTask, str]]) -> dict[tuple[str, str], str]:
    """A directory name in the entry for each repository and commit, in the registry's order."""
    dirs: dict[tuple[str, str], str] = {}
    for task, commit in pinned:
        key = _key(task, commit)
        if key in dirs:
            continue
        repo = key[0].rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].removesuffix(".git")
        name = f"{_UNSAFE.sub('-', repo) or 'repo'}-{commit[:12]}"
        taken = set(dirs.values())
        dirs[key] = next(
            n for i in range(len(dirs) + 1) if (n := f"{name}-{i}" if i else name) not in taken
        )
    return dirs


def _inside(path: str) -> PurePosixPath:
    return PurePosixPath(path.strip().strip("/") or ".")


def _build(
    tmp: Path,
    fetched: FetchedDataset,
    pinned: list[tuple[RegistryTask, str]],
    dirs: dict[tuple[str, str], str],
) -> None:
    """Check every repository's task paths out into ``tmp``, then write the record."""
    tmp.mkdir(parents=True)
    for key, name in dirs.items():
        paths = list(
            dict.fromkeys(task.path for task, commit in pinned if _key(task, commit) == key)
        )
        checkout(key[0], key[1], paths, tmp / name)
    record = {
        "name": fetched.name,
        "version": fetched.version,
        "repositories": [
            {"git_url": url, "commit": commit, "dir": dirs[(url, commit)]} for url, commit in dirs
        ],
        "tasks": {
            name: str(path.relative_to(fetched.root)) for name, path in fetched.tasks.items()
        },
    }
    (tmp / RECORD).write_text(json.dumps(record, indent=2) + "\n")
