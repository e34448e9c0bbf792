"""Check a model server before the first episode: can it be reached, does it take the key?

A wrong ``--model-base-url`` or key would otherwise show up only after every episode's
retries ran out. One ``GET {base_url}/models`` (OpenAI-compatible servers answer it:
vLLM, SGLang, llama.cpp, LiteLLM's proxy) tells both, in well under a second.
"""

from __future__ import annotations

from gem_eval.errors import ModelConfigError

TIMEOUT_S = 10.0
_REFUSED = (401, 403)


async def check_server(name: str, base_url: str, api_key: str | None) -> None:
    """Raise when the server at ``base_url`` cannot be reached or refuses ``api_key``.

    Anything else (a slow answer, a server without ``/models``, a 5xx) passes: the
    calls themselves will say, with retries.

    Raises:
        ModelConfigError: Connection refused, unknown host, or 401/403.
    """
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    url = base_url.rstrip("/") + "/models"
    try:
        async with httpx.AsyncClient(timeout=TIMEOUT_S) as client:
            response = await client.get(url, headers=headers)
    except (httpx.ConnectError, httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise ModelConfigError(
            f"model {name!r}: cannot reach the server at {base_url}: {reason} "
            "(check --model-base-url)"
        ) from None
    except httpx.HTTPError:
        return  # slow or odd: not a verdict on the configuration
    if response.status_code in _REFUSED:
        raise ModelConfigError(
            f"model {name!r}: the server at {base_url} refused the API key "
            f"({response.status_code}): name the variable holding it with --api-key-env"
        )
