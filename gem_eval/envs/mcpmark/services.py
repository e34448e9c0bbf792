"""The services MCP tasks run against: an image, an MCP server in it, a starting state.

* ``filesystem``: the official ``@modelcontextprotocol/server-filesystem`` (npm) on
  Node.js, serving ``/data``, where the task's starting directory is copied.
* ``postgres``: Debian's PostgreSQL 15 in the container; the starting state (an
  ``init.sql``, MCPMark's ``pg_dump`` archive or SQL dump of the category's database, or
  its ``prepare_environment.py``) is loaded as the agent's role into the template
  database ``mcp_template``, and the agent works on ``mcp_task``, a clone of it
  (``CREATE DATABASE ... TEMPLATE``), so ``verify.py`` can compare the end state with the
  untouched start; the MCP server is gem-eval's SQL server
  (``images/postgres/server.py``, on the official ``mcp`` SDK).

Each service's image is built from ``images/<service>/`` once its server's packages are
fetched on the host (npm / pip: the registries answer the host, and a container's HTTPS
may not), into a cached build context (:mod:`gem_eval.cache`: one process fetches, a
context missing a file is fetched again); the image is cached by content.
"""

from __future__ import annotations

import hashlib
import platform
import shlex
import shutil
import subprocess
import sys
from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar

from gem_eval.bundled import in_bytecode_cache
from gem_eval.cache import CacheEntry, cache_dir
from gem_eval.envs.mcpmark.state import StartState
from gem_eval.errors import SandboxUnavailableError
from gem_eval.records import ToolSpec
from gem_eval.sandbox.base import Sandbox

IMAGES = Path(__file__).parent / "images"
TASK_DB = "mcp_task"
TEMPLATE_DB = "mcp_template"
DATA_DIR = "/data"
STATE_DIR = "/grader/state"
LOAD_TIMEOUT_S = 600.0  # MCPMark's databases (dvdrental, employees) take a while to restore


class Service(ABC):
    """One kind of MCP task backend (see the module docstring)."""

    name: ClassVar[str]
    user: ClassVar[str] = "agent"
    slow_start: ClassVar[bool] = False  # setup may overlap the MCP server's start

    required: ClassVar[tuple[str, ...]] = ("Dockerfile",)
    """Files a prepared context must hold (beyond its manifest) to be used."""

    def build_context(self) -> Path:
        """The image's build context, prepared (server packages fetched) and cached.

        Safe when several episodes or processes ask at once: one fetches, the others
        wait and use its context; a context missing a file is fetched again."""
        source = IMAGES / self.name
        digest = hashlib.sha256()
        for path in sorted(p for p in source.rglob("*") if p.is_file()):
            if not in_bytecode_cache(path.relative_to(source)):  # pip compiles server.py
                digest.update(path.name.encode() + b"\0" + path.read_bytes())
        name = f"{self.name}-{digest.hexdigest()[:12]}"
        entry = CacheEntry(cache_dir("services") / name, check=self._complete)

        def build(context: Path) -> None:
            shutil.copytree(source, context, ignore=shutil.ignore_patterns("__pycache__"))
            self.fetch(context)

        entry.ensure(build)
        return entry.path

    def _complete(self, context: Path) -> bool:
        return all((context / name).exists() for name in self.required)

    @abstractmethod
    def fetch(self, context: Path) -> None:
        """Put the server's packages into ``context`` (on the host)."""

    @abstractmethod
    def tools(self) -> list[ToolSpec]:
        """The ``mcp`` tools entry: the service's server, started in the sandbox."""

    @abstractmethod
    async def setup(self, sandbox: Sandbox, state: StartState) -> None:
        """Load the starting state and start the service in a fresh sandbox."""

    @abstractmethod
    def env(self) -> dict[str, str]:
        """Where ``verify.py`` and the solution find the state."""

    def describe(self) -> dict[str, str]:
        """The pinned server packages (for the run manifest)."""
        out = {}
        for name in ("package.json", "requirements.txt"):
            path = IMAGES / self.name / name
            if path.is_file():
                out[name] = " ".join(_pins(path.read_text()))
        return out


def _run(argv: list[str], what: str) -> None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxUnavailableError(f"{what} failed: {exc}") from None
    if done.returncode != 0:
        tail = " / ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise SandboxUnavailableError(f"{what} failed: {tail}")


class FilesystemService(Service):
    """``filesystem`` (see the module docstring)."""

    name = "filesystem"
    required = ("Dockerfile", "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
    server = (
        "/opt/mcp-filesystem/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
    )

    def fetch(self, context: Path) -> None:
        if shutil.which("npm") is None:
            raise SandboxUnavailableError(
                "the filesystem MCP service needs npm on this machine to fetch "
                "@modelcontextprotocol/server-filesystem (apt-get install nodejs npm)"
            )
        _run(
            ["npm", "install", "--no-audit", "--no-fund", "--omit=dev", "--prefix", str(context)],
            "npm install of the filesystem MCP server",
        )

    def tools(self) -> list[ToolSpec]:
        server = {"name": "filesystem", "command": "node", "args": [self.server, DATA_DIR]}
        return [ToolSpec(name="mcp", settings={"servers": [{**server, "in_sandbox": True}]})]

    async def setup(self, sandbox: Sandbox, state: StartState) -> None:
        if state.kind != "tree":
            raise ValueError(f"a filesystem task starts from a directory, not {state.kind}")
        await sandbox.run_root(
            f"rm -rf {DATA_DIR} && mkdir -p {DATA_DIR}", "preparing /data", timeout=120
        )
        await sandbox.copy_dir(state.path, DATA_DIR)
        await sandbox.run_root(
            f"chown -R {self.user}: {DATA_DIR}", "handing /data to the agent", timeout=120
        )

    def env(self) -> dict[str, str]:
        return {"FILESYSTEM_TEST_DIR": DATA_DIR}


class PostgresService(Service):
    """``postgres`` (see the module docstring)."""

    name = "postgres"
    required = ("Dockerfile", "server.py", "site/mcp/__init__.py")
    slow_start = True  # its server connects on the first call
    python = "3.11"  # Debian bookworm's, in the image

    def fetch(self, context: Path) -> None:
        arch = platform.machine()
        _run(
            [
                sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                "--target", str(context / "site"), "--only-binary=:all:",
                "--implementation", "cp", "--python-version", self.python,
                "--platform", f"manylinux2014_{arch}", "--platform", f"manylinux_2_17_{arch}",
                "--platform", f"manylinux_2_28_{arch}",
                "-r", str(context / "requirements.txt"),
            ],
            "fetching the postgres MCP server's Python packages",
        )  # fmt: skip

    def tools(self) -> list[ToolSpec]:
        server = {
            "name": "postgres",
            "command": "python3",
            "args": ["/opt/mcp-postgres/server.py"],
            "env": {"PYTHONPATH": "/opt/mcp-postgres/site", "DATABASE_URL": self._url(self.user)},
            "in_sandbox": True,
        }
        return [ToolSpec(name="mcp", settings={"servers": [server]})]

    async def setup(self, sandbox: Sandbox, state: StartState) -> None:
        await sandbox.run_root("pg_ctlcluster 15 main start", "starting PostgreSQL", timeout=60)
        script = [
            f"psql -q -c 'CREATE ROLE {self.user} LOGIN'",
            f"createdb -O {self.user} {TEMPLATE_DB}",
            *await self._load(sandbox, state),
            f"createdb -O {self.user} -T {TEMPLATE_DB} {TASK_DB}",
        ]
        await sandbox.run_root(
            f"su postgres -c {shlex.quote(' && '.join(script))}",
            "loading the database",
            timeout=LOAD_TIMEOUT_S,
        )

    async def _load(self, sandbox: Sandbox, state: StartState) -> list[str]:
        """Put the state in the sandbox; the commands (as ``postgres``) that load it into
        the template, as the agent's role, so that the agent owns what it starts with."""
        psql = f"psql -q -v ON_ERROR_STOP=1 -U {self.user}"
        if state.kind == "init_sql":
            await sandbox.copy_dir(state.path, STATE_DIR)
            return [f"{psql} -f {STATE_DIR}/init.sql {TEMPLATE_DB}"]
        if state.kind in ("pg_dump", "sql_dump"):
            target = f"{STATE_DIR}/{state.path.name}"
            await sandbox.write_file(target, state.path.read_bytes(), owner="root")
            if state.kind == "sql_dump":
                # A dump converted by PostgreSQL 17 sets transaction_timeout, which 15 lacks.
                strip = "sed -e '/^SET transaction_timeout = /d'"
                return [f"{strip} {shlex.quote(target)} | {psql} {TEMPLATE_DB}"]
            # MCPMark's archives come from its superuser: leave owners and grants out.
            return [
                f"pg_restore --no-owner --no-privileges --role={self.user} "
                f"-d {TEMPLATE_DB} {shlex.quote(target)}"
            ]
        if state.kind == "prepare":
            # MCPMark runs it from the task directory, with the category's helpers beside it.
            category = state.path.parent.parent
            here = f"{STATE_DIR}/{category.name}"
            await sandbox.copy_dir(category, here)
            await sandbox.run_root(f"chmod -R a+rX {STATE_DIR}", "opening the state", timeout=60)
            task_dir = f"{here}/{state.path.parent.name}"
            env = {
                **self.env(),
                "POSTGRES_USERNAME": self.user,
                "POSTGRES_USER": self.user,
                "POSTGRES_DATABASE": TEMPLATE_DB,
                "DATABASE_URL": self._url(self.user, TEMPLATE_DB),
            }
            variables = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
            return [f"cd {shlex.quote(task_dir)} && env {variables} python3 {state.path.name}"]
        raise ValueError(f"a postgres task cannot start from {state.kind}")

    def env(self) -> dict[str, str]:
        return {
            "POSTGRES_HOST": "/var/run/postgresql",
            "POSTGRES_PORT": "5432",
            "POSTGRES_USERNAME": "postgres",
            "POSTGRES_USER": "postgres",
            "POSTGRES_PASSWORD": "",
            "POSTGRES_DATABASE": TASK_DB,
            "DATABASE_URL": self._url("postgres"),
        }

    @staticmethod
    def _url(user: str, database: str = TASK_DB) -> str:
        return f"postgresql://{user}@/{database}?host=/var/run/postgresql"


def _pins(text: str) -> list[str]:
    """``name==version`` / ``name@version`` pins in a requirements.txt or package.json."""
    if text.lstrip().startswith("{"):
        import json

        deps = json.loads(text).get("dependencies", {})
        return [f"{name}@{version}" for name, version in deps.items()]
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


SERVICE_TYPES: dict[str, type[Service]] = {s.name: s for s in (FilesystemService, PostgresService)}
