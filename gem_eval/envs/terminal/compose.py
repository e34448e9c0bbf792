"""A task's ``docker-compose.yaml``: its main service and the sidecars beside it.

Terminal-Bench 1 names the agent's container ``client`` (built from the task's
Dockerfile; a file with one service may call it anything); Harbor (TB2) merges
``environment/docker-compose.yaml`` over its own file, whose service ``main`` is the
agent's container, so there every other service is a sidecar. Sidecars are a task's
database or web server: each runs in its own container on the episode's private network
(see :mod:`gem_eval.sandbox.docker_sidecars`), where its service name is a host name.

What is read of a sidecar: ``image`` (``--image-map`` applies) or ``build`` (a context
inside the task, built before the run), ``command``, ``entrypoint``, ``environment``,
``env_file``, ``working_dir``, ``user``, ``hostname``, ``healthcheck``, ``depends_on``
(conditions ``service_started``, ``service_healthy``, ``service_completed_successfully``),
limits (``mem_limit``, ``cpus``, ``pids_limit``, ``deploy.resources.limits``; never
above the main container's), and bind mounts of the task's own files (copied in before
it starts). Named volumes are the container's own disk; ``ports``, ``expose`` and
``networks`` need nothing (every service reaches every port of the others). What would
take the sandbox apart is refused with the file and line: ``privileged``,
``network_mode``, ``pid``, ``ipc``, a host path mounted. Of the main service, its
``build``, ``environment`` and ``depends_on`` count, as before.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import yaml

from gem_eval.errors import TaskFormatError
from gem_eval.records import Condition, HealthSpec, SidecarSpec

CONDITIONS = ("service_started", "service_healthy", "service_completed_successfully")
_REFUSED = ("privileged", "network_mode", "pid", "ipc")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass
class Compose:
    """What a compose file says.

    Attributes:
        service: The main service's name (its host name beside the sidecars).
        build: The main service's ``build`` mapping, if any.
        env: The main service's environment.
        depends_on: What the main service waits for.
        sidecars: Every other service.
    """

    service: str
    build: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    depends_on: dict[str, Condition] = field(default_factory=dict)
    sidecars: list[SidecarSpec] = field(default_factory=list)


def read_compose(path: Path, main: str | None, variables: dict[str, str], root: Path) -> Compose:
    """Read ``path``; ``main`` names the agent's service (``None``: ``client``, or the
    only service); files it mounts must lie inside ``root`` (the task directory).

    Raises:
        TaskFormatError: A value gem-eval cannot honour, with the file and line.
    """
    text = path.read_text()
    try:
        node, data = yaml.compose(text), yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise TaskFormatError(
            path, str(getattr(exc, "problem", exc)), mark.line + 1 if mark else None
        ) from None
    lines = _lines(node)
    services = (data or {}).get("services") if isinstance(data, dict) else None
    if not isinstance(services, dict) or not all(isinstance(s, dict) for s in services.values()):
        raise TaskFormatError(path, "`services` must map service names to settings", 1)
    names = [str(n) for n in services]
    if main is None:
        if "client" not in services and len(services) != 1:
            raise TaskFormatError(
                path,
                "a compose file with several services needs a `client` service (the "
                f"agent's container); found: {', '.join(names)}",
                lines.get(("services",), 1),
            )
        main = "client" if "client" in services else names[0]
    reader = _Reader(path, variables, root, lines, {*names, main})
    own = services.get(main) or {}
    build = own.get("build")
    compose = Compose(
        service=main,
        build=build if isinstance(build, dict) else {},
        env=reader.environment(main, own),
        depends_on=reader.depends_on(main, own),
        sidecars=[reader.sidecar(str(n), s) for n, s in services.items() if n != main],
    )
    _check_cycles(path, compose, lines)
    return compose


@dataclass
class _Reader:
    path: Path
    variables: dict[str, str]
    root: Path
    lines: dict[tuple[str, ...], int]
    names: set[str]

    def fail(self, where: tuple[str, ...], message: str) -> TaskFormatError:
        line = next(
            (self.lines[where[:n]] for n in range(len(where), 0, -1) if where[:n] in self.lines),
            None,
        )
        return TaskFormatError(self.path, message, line)

    def sub(self, value: Any) -> str:
        return substitute(str(value), self.variables)

    def sidecar(self, name: str, service: dict[str, Any]) -> SidecarSpec:
        at = ("services", name)
        for key in _REFUSED:
            if service.get(key) not in (None, False):
                raise self.fail((*at, key), f"service {name!r}: `{key}` is not supported")
        build, image = service.get("build"), service.get("image")
        context = dockerfile = None
        if build is not None:
            spec = {"context": build} if isinstance(build, str) else build
            context = (self.path.parent / self.sub(spec.get("context") or ".")).resolve()
            dockerfile = self.sub(spec.get("dockerfile") or "Dockerfile")
            if not (context / dockerfile).is_file():
                raise self.fail((*at, "build"), f"service {name!r}: no {context / dockerfile}")
        elif image is None or "$" in self.sub(image):
            raise self.fail(at, f"service {name!r} needs `build` or an `image` without variables")
        health = self.healthcheck(name, service.get("healthcheck"))
        limits = ((service.get("deploy") or {}).get("resources") or {}).get("limits") or {}
        memory = service.get("mem_limit") or limits.get("memory")
        cpus = service.get("cpus") or limits.get("cpus")
        aliases = [self.sub(service[k]) for k in ("hostname",) if service.get(k)]
        return SidecarSpec(
            name=name,
            image=None if build is not None else self.sub(image),
            build=None if context is None else str(context),
            dockerfile=dockerfile or "Dockerfile",
            command=self.argv(service.get("command")),
            entrypoint=self.argv(service.get("entrypoint")),
            env=self.environment(name, service),
            user=None if service.get("user") is None else self.sub(service["user"]),
            workdir=None if not service.get("working_dir") else self.sub(service["working_dir"]),
            aliases=[a for a in aliases if "$" not in a and a != name],
            files=self.files(name, service.get("volumes") or []),
            healthcheck=health,
            depends_on=self.depends_on(name, service),
            memory=None if memory is None else str(memory).lower(),
            cpus=None if cpus is None else float(cpus),
            pids=service.get("pids_limit"),
        )

    def argv(self, value: Any) -> list[str] | None:
        if value is None:
            return None
        words = shlex.split(value) if isinstance(value, str) else list(value)
        return [self.sub(w) for w in words]

    def environment(self, name: str, service: dict[str, Any]) -> dict[str, str]:
        env: dict[str, str] = {}
        files = service.get("env_file") or []
        for entry in [files] if isinstance(files, str | dict) else files:
            spec = {"path": entry} if isinstance(entry, str) else entry
            source = self.path.parent / self.sub(spec["path"])
            if source.is_file():
                env |= _env_file(source.read_text())
            elif spec.get("required", True):
                raise self.fail(("services", name, "env_file"), f"no such file {source}")
        given = service.get("environment") or {}
        if isinstance(given, list):  # "KEY=VALUE"; a bare KEY (the host's value) is left out
            given = dict(str(e).split("=", 1) for e in given if "=" in str(e))
        return env | {str(k): self.sub(v) for k, v in given.items() if v is not None}

    def depends_on(self, name: str, service: dict[str, Any]) -> dict[str, Condition]:
        given = service.get("depends_on") or {}
        if isinstance(given, list):
            given = {n: None for n in given}
        out: dict[str, Condition] = {}
        for other, settings in given.items():
            condition = (settings or {}).get("condition", "service_started")
            if other not in self.names:
                raise self.fail(("services", name, "depends_on"), f"no service {other!r}")
            if condition not in CONDITIONS:
                raise self.fail(
                    ("services", name, "depends_on"), f"unknown condition {condition!r}"
                )
            out[str(other)] = cast(Condition, condition)
        return out

    def healthcheck(self, name: str, value: Any) -> HealthSpec | None:
        if not value:
            return None
        at = ("services", name, "healthcheck")
        if value.get("disable"):
            return HealthSpec(test=["NONE"])
        test = value.get("test")
        if isinstance(test, str):
            test = ["CMD-SHELL", test]
        if not isinstance(test, list) or not test or test[0] not in ("CMD", "CMD-SHELL", "NONE"):
            raise self.fail(at, f"service {name!r}: healthcheck test must start CMD or CMD-SHELL")
        times = {
            key: _seconds(value[key], lambda m: self.fail(at, m))
            for key in ("interval", "timeout", "start_period")
            if value.get(key) is not None
        }
        return HealthSpec(
            test=[self.sub(t) for t in test],
            interval_s=times.get("interval", 30.0),
            timeout_s=times.get("timeout", 30.0),
            retries=int(value.get("retries", 3)),
            start_s=times.get("start_period", 0.0),
        )

    def files(self, name: str, volumes: list[Any]) -> dict[str, str]:
        """Bind mounts of the task's own files, to copy in (others left out)."""
        files: dict[str, str] = {}
        for volume in volumes:
            if isinstance(volume, dict):
                if volume.get("type") != "bind":
                    continue
                source, target = volume.get("source"), volume.get("target")
            else:
                source, _, rest = str(volume).partition(":")
                target = rest.split(":")[0] if rest else None
            source = self.sub(source or "")
            if not target or "$" in source or not source.startswith((".", "/", "~")):
                continue  # a named volume, or a path only the Terminal-Bench harness has
            path = (self.path.parent / source).resolve()
            if source.startswith(("/", "~")) or not path.is_relative_to(self.root):
                raise self.fail(
                    ("services", name, "volumes"),
                    f"service {name!r} mounts {source}, outside the task: no host path is",
                )
            if not path.exists():
                raise self.fail(("services", name, "volumes"), f"no such file {path}")
            files[self.sub(target)] = str(path)
        return files


def substitute(value: str, variables: dict[str, str]) -> str:
    """Compose's ``${NAME}``, ``$NAME``, ``${NAME:-default}``, ``${NAME-default}`` and
    ``$$`` from ``variables``; unknown names without a default are left as they are."""

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1) or match.group(4)
        if name in variables and (variables[name] or match.group(2) != ":-"):
            return variables[name]
        return match.group(3) if match.group(2) else match.group(0)

    return re.sub(r"\$\$|\$\{(\w+)(?:(:?-)([^}]*))?\}|\$(\w+)", one, value)


def _seconds(value: Any, fail: Any) -> float:
    if isinstance(value, int | float):
        return float(value)
    text = str(value).strip()
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise fail(f"{value!r} is not a duration like 10s or 1m30s")
    return sum(float(n) * _UNITS[u] for n, u in parts)


def _env_file(text: str) -> dict[str, str]:
    env = {}
    for raw in text.splitlines():
        line = raw.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            env[key.strip()] = value.strip().strip("'\"")
    return env


def _check_cycles(path: Path, compose: Compose, lines: dict[tuple[str, ...], int]) -> None:
    graph = {s.name: set(s.depends_on) for s in compose.sidecars}
    graph[compose.service] = set(compose.depends_on)
    for name in graph:
        seen, todo = set(), list(graph[name])
        while todo:
            other = todo.pop()
            if other == name:
                raise TaskFormatError(
                    path, f"service {name!r} depends on itself", lines.get(("services", name))
                )
            if other not in seen:
                seen.add(other)
                todo.extend(graph.get(other, ()))


def _lines(node: Any, at: tuple[str, ...] = ()) -> dict[tuple[str, ...], int]:
    """The line of each mapping key, by its path (``("services", "db", "image")``)."""
    out: dict[tuple[str, ...], int] = {}
    if isinstance(node, yaml.MappingNode) and len(at) < 3:
        for key, value in node.value:
            where = (*at, str(key.value))
            out[where] = key.start_mark.line + 1
            out |= _lines(value, where)
    return out
