"""``LocalModel``: a GGUF file served on 127.0.0.1 by llama.cpp, driven like any vLLM server."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from gem_eval.models.base import GenerateConfig, Message, Model, ModelOutput, ToolSchema
from gem_eval.models.chat_api import ChatAPIModel
from gem_eval.models.retry import RetryPolicy

if TYPE_CHECKING:
    from gem_eval.records import TokenPrice  # records imports models (judge)


class LocalModel(Model):
    """``local/gemma3-270m`` (built in) or ``local/path/to/model.gguf``.

    ``start()`` assembles the GGUF if needed, launches the server and waits for it;
    ``aclose()`` stops it. Requests go through ``backend`` (the direct client by
    default, exactly the path a user's vLLM server takes). A llama.cpp server decodes
    one request at a time and keeps the prompt of the last one: the model takes one
    call at a time, and plays one episode at a time (each call then reads only what
    its conversation added since the last).

    Args:
        spec: What follows ``local/``: a built-in name or a path to a ``.gguf`` file.
        backend: ``openai`` (the direct client) or ``litellm``.
        retry: Retries and per-call timeout.
        price: What its tokens cost, when the user gave one (``--price``); else free.
        server_options: Passed to
            :class:`~gem_eval.models.local_server.LocalModelServer`.
    """

    default_concurrency = 1
    max_episodes = 1
    supports_tools = False  # the base Gemma has no tool-call template: use tool_mode="text"

    def __init__(
        self,
        spec: str,
        *,
        backend: str = "openai",
        retry: RetryPolicy | None = None,
        price: TokenPrice | None = None,
        **server_options: Any,
    ) -> None:
        self.spec, self.backend, self.retry, self.price = spec, backend, retry, price
        self.name = f"local/{spec}"
        self.server_options = server_options
        self._server: Any = None
        self._client: ChatAPIModel | None = None
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        async with self._lock:
            if self._client is not None:
                return
            from gem_eval.models.factory import api_model
            from gem_eval.models.local_server import LocalModelServer, resolve_gguf

            gguf = await asyncio.to_thread(resolve_gguf, self.spec)
            server = LocalModelServer(gguf, **self.server_options)
            base_url = await server.start()
            self._server = server
            self._client = api_model(
                f"openai/{server.model_name}",
                base_url=base_url,
                backend=self.backend,
                retry=self.retry,
                concurrency=self.default_concurrency,
                name=self.name,
                price=self.price,
            )

    @property
    def base_url(self) -> str:
        """The local server's ``/v1`` URL, once started."""
        if self._server is None:
            raise RuntimeError("the local model has not been started")
        return str(self._server.base_url)

    async def generate(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        config: GenerateConfig | None = None,
    ) -> ModelOutput:
        if self._client is None:
            await self.start()
        assert self._client is not None
        return await self._client.generate(messages, tools, config)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        if self._server is not None:
            await self._server.stop()
            self._server = None
