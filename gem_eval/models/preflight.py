"""Check a model server before the first episode: can it be reached, does it take the key?

A wrong ``--model-base-url`` or key would otherwise show up only after every episode's
retries ran out. One ``GET {base_url}/models`` (OpenAI-compatible servers answer it:
vLLM, SGLang, llama.cpp, LiteLLM's proxy) tells both, in well under a second. It uses
the standard library in a worker thread: no HTTP client is imported for one request.
"""

from __future__ import annotations

import asyncio

from gem_eval.errors import ModelConfigError

TIMEOUT_S = 10.0
_REFUSED = (401, 403)


async def check_server(name: str, base_url: str, api_key: str | None) -> None:
    """Raise when the server at ``base_url`` cannot be reached or refuses ``api_key``.

    Anything else (a slow answer, a server without ``/models``, a 5xx) passes: the
    calls themselves will say, with retries.

    Raises:
        ModelConfigError: Connection refused, unknown host, a URL that is not HTTP, or
            401/403.
    """
    problem = await asyncio.to_thread(_probe, base_url, api_key)
    if problem is None:
        return
    if problem in _REFUSED:
        raise ModelConfigError(
            f"model {name!r}: the server at {base_url} refused the API key "
            f"({problem}): name the variable holding it with --api-key-env"
        )
    raise ModelConfigError(
        f"model {name!r}: cannot reach the server at {base_url}: {problem} (check --model-base-url)"
    )


def _probe(base_url: str, api_key: str | None) -> int | str | None:
    """The refusing status, the reason the server cannot be reached, or ``None``."""
    import socket
    import urllib.error
    import urllib.request

    url = base_url.rstrip("/") + "/models"
    if not url.startswith(("http://", "https://")):
        return f"{base_url!r} is not an http(s) URL"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    request = urllib.request.Request(url, headers=headers)
    try:  # proxies from the environment (and no_proxy), as the model clients take them
        with urllib.request.urlopen(request, timeout=TIMEOUT_S):
            return None
    except urllib.error.HTTPError as exc:
        return exc.code if exc.code in _REFUSED else None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, TimeoutError | socket.timeout):
            return None  # slow: not a verdict on the configuration
        return " ".join(str(reason).split()) or type(reason).__name__
    except (TimeoutError, OSError):
        return None
