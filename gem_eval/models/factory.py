"""``get_model``: a model from the string a user types after ``--model``."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from gem_eval.errors import MissingAPIKeyError, UserError
from gem_eval.models.base import Model
from gem_eval.models.chat_api import ChatAPIModel
from gem_eval.models.retry import RetryPolicy

if TYPE_CHECKING:
    from gem_eval.records import TokenPrice  # records imports models (judge)

from gem_eval.models.backends import (
    BACKENDS,
    OPENAI_API_BASE,
    default_backend,
    served_name,
)

# The variable a server's key is read from when --api-key-env is not given, by prefix.
_KEY_VARIABLES = {"hosted_vllm/": "HOSTED_VLLM_API_KEY", "openai/": "OPENAI_API_KEY"}


def api_key_from_env(spec: str, base_url: str | None, api_key_env: str | None) -> str | None:
    """The API key for ``spec``, read from the environment (never from the command line).

    Args:
        spec: The model string.
        base_url: The server's base URL; without one, the provider's own variable
            (which litellm reads itself) applies and ``None`` is returned.
        api_key_env: The variable named by ``--api-key-env``; it must be set.

    Returns:
        The key, or ``None`` to send no key of our own (a local server started without
        ``--api-key`` accepts any).

    Raises:
        MissingAPIKeyError: ``api_key_env`` names a variable that is not set.
    """
    if api_key_env is not None:
        value = os.environ.get(api_key_env)
        if not value:
            raise MissingAPIKeyError(
                f"model {spec!r}: --api-key-env {api_key_env} is not set in the environment"
            )
        return value
    if base_url is None:
        return None
    variable = next((v for p, v in _KEY_VARIABLES.items() if spec.startswith(p)), None)
    return os.environ.get(variable) or None if variable else None


def get_model(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    backend: str | None = None,
    retry: RetryPolicy | None = None,
    concurrency: int | None = None,
    max_concurrency: int = 100,
    price: TokenPrice | None = None,
) -> Model:
    """Build the model ``spec`` names.

    * ``oracle`` / ``noop``: the reference agents of :mod:`gem_eval.models.reference`
      (apply the task's reference solution / do nothing).
    * ``local/gemma3-270m`` or ``local/path/to/model.gguf``: a llama.cpp server that
      gem-eval starts and stops.
    * anything else: a litellm model string (``openai/gpt-5``, ``anthropic/...``,
      ``hosted_vllm/NAME`` with ``base_url`` ...).

    Args:
        spec: The model string.
        base_url: An OpenAI-compatible server's base URL (vLLM, SGLang, Ollama ...).
        api_key: Overrides the provider's environment variable.
        backend: ``openai``: the direct client (OpenAI and OpenAI-compatible servers,
            less CPU per call), or ``litellm`` (every provider); ``None``: as
            :func:`~gem_eval.models.backends.default_backend` picks.
        retry: Retries and per-call timeout.
        concurrency: Initial connection limit (adapts to 429s).
        max_concurrency: The most the limit grows to.
        price: What its tokens cost (``--price``): the replies' ``cost_usd``.
    """
    from gem_eval.models.reference import REFERENCE_MODELS, reference_model

    if spec in REFERENCE_MODELS:
        return reference_model(spec)
    backend = backend or default_backend(spec, base_url)
    if backend not in BACKENDS:
        raise UserError(f"unknown model backend {backend!r}: choose {' or '.join(BACKENDS)}")
    if spec.startswith("local/"):
        from gem_eval.models.local import LocalModel

        path = spec.removeprefix("local/")
        if not path:
            raise UserError("--model local/ needs a name or a .gguf path, e.g. local/gemma3-270m")
        return LocalModel(path, backend=backend, retry=retry, price=price)
    return api_model(
        spec,
        base_url=base_url,
        api_key=api_key,
        backend=backend,
        retry=retry,
        concurrency=concurrency,
        max_concurrency=max_concurrency,
        price=price,
    )


def api_model(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    backend: str = "openai",
    retry: RetryPolicy | None = None,
    concurrency: int | None = None,
    max_concurrency: int = 100,
    name: str | None = None,
    price: TokenPrice | None = None,
) -> ChatAPIModel:
    """A model behind an HTTP chat API, through litellm or the direct client.

    The direct client sends ``openai/NAME`` without a base URL to OpenAI's API
    (``OPENAI_BASE_URL`` or :data:`~gem_eval.models.backends.OPENAI_API_BASE`) with
    ``OPENAI_API_KEY``, as litellm and the ``openai`` SDK do."""
    if backend == "openai":
        from gem_eval.models.openai_compat import OpenAICompatModel

        if base_url is None and spec.startswith("openai/"):
            base_url = os.environ.get("OPENAI_BASE_URL") or OPENAI_API_BASE
            api_key = api_key or os.environ.get("OPENAI_API_KEY")
        if base_url is None:
            raise UserError(
                f"model {spec!r} is served by a server of your own: give --model-base-url "
                "(its /v1 URL)"
            )
        if price is None:  # litellm's price by name, as the litellm backend charges
            from gem_eval.models.pricing import table_token_price

            price = table_token_price(spec)
        return OpenAICompatModel(
            served_name(spec),
            api_base=base_url,
            api_key=api_key,
            retry=retry,
            concurrency=concurrency,
            max_concurrency=max_concurrency,
            name=name or spec,
            price=price,
        )
    from gem_eval.models.litellm_model import LiteLLMModel

    return LiteLLMModel(
        spec,
        api_base=base_url,
        api_key=api_key,
        retry=retry,
        concurrency=concurrency,
        max_concurrency=max_concurrency,
        name=name,
        price=price,
    )
