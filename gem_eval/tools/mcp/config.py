"""``ServerConfig``: one MCP server of an ``mcp`` tools entry, as a task writes it.

The transport follows from the keys given::

    {name: notes, command: python, args: [srv.py], env: {K: v}, cwd: /srv}  # stdio
    {name: notes, command: python, args: [srv.py], in_sandbox: true}  # stdio in the sandbox
    {name: web, url: "http://127.0.0.1:8000/mcp", headers: {Authorization: ...}}  # HTTP
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

Transport = Literal["stdio", "http"]


class ServerConfig(BaseModel):
    """How to reach one MCP server.

    Attributes:
        name: Names the server in messages, in the run manifest and, when tool names are
            prefixed, in the tools (``name__tool``).
        command: The program that serves MCP over stdio (with ``args``, ``env``, ``cwd``).
            On the host it gets only ``PATH``, ``HOME``, ``USER``, ``LOGNAME``, ``SHELL``,
            ``TERM`` of the harness's environment, plus ``env``.
        args: Its arguments.
        env: Extra environment variables for it.
        cwd: Its working directory.
        url: A streamable HTTP endpoint (``http(s)://host:port/mcp``), instead of a command.
        headers: HTTP headers sent with every request (e.g. ``Authorization``).
        in_sandbox: Start the command inside the episode's sandbox (stdio only); the
            server then lives and dies with the episode.
        timeout_s: Seconds a tool call may take (default: the kit's ``timeout_s``).
        connect_timeout_s: Seconds the server may take to start and answer
            ``initialize`` and ``tools/list``.
        tools: Offer only these of the server's tools (default: all of them).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,40}$")
    command: str | None = Field(default=None, min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = Field(default=None, pattern=r"^https?://\S+$")
    headers: dict[str, str] = Field(default_factory=dict)
    in_sandbox: bool = False
    timeout_s: float | None = Field(default=None, gt=0)
    connect_timeout_s: float = Field(default=60.0, gt=0)
    tools: list[str] | None = None

    @model_validator(mode="after")
    def _one_transport(self) -> ServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either command (stdio) or url (streamable HTTP)")
        if self.url is not None:
            stdio_only = [k for k in ("args", "env", "cwd", "in_sandbox") if getattr(self, k)]
            if stdio_only:
                raise ValueError(f"{', '.join(stdio_only)} only go with command, not url")
        elif self.headers:
            raise ValueError("headers only go with url, not command")
        return self

    @property
    def transport(self) -> Transport:
        """``stdio`` (a command) or ``http`` (a URL)."""
        return "stdio" if self.command is not None else "http"


def parse_servers(servers: Any) -> list[ServerConfig]:
    """The ``servers`` setting of an ``mcp`` entry, checked.

    Raises:
        ValueError: A bad or missing server, with a one-line message naming it.
    """
    if isinstance(servers, dict):
        servers = [servers]
    if not isinstance(servers, list) or not servers:
        raise ValueError("servers must be a non-empty list of {name, command | url, ...}")
    configs: list[ServerConfig] = []
    for index, raw in enumerate(servers):
        label = f"servers[{index}]"
        if isinstance(raw, dict) and isinstance(raw.get("name"), str):
            label += f" ({raw['name']})"
        if isinstance(raw, ServerConfig):
            configs.append(raw)
            continue
        if not isinstance(raw, dict):
            raise ValueError(f"{label}: must be a mapping, got {type(raw).__name__}")
        try:
            configs.append(ServerConfig.model_validate(raw))
        except ValidationError as exc:
            raise ValueError(f"{label}: {_first_error(exc)}") from None
    names = [c.name for c in configs]
    doubled = sorted({n for n in names if names.count(n) > 1})
    if doubled:
        raise ValueError(f"two servers are named {doubled[0]!r}")
    return configs


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    message = str(error["msg"]).removeprefix("Value error, ")
    where = ".".join(str(part) for part in error["loc"])
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {message}{more}" if where else f"{message}{more}"
