"""``TerminalTask``: a Terminal-Bench task directory, in either published layout.

Terminal-Bench 1 (``task.yaml`` marks it)::

    task.yaml          instruction, difficulty, category, tags, parser_name,
                       max_agent_timeout_sec (360), max_test_timeout_sec (60)
    Dockerfile         built for the agent's container (``client`` in docker-compose.yaml)
    docker-compose.yaml  optional: the ``client`` service and sidecars (a database...)
    run-tests.sh       copied with tests/ into /tests (TEST_DIR) after the agent is done
    tests/             test_outputs.py ..., run with pytest -rA; every test must pass
    solution.sh        the reference solution (the oracle runs it), or solution.yaml:
                       keystrokes sent to a tmux session (see ``keystrokes.py``)

Terminal-Bench 2 / Harbor (``task.toml`` marks it)::

    instruction.md
    task.toml          [agent] timeout_sec and user, [verifier] timeout_sec and env,
                       [environment] cpus, memory_mb (or memory = "2G"), allow_internet
                       (or network_mode: public, no-network; an allowlist is no network)
    environment/       Dockerfile (the build context); docker-compose.yaml: sidecars
                       beside the agent's service ``main``
    solution/solve.sh  copied to /solution for the oracle
    tests/test.sh      copied with tests/ into /tests; writes /logs/verifier/reward.txt
                       (a number) or reward.json ({name: number})

gem-eval extension, TB1 only: ``test_weights: {test_name: weight}`` in ``task.yaml``
scores the fraction of weight that passed instead of all-or-nothing.

Network: ``allow_internet`` is a permission, which a run may take away (a suite's
``sandbox: {network: false}``, ``--no-network``). A task that cannot work without the
internet says so with the gem-eval extension ``requires_internet = true`` (TB2
``[environment]``, where Harbor ignores it; TB1 ``task.yaml``): such a run refuses it
before it starts instead of grading it 0.

Sidecars (the compose file's other services, see :mod:`gem_eval.envs.terminal.compose`)
run beside the agent's container on a private network per episode, under the same
network permission.
"""

from __future__ import annotations

import posixpath
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from gem_eval.envs.terminal.compose import read_compose
from gem_eval.errors import TaskFormatError, UserError
from gem_eval.records import Condition, SidecarSpec

Layout = Literal["tb1", "tb2"]
# Compose variables of a Terminal-Bench 1 docker-compose.yaml, as its harness sets them.
TB1_COMPOSE_VARS = {
    "T_BENCH_TEST_DIR": "/tests",
    "T_BENCH_CONTAINER_LOGS_PATH": "/logs",
    "T_BENCH_CONTAINER_AGENT_LOGS_PATH": "/agent-logs",
}


@dataclass
class TerminalTask:
    """One task directory, read.

    Attributes:
        name: The directory's name (the task id).
        path: The directory.
        layout: ``tb1`` or ``tb2``.
        instruction: What the agent is asked to do.
        context: The image's build context; ``dockerfile`` its Dockerfile there.
        image: A prebuilt image (TB2 ``docker_image``) when there is no Dockerfile.
        workdir: The image's last ``WORKDIR`` (where the agent and the tests start).
        agent_timeout_s: The agent's time.
        test_timeout_s: The tests' time.
        cpus, memory_mb, network: The container's resources.
        requires_internet: The task cannot work without the network (gem-eval's key).
        agent_user: The user the agent runs as (TB2 ``[agent] user``; ``None``: root).
        env: The container's environment (TB1 compose ``environment:``).
        tests: The tests directory; ``test_script`` the script run from ``/tests``.
        verifier_env: Environment of the test run.
        solution: The reference solution directory or script (``None``: no oracle).
        test_weights: TB1: weight per test name.
        audit: Whether the integrity audit runs (gem-eval extension).
        audit_exclude: Paths the agent may change without voiding the grade.
        service: The agent's compose service (``client``, ``main``; its host name
            beside the sidecars); ``None`` without a compose file.
        depends_on: The sidecars the agent's container waits for.
        sidecars: The compose file's other services.
        difficulty, category, tags: Metadata.
    """

    name: str
    path: Path
    layout: Layout
    instruction: str
    context: Path | None
    dockerfile: str = "Dockerfile"
    image: str | None = None
    workdir: str = "/app"
    agent_timeout_s: float = 360.0
    test_timeout_s: float = 60.0
    cpus: float = 1.0
    memory_mb: int = 2048
    network: bool = True
    requires_internet: bool = False
    agent_user: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    tests: Path | None = None
    test_script: str = "run-tests.sh"
    verifier_env: dict[str, str] = field(default_factory=dict)
    solution: Path | None = None
    test_weights: dict[str, float] = field(default_factory=dict)
    audit: bool = True
    audit_exclude: list[str] = field(default_factory=list)
    service: str | None = None
    depends_on: dict[str, Condition] = field(default_factory=dict)
    sidecars: list[SidecarSpec] = field(default_factory=list)
    difficulty: str | None = None
    category: str | None = None
    tags: list[str] = field(default_factory=list)


def is_task_dir(path: Path) -> bool:
    """Whether ``path`` holds a task in either layout."""
    return (path / "task.yaml").is_file() or (path / "task.toml").is_file()


def find_tasks(root: Path) -> list[Path]:
    """The task directories under ``root`` (``root`` itself when it is one), sorted."""
    if not root.is_dir():
        raise UserError(f"{root}: no such directory of terminal tasks")
    if is_task_dir(root):
        return [root]
    found = sorted({p.parent for p in root.rglob("task.*") if is_task_dir(p.parent)})
    if not found:
        raise UserError(f"{root}: no task directories (task.yaml or task.toml) under it")
    return found


def load_task(path: Path) -> TerminalTask:
    """Read the task in ``path`` (TB2 if it has ``task.toml``, else TB1).

    Raises:
        TaskFormatError: A missing file or a bad value, with the file and line.
    """
    path = path.resolve()
    if (path / "task.toml").is_file():
        return _load_tb2(path)
    if (path / "task.yaml").is_file():
        return _load_tb1(path)
    raise TaskFormatError(path, "not a task directory: no task.yaml (TB1) or task.toml (TB2)")


def _load_tb1(path: Path) -> TerminalTask:
    meta_path = path / "task.yaml"
    meta, lines = _read_yaml(meta_path)
    instruction = meta.get("instruction")
    if instruction is None and isinstance(meta.get("descriptions"), list):  # early TB1
        first = meta["descriptions"][0] if meta["descriptions"] else {}
        instruction = first.get("description") if isinstance(first, dict) else None
    if not isinstance(instruction, str) or not instruction.strip():
        raise TaskFormatError(meta_path, "needs `instruction` (the task's text)", 1)
    if meta.get("parser_name", "pytest") != "pytest":
        raise TaskFormatError(
            meta_path,
            f"parser_name {meta['parser_name']!r} is not supported (only pytest)",
            lines.get("parser_name"),
        )
    weights = meta.get("test_weights") or {}
    if not isinstance(weights, dict) or not all(
        isinstance(v, int | float) and v >= 0 for v in weights.values()
    ):
        raise TaskFormatError(
            meta_path, "test_weights maps test names to weights >= 0", lines.get("test_weights")
        )
    task = TerminalTask(
        name=path.name,
        path=path,
        layout="tb1",
        instruction=instruction.strip(),
        context=path,
        agent_timeout_s=_number(meta, "max_agent_timeout_sec", 360.0, meta_path, lines),
        test_timeout_s=_number(meta, "max_test_timeout_sec", 60.0, meta_path, lines),
        tests=path / "tests",
        test_script="run-tests.sh",
        verifier_env={"TEST_DIR": "/tests"},
        solution=next(
            (path / name for name in ("solution.sh", "solution.yaml") if (path / name).is_file()),
            None,
        ),
        test_weights={str(k): float(v) for k, v in weights.items()},
        requires_internet=meta.get("requires_internet") is True,
        difficulty=_text(meta.get("difficulty")),
        category=_text(meta.get("category")),
        tags=[str(t) for t in meta.get("tags") or []],
    )
    _read_audit(task, meta, meta_path, lines)
    if not (path / "run-tests.sh").is_file():
        raise TaskFormatError(path, "a Terminal-Bench 1 task needs run-tests.sh")
    _read_compose(task, path / "docker-compose.yaml", None, TB1_COMPOSE_VARS)
    return _with_workdir(task)


def _load_tb2(path: Path) -> TerminalTask:
    meta_path = path / "task.toml"
    try:
        meta = tomllib.loads(meta_path.read_text())
    except tomllib.TOMLDecodeError as exc:
        line = re.search(r"line (\d+)", str(exc))
        raise TaskFormatError(meta_path, str(exc), int(line.group(1)) if line else None) from None
    instruction_path = path / "instruction.md"
    if not instruction_path.is_file():
        raise TaskFormatError(path, "a Terminal-Bench 2 task needs instruction.md")
    agent, verifier = _table(meta, "agent", meta_path), _table(meta, "verifier", meta_path)
    environment, metadata = (
        _table(meta, "environment", meta_path),
        _table(meta, "metadata", meta_path),
    )
    if not (path / "tests" / "test.sh").is_file():
        raise TaskFormatError(path, "a Terminal-Bench 2 task needs tests/test.sh")
    task = TerminalTask(
        name=path.name,
        path=path,
        layout="tb2",
        instruction=instruction_path.read_text().strip(),
        context=path / "environment" if (path / "environment").is_dir() else None,
        image=_text(environment.get("docker_image")),
        agent_timeout_s=_number(agent, "timeout_sec", 600.0, meta_path),
        test_timeout_s=_number(verifier, "timeout_sec", 600.0, meta_path),
        cpus=_number(environment, "cpus", 1.0, meta_path),
        memory_mb=_memory_mb(environment, meta_path),
        network=_network(environment, meta_path),
        requires_internet=environment.get("requires_internet") is True,
        agent_user=_text(agent.get("user")),
        tests=path / "tests",
        test_script="test.sh",
        verifier_env={str(k): str(v) for k, v in (verifier.get("env") or {}).items()},
        solution=path / "solution" if (path / "solution" / "solve.sh").is_file() else None,
        difficulty=_text(metadata.get("difficulty")),
        category=_text(metadata.get("category")),
        tags=[str(t) for t in metadata.get("tags") or []],
    )
    _read_audit(task, verifier, meta_path, {})
    if task.context is not None:
        _read_compose(task, task.context / "docker-compose.yaml", "main", {})
    if task.image is None and (
        task.context is None or not (task.context / task.dockerfile).is_file()
    ):
        raise TaskFormatError(path, "needs environment/Dockerfile or [environment] docker_image")
    return _with_workdir(task)


def _read_audit(
    task: TerminalTask, meta: dict[str, Any], path: Path, lines: dict[str, int]
) -> None:
    """The gem-eval audit settings (``audit``, ``audit_exclude``) of a task's metadata."""
    audit = meta.get("audit", True)
    if not isinstance(audit, bool):
        raise TaskFormatError(
            path, f"audit must be true or false, not {audit!r}", lines.get("audit")
        )
    exclude = meta.get("audit_exclude") or []
    if not isinstance(exclude, list) or not all(
        isinstance(p, str) and p.startswith("/") for p in exclude
    ):
        raise TaskFormatError(
            path, "audit_exclude must be a list of absolute paths", lines.get("audit_exclude")
        )
    task.audit, task.audit_exclude = audit, [str(p) for p in exclude]


def _read_compose(
    task: TerminalTask, compose: Path, main: str | None, variables: dict[str, str]
) -> None:
    """Take the main service's build and environment and the sidecars of a
    ``docker-compose.yaml`` (``main``: the agent's service; ``None``: TB1's)."""
    if not compose.is_file():
        return
    read = read_compose(compose, main, variables, task.path)
    build = read.build
    task.dockerfile = str(build.get("dockerfile") or task.dockerfile)
    if build.get("context") not in (None, "."):
        assert task.context is not None
        task.context = (task.context / str(build["context"])).resolve()
    task.env.update(read.env)
    task.service, task.depends_on, task.sidecars = read.service, read.depends_on, read.sidecars


def _with_workdir(task: TerminalTask) -> TerminalTask:
    """Set ``workdir`` to the final stage's ``WORKDIR`` as Docker resolves it (a
    relative one continues the previous; default ``/app``)."""
    if task.context is None or not (task.context / task.dockerfile).is_file():
        return task
    workdir: str | None = None
    for line in (task.context / task.dockerfile).read_text().splitlines():
        words = line.split()
        if len(words) >= 2 and words[0].upper() == "FROM":
            workdir = None  # a new stage starts from its base image's directory
        elif len(words) >= 2 and words[0].upper() == "WORKDIR":
            workdir = posixpath.normpath(posixpath.join(workdir or "/", words[1]))
    if workdir is not None:
        task.workdir = workdir
    return task


def _read_yaml(path: Path) -> tuple[dict[str, Any], dict[str, int]]:
    """A YAML mapping and the line of each top-level key."""
    text = path.read_text()
    try:
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise TaskFormatError(
            path, str(getattr(exc, "problem", exc)), mark.line + 1 if mark else None
        ) from None
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
        raise TaskFormatError(path, "must be a mapping", 1)
    lines = {str(k.value): k.start_mark.line + 1 for k, _ in node.value}
    return data, lines


def _table(meta: dict[str, Any], name: str, path: Path) -> dict[str, Any]:
    value = meta.get(name) or {}
    if not isinstance(value, dict):
        raise TaskFormatError(path, f"[{name}] must be a table")
    return value


def _number(
    meta: dict[str, Any], key: str, default: float, path: Path, lines: dict[str, int] | None = None
) -> float:
    value = meta.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise TaskFormatError(
            path, f"{key} must be a number > 0, not {value!r}", (lines or {}).get(key)
        )
    return float(value)


def _memory_mb(environment: dict[str, Any], path: Path) -> int:
    if "memory_mb" in environment:
        return int(_number(environment, "memory_mb", 2048, path))
    text = str(environment.get("memory", "2048M")).strip().upper().removesuffix("B")
    units = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}
    try:
        return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)
    except ValueError:
        raise TaskFormatError(
            path, f"memory {environment['memory']!r} is not a size like 4G"
        ) from None


def _network(environment: dict[str, Any], path: Path) -> bool:
    """Harbor's ``network_mode`` over its older ``allow_internet``. Docker cannot hold a
    container to an allowlist of hosts, so ``allowlist`` is no network (the tighter)."""
    mode = environment.get("network_mode")
    if mode is None:
        return bool(environment.get("allow_internet", True))
    if mode not in ("public", "no-network", "allowlist"):
        raise TaskFormatError(path, f"network_mode {mode!r} is not public, no-network or allowlist")
    return bool(mode == "public")


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
