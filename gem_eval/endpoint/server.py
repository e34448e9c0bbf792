"""One OpenAI-compatible endpoint per run, through which agents that are programs (not
gem-eval's own loop) call the run's model: :class:`ModelEndpoint`.

Each episode opens a *line* (:class:`EpisodeLine`) and gets a token of its own; the agent
is given the endpoint's URL and that token as its API key. A request is answered by the
run's model object, the very one gem-eval's loop would call (retries, adaptive
concurrency, the response cache, token ids), and every call, answered or failed, is
handed to the line's ``on_call`` as it happens, so the episode's trajectory, cost and
budget see it. A line stops (:meth:`EpisodeLine.stop`) when the budget is spent or when
the model client gives up on a call for the machinery's sake (its retries spent on a
refused connection, a 5xx, a timeout): agents retry a failed call for minutes, so the
episode ends their play then, and the line answers every later call at once. The real
API key never leaves gem-eval; a token opens only its episode's line, and a closed line
answers 401. It listens on ``127.0.0.1`` and on the gateways of the container networks
that agents run in (see :mod:`gem_eval.sandbox.endpoint_network`), never on all
addresses.

Served: ``POST /v1/chat/completions`` (whole, or streamed as server-sent events) and
``GET /v1/models``.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gem_eval.endpoint import wire
from gem_eval.errors import GemEvalError, ModelCallError
from gem_eval.models.base import GenerateConfig, Message, Model, ModelOutput, ToolSchema

if TYPE_CHECKING:
    from aiohttp import web

    from gem_eval.budget import Budget


@dataclass
class Call:
    """One request an agent made on its line, and how it was answered.

    Attributes:
        messages, tools, config: What the model was asked (the agent's request).
        output: The model's answer (``None`` when the call failed).
        error: Why it failed (``None`` when answered).
        stream: The agent asked for a streamed answer.
        latency_s: From the request's arrival to the answer.
    """

    messages: list[Message]
    tools: list[ToolSchema] | None
    config: GenerateConfig
    output: ModelOutput | None = None
    error: BaseException | None = None
    stream: bool = False
    latency_s: float = 0.0


@dataclass
class EpisodeLine:
    """What one episode's requests are answered with, and who hears of them.

    Attributes:
        model: The run's model (with the run's wrappers: response cache, episode binding).
        config: The run's generation settings for the episode (the task's and ``-M``);
            what the agent sends overrides them.
        on_call: Hears every call as soon as it is answered or failed.
        budget: The run's budget: once spent, no call starts (the agent is answered 429
            and the line is marked ``stopped``).
    """

    model: Model
    config: GenerateConfig = field(default_factory=GenerateConfig)
    on_call: Callable[[Call], None] | None = None
    budget: Budget | None = None
    stopped: str | None = None
    """Why the line stopped answering (the budget was spent, or :attr:`failure`), for the
    episode to end."""
    failure: ModelCallError | None = None
    """The call the model client gave up on for the machinery's sake (a transient failure
    that outlasted its retries): the line stopped on it, and answers every later call
    with it without calling the model."""
    on_stop: Callable[[], None] | None = None
    """Hears the line stop (once): the episode ends the agent then, not when it gives up."""
    calls: int = 0

    def stop(self, reason: str) -> None:
        """Stop answering (the first reason stays), and tell :attr:`on_stop`."""
        if self.stopped is None:
            self.stopped = reason
            if self.on_stop is not None:
                self.on_stop()


class ModelEndpoint:
    """The run's endpoint: start it once, open a line per episode.

    Args:
        host: The address to listen on first: this machine's (agents that run here).
            Agents in containers reach it at their network's gateway, which
            :meth:`listen` adds; never all interfaces.
        port: 0 for a free port.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host, self.port = host, port
        self._lines: dict[str, EpisodeLine] = {}
        self._runner: web.AppRunner | None = None
        self._ports: dict[str, int] = {}  # every address listened on -> its port
        self._listening: asyncio.Lock | None = None

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT/v1``, once started."""
        if self._runner is None:
            raise GemEvalError("the model endpoint has not been started")
        return f"http://{self.host}:{self.port}/v1"

    def url(self, host: str) -> str:
        """``http://HOST:PORT/v1`` for an address :meth:`listen` opened (or ``host``)."""
        if host not in self._ports:
            raise GemEvalError(f"the model endpoint does not listen on {host}")
        return f"http://{host}:{self._ports[host]}/v1"

    async def start(self) -> None:
        """Listen (a free port when ``port`` is 0)."""
        from aiohttp import web

        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        self.port = await _serve(runner, self.host, self.port)
        self._ports = {self.host: self.port}
        self._listening = asyncio.Lock()
        self._runner = runner

    async def listen(self, host: str) -> int:
        """Listen on ``host`` too, once: a container network's gateway, where containers
        reach this machine (never all addresses). The same port as :attr:`port` when it
        is free there, else another; returned."""
        if self._runner is None or self._listening is None:
            raise GemEvalError("the model endpoint has not been started")
        async with self._listening:
            if host not in self._ports:
                try:
                    self._ports[host] = await _serve(self._runner, host, self.port)
                except OSError:  # the port is taken on that address
                    try:
                        self._ports[host] = await _serve(self._runner, host, 0)
                    except OSError as exc:  # not an address of this machine
                        raise GemEvalError(
                            f"the model endpoint cannot listen on {host}, where containers "
                            f"reach this machine ({exc.strerror or exc}): is the Docker "
                            "engine on another machine?"
                        ) from None
            return self._ports[host]

    def open(self, line: EpisodeLine) -> str:
        """Open a line; its token (the agent's API key)."""
        token = "gem-" + secrets.token_urlsafe(24)
        self._lines[token] = line
        return token

    def close(self, token: str) -> None:
        """Close a line: its token is refused from now on."""
        self._lines.pop(token, None)

    async def aclose(self) -> None:
        self._lines.clear()
        self._ports.clear()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def _line(self, request: web.Request) -> EpisodeLine | None:
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ").strip() or request.headers.get("x-api-key", "")
        return self._lines.get(token)

    async def _models(self, request: web.Request) -> web.StreamResponse:
        from aiohttp import web

        line = self._line(request)
        if line is None:
            return _refused()
        model = {"id": line.model.name, "object": "model", "created": 0, "owned_by": "gem-eval"}
        return web.json_response({"object": "list", "data": [model]})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        from aiohttp import web

        line = self._line(request)
        if line is None:
            return _refused()
        try:
            body = json.loads(await request.read())
            messages, tools, config, stream = wire.read_request(body, line.config)
        except (ValueError, TypeError) as exc:
            return web.json_response(wire.error_body(str(exc)), status=400)
        name = str(body.get("model") or line.model.name)
        if line.failure is not None:  # the episode is ending: the model is not called again
            return _failed(line.failure)
        if line.budget is not None and line.budget.exhausted:
            spent = line.budget.describe()
            line.stop(spent)
            return web.json_response(wire.error_body(spent, "budget_exceeded"), status=429)
        call = Call(messages, tools, config, stream=stream)
        started = time.monotonic()
        line.calls += 1
        try:
            call.output = await line.model.generate(messages, tools, config)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the agent hears it as an API error; the episode records it
            call.error = exc
        call.latency_s = time.monotonic() - started
        if line.budget is not None and call.output is not None and not call.output.replayed:
            line.budget.charge(call.output.usage.cost_usd)
        if line.on_call is not None:
            line.on_call(call)
        error = call.error
        if isinstance(error, ModelCallError) and error.transient and line.stopped is None:
            line.failure = error  # the model client gave up: so does the episode
            line.stop(str(error))
        if call.output is None:
            return _failed(call.error)
        if not stream:
            return web.json_response(wire.completion(call.output, name))
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for event in wire.stream_events(call.output, name, include_usage):
            await response.write(event)
        await response.write_eof()
        return response


async def _serve(runner: web.AppRunner, host: str, port: int) -> int:
    """Serve ``runner``'s app on ``host``:``port`` (0: a free port); the port."""
    from aiohttp import web

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    await web.SockSite(runner, sock).start()
    return int(sock.getsockname()[1])


def _refused() -> web.Response:
    from aiohttp import web

    body = wire.error_body("unknown or expired API key for this endpoint", code="invalid_api_key")
    return web.json_response(body, status=401)


def _failed(error: BaseException | None) -> web.Response:
    """The model's failure as the provider's status and message (a context overflow stays
    a 400 whose text says so: agents such as Terminus-2 summarise on it)."""
    from aiohttp import web

    status = error.status if isinstance(error, ModelCallError) and error.status else 502
    message = str(error) if error is not None else "the model call failed"
    return web.json_response(wire.error_body(message, "api_error"), status=status)
