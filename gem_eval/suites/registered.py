"""Suites of registry datasets: ``--suite terminal-bench@2.0``, and a task ``path`` naming one.

``NAME@VERSION`` where no suite file of that name exists is a dataset of the registry
(:mod:`gem_eval.registry`). It plays as the bundled suite of its family, whose defaults
apply (turn limit, generation settings, the image map of published base images), with the
family's task item pointing at the checkout: one task per task directory. The family is
read from the tasks the registry lists (:data:`FAMILIES`): Terminal-Bench
(``task.toml`` or ``task.yaml``; ``suites/terminal-bench.yaml``) or MCPMark
(``description.md`` and ``verify.py``; ``suites/mcpmark.yaml``). The suite is named
``NAME@VERSION`` and its tasks carry the dataset's pin, which a run's manifest keeps.

In a suite file, the ``path`` of a terminal or MCP task may name a dataset the same way
(``args: {path: terminal-bench@2.0}``); an existing directory of that name wins.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gem_eval.bundled import bundled_root
from gem_eval.errors import RegistryError
from gem_eval.registry.fetch import FetchedDataset, fetch_dataset
from gem_eval.registry.index import DatasetRef
from gem_eval.suites.suite import Suite
from gem_eval.suites.yaml_doc import YamlDoc, read_yaml

FAMILIES = (("terminal-bench", "terminal:Task-v0"), ("mcpmark", "mcp:Task-v0"))
"""``(bundled suite, env id)`` of each family a dataset may be, in the order tried."""


def dataset_path(value: Any, registry: str | None) -> FetchedDataset | None:
    """The dataset a task's ``path`` names, fetched; ``None`` when it names none (it is
    not ``NAME@VERSION``, or a file or directory of that name exists).

    Raises:
        RegistryError: It names a dataset that cannot be looked up or fetched.
    """
    if not isinstance(value, str) or Path(value).exists():
        return None
    ref = DatasetRef.parse(value)
    return None if ref is None else fetch_dataset(ref, registry)


def family_doc(fetched: FetchedDataset) -> YamlDoc:
    """The bundled suite of ``fetched``'s family, its task item's ``path`` pointing at the
    checkout (line numbers stay those of the bundled file).

    Raises:
        RegistryError: The tasks are of no family, or of two.
    """
    suite, env_id = _family(fetched)
    doc = read_yaml(bundled_root() / "suites" / f"{suite}.yaml")
    for item in doc.data.get("tasks") or ():
        if isinstance(item, dict) and item.get("env") == env_id:
            item["args"] = {**(item.get("args") or {}), "path": str(fetched.root)}
    return doc


def dataset_suite(suite: Suite, fetched: FetchedDataset) -> Suite:
    """``suite`` (loaded from :func:`family_doc`) as the dataset's own: named
    ``NAME@VERSION``, with no file (a resume looks it up again), its tasks pinned."""
    pin = fetched.pin()
    return dataclasses.replace(
        suite,
        name=fetched.ref,
        path=None,
        description=fetched.description or f"{fetched.ref} from {fetched.registry}",
        tasks=[dataclasses.replace(task, dataset=pin) for task in suite.tasks],
    )


def _family(fetched: FetchedDataset) -> tuple[str, str]:
    from gem_eval.envs.mcpmark.layout import is_task_dir as is_mcp_task
    from gem_eval.envs.terminal.layout import is_task_dir as is_terminal_task

    tests: dict[str, Callable[[Path], bool]] = {
        "terminal-bench": is_terminal_task,
        "mcpmark": is_mcp_task,
    }
    found = [
        (suite, env_id)
        for suite, env_id in FAMILIES
        if any(_holds(path, tests[suite]) for path in fetched.tasks.values())
    ]
    if len(found) == 1:
        return found[0]
    kinds = (
        "Terminal-Bench tasks (task.toml or task.yaml)",
        "MCPMark tasks (description.md and verify.py)",
    )
    if found:
        raise RegistryError(
            f"the tasks of {fetched.ref} mix {kinds[0]} and {kinds[1]}: a dataset plays as one"
        )
    raise RegistryError(f"the tasks of {fetched.ref} are neither {kinds[0]} nor {kinds[1]}")


def _holds(path: Path, is_task: Callable[[Path], bool]) -> bool:
    """Whether ``path`` is a task, or a directory with one below it."""
    if is_task(path):
        return True
    for current, dirs, _ in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        if is_task(Path(current)):
            return True
    return False
