"""Token ids and log-probabilities of a model call, for reinforcement learning.

A policy-gradient step needs, for each completion, the tokens the policy sampled and
their log-probabilities under it, and the prompt's tokens. OpenAI-compatible servers
return them on request:

* ``"logprobs": true`` -- ``choices[0].logprobs.content``: one ``{token, logprob, ...}``
  per completion token (OpenAI, vLLM, SGLang, llama.cpp's server).
* ``"return_token_ids": true`` -- vLLM (0.10.2 and later): ``prompt_token_ids`` at the top
  of the response and ``choices[0].token_ids``. Servers that do not know the field
  ignore it (vLLM's older versions, llama.cpp) or refuse it (OpenAI's API: ask for
  tokens only from your own server).
* With vLLM's ``--return-tokens-as-token-ids`` each ``logprobs`` token reads
  ``token_id:123``; ids are taken from there when ``token_ids`` is absent.

:func:`read_tokens` takes whichever of these a reply has; missing parts stay ``None``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

TOKEN_REQUEST: dict[str, Any] = {"logprobs": True, "return_token_ids": True}
"""The request fields that ask a server for :class:`TokenTrace` data."""

_ID_PREFIX = "token_id:"


class TokenTrace(BaseModel):
    """The tokens of one model call (each ``None`` when the server did not return it).

    Attributes:
        prompt_ids: The prompt's token ids, as the server's chat template rendered it.
        completion_ids: The sampled tokens' ids.
        logprobs: The log-probability of each sampled token, aligned with
            ``completion_ids`` when both are present.
    """

    prompt_ids: list[int] | None = None
    completion_ids: list[int] | None = None
    logprobs: list[float] | None = None


def read_tokens(response: Any, choice: Any) -> TokenTrace | None:
    """The token data of a chat-completion reply (JSON dicts, or the objects of an SDK
    that keeps the fields); ``None`` when it has none."""
    prompt_ids = _ints(_field(response, "prompt_token_ids"))
    completion_ids = _ints(_field(choice, "token_ids"))
    logprobs: list[float] | None = None
    entries = _field(_field(choice, "logprobs"), "content")
    if isinstance(entries, list) and entries:
        values = [_field(e, "logprob") for e in entries]
        if all(isinstance(v, int | float) for v in values):
            logprobs = [float(v) for v in values]
        if completion_ids is None:
            completion_ids = _ids_in_tokens([_field(e, "token") for e in entries])
    if prompt_ids is None and completion_ids is None and logprobs is None:
        return None
    return TokenTrace(prompt_ids=prompt_ids, completion_ids=completion_ids, logprobs=logprobs)


def _field(obj: Any, name: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def _ints(value: Any) -> list[int] | None:
    if isinstance(value, list) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        return list(value)
    return None


def _ids_in_tokens(tokens: list[Any]) -> list[int] | None:
    """Ids from ``token_id:123`` tokens (vLLM's ``--return-tokens-as-token-ids``)."""
    ids = []
    for token in tokens:
        if not isinstance(token, str) or not token.startswith(_ID_PREFIX):
            return None
        digits = token[len(_ID_PREFIX) :]
        if not digits.isdigit():
            return None
        ids.append(int(digits))
    return ids
