"""Check a model server before the first episode: can it be reached, does it take the key?

A wrong ``--model-base-url`` or key would otherwise show up only after every episode's
retries ran out. One ``GET {base_url}/models`` (OpenAI-compatible servers answer it:
vLLM, SGLang, llama.cpp, LiteLLM's proxy) tells both, in well under a second. It uses
the standard library in a worker thread: no HTTP client is imported for one request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gem_eval.errors import MissingAPIKeyError, ModelConfigError, UserError

if TYPE_CHECKING:
    from gem_eval.records import ModelSpec

TIMEOUT_S = 10.0
_REFUSED = (401, 403)


async def check_server(name: str, base_url: str, api_key: str | None) -> list[str] | None:
    """Raise when the server at ``base_url`` cannot be reached or refuses ``api_key``;
    the model ids it says it serves (``None``: it did not say).

    Anything else (a slow answer, a server without ``/models``, a 5xx) passes: the
    calls themselves will say, with retries.

    Raises:
        ModelConfigError: Connection refused, unknown host, a URL that is not HTTP, or
            401/403.
    """
    problem, served = await asyncio.to_thread(_probe, base_url, api_key)
    if problem is None:
        return served
    if problem in _REFUSED:
        raise ModelConfigError(
            f"model {name!r}: the server at {base_url} refused the API key "
            f"({problem}): name the variable holding it with --api-key-env"
        )
    raise ModelConfigError(
        f"model {name!r}: cannot reach the server at {base_url}: {problem} (check --model-base-url)"
    )


def _probe(base_url: str, api_key: str | None) -> tuple[int | str | None, list[str] | None]:
    """The refusing status or the reason the server cannot be reached (``None``: none),
    and the model ids its ``/models`` lists (``None``: no readable list)."""
    import json
    import socket
    import urllib.error
    import urllib.request

    url = base_url.rstrip("/") + "/models"
    if not url.startswith(("http://", "https://")):
        return f"{base_url!r} is not an http(s) URL", None
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    request = urllib.request.Request(url, headers=headers)
    try:  # proxies from the environment (and no_proxy), as the model clients take them
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            body = response.read(1_000_000)
    except urllib.error.HTTPError as exc:
        return (exc.code if exc.code in _REFUSED else None), None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, TimeoutError | socket.timeout):
            return None, None  # slow: not a verdict on the configuration
        return " ".join(str(reason).split()) or type(reason).__name__, None
    except (TimeoutError, OSError):
        return None, None
    try:
        data = json.loads(body)
        return None, [str(m["id"]) for m in data["data"]]
    except (ValueError, KeyError, TypeError):
        return None, None


PROVIDER_KEYS = {
    "openai/": "OPENAI_API_KEY",
    "anthropic/": "ANTHROPIC_API_KEY",
    "gemini/": "GEMINI_API_KEY",
    "mistral/": "MISTRAL_API_KEY",
    "groq/": "GROQ_API_KEY",
    "deepseek/": "DEEPSEEK_API_KEY",
    "together_ai/": "TOGETHERAI_API_KEY",
    "openrouter/": "OPENROUTER_API_KEY",
    "xai/": "XAI_API_KEY",
}
"""Providers whose calls need a key from a known variable when no server URL is given."""


ROUTED_PREFIXES = (*PROVIDER_KEYS, "hosted_vllm/", "vllm/", "ollama/", "ollama_chat/")
"""Prefixes litellm routes by (checked in the tests): a name with one needs no import
of litellm (seconds) to know its provider."""


async def check_models(specs: Sequence[ModelSpec], *, cache: bool = False) -> list[str]:
    """Check, before a run is created, that each model can be used as configured: its
    backend and extras are installed, its weights found, its key set, its server
    reachable and taking the key. Nothing is started.

    Args:
        specs: The run's models (and its judges').
        cache: The run takes replies from the response cache: a key or server problem is
            then a warning (a re-run served from the cache needs neither).

    Returns:
        The warnings (one line each).

    Raises:
        UserError: A model that cannot be used (one line naming it).
    """
    import importlib.util

    from gem_eval.models.backends import BACKENDS
    from gem_eval.models.factory import api_key_from_env
    from gem_eval.models.reference import REFERENCE_MODELS

    warnings: list[str] = []
    for spec in specs:
        if spec.name in REFERENCE_MODELS:
            continue
        if spec.backend not in BACKENDS:
            raise UserError(
                f"model {spec.name!r}: unknown backend {spec.backend!r}: choose "
                f"{' or '.join(BACKENDS)}"
            )
        if spec.name.startswith("local/"):
            await asyncio.to_thread(_check_local, spec.name.removeprefix("local/"))
            continue
        if spec.backend == "litellm" and importlib.util.find_spec("litellm") is None:
            raise UserError(
                f"model {spec.name!r}: litellm is not installed (gem-eval depends on it: "
                "pip install --force-reinstall gem-eval)"
            )
        if spec.backend == "litellm" and not spec.name.startswith(ROUTED_PREFIXES):
            await asyncio.to_thread(_check_provider, spec)
        own_server = not spec.name.startswith("openai/")  # openai/NAME: OpenAI's own API
        if spec.backend == "openai" and spec.base_url is None and own_server:
            raise UserError(
                f"model {spec.name!r} is served by a server of your own: give "
                "--model-base-url (its /v1 URL)"
            )
        try:
            key = api_key_from_env(spec.name, spec.base_url, spec.api_key_env)
            if spec.base_url is None:
                if spec.api_key_env is None:
                    _check_provider_key(spec.name)
            else:
                served = await check_server(spec.name, spec.base_url, key)
                line = _not_served(spec, served)
                if line is not None:
                    warnings.append(line)
        except UserError as exc:
            if not cache:
                raise
            warnings.append(
                f"{exc}; going on with the response cache (a reply it lacks fails its episode)"
            )
    return warnings


def _not_served(spec: ModelSpec, served: list[str] | None) -> str | None:
    """A warning when the server lists the models it serves and this one is not among
    them (two checkpoints' URLs swapped). Not an error: some servers (llama.cpp) list a
    file name and answer to any model name."""
    if not served:
        return None
    asked = spec.name.split("/", 1)[1] if "/" in spec.name else spec.name
    if asked in served or spec.name in served:
        return None
    listed = ", ".join(served[:3]) + (" ..." if len(served) > 3 else "")
    return (
        f"model {spec.name!r}: the server at {spec.base_url} lists {listed}, not {asked} "
        "(a server that serves any name answers anyway; check --model-base-url)"
    )


def _check_provider(spec: ModelSpec) -> None:
    """Refuse a name litellm would not route (``stub``, ``my-checkpoint``): its calls
    would all fail with "LLM Provider NOT provided". Asks litellm itself, as its calls
    will (importing it takes seconds, which its first call would take anyway)."""
    from gem_eval.models.litellm_model import import_litellm

    try:
        import_litellm().get_llm_provider(model=spec.name, api_base=spec.base_url)
    except Exception:  # litellm's BadRequestError, or a name it cannot even split
        served = spec.name.rsplit("/", 1)[-1] or "NAME"
        server = (
            f"hosted_vllm/{served} or openai/{served} for the server at {spec.base_url}"
            if spec.base_url
            else f"openai/{served}, anthropic/..., gemini/..., or hosted_vllm/{served} "
            "with --model-base-url for a server of your own"
        )
        raise UserError(
            f"model {spec.name!r}: litellm cannot tell its provider from the name: "
            f"prefix it ({server}; https://docs.litellm.ai/docs/providers)"
        ) from None


def _check_local(spec: str) -> None:
    from gem_eval.models.local_server import LLAMA_CPP_HINT, _llama_cpp_installed, resolve_gguf

    if not _llama_cpp_installed():
        raise UserError(f"model 'local/{spec}': {LLAMA_CPP_HINT}")
    resolve_gguf(spec)


def _check_provider_key(name: str) -> None:
    import os

    variable = next((v for p, v in PROVIDER_KEYS.items() if name.startswith(p)), None)
    if variable is not None and not os.environ.get(variable):
        raise MissingAPIKeyError(
            f"model {name!r}: {variable} is not set (or name the variable holding the key "
            "with --api-key-env, or give --model-base-url for a server of your own)"
        )
