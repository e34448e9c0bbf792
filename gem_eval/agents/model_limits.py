"""The run's model's context and output limits, for agents that look them up by name.

An agent program calls the run's model through the run's endpoint, under the name
``openai/<name>`` (an OpenAI-compatible provider: whatever serves it behind the
endpoint). Agents built on litellm (Harbor's Terminus-2) ask litellm's model map for that
name's limits; for a model that is not OpenAI's (``anthropic/claude-sonnet-4-5`` becomes
``openai/claude-sonnet-4-5``) litellm knows none, and Terminus-2 then assumes a context of
1,000,000 tokens, so its proactive summarisation (when fewer than 8,000 tokens are left)
never fires where it would under ``harbor run`` with the real name. gem-eval looks the
real name up in litellm's offline map and hands the agent what it finds, in litellm's own
fields (Terminus-2's ``model_info`` option), so the agent computes the limits Harbor
would. A model litellm does not know gets nothing: the agent keeps its own fallback, as
under Harbor.
"""

from __future__ import annotations

import functools

LIMIT_FIELDS = ("max_input_tokens", "max_output_tokens", "max_tokens")
"""litellm's model-map fields that bound a call: the context (``max_input_tokens``; its
older ``max_tokens`` when that is missing) and the reply (``max_output_tokens``)."""


@functools.lru_cache(maxsize=128)
def model_limits(name: str) -> dict[str, int] | None:
    """The limits litellm's offline model map gives the model ``name`` (a litellm model
    string: ``openai/gpt-4o``, ``anthropic/...``), in its own fields; ``None`` when
    litellm does not know the model, knows no limit of it, or is not installed.

    The first call imports litellm (seconds): call it off the event loop.
    """
    from gem_eval.errors import UserError
    from gem_eval.models.litellm_model import import_litellm  # offline: no map fetched

    try:
        info = import_litellm().get_model_info(name)
    except UserError:  # litellm is not installed: nothing to look up
        return None
    except Exception:  # litellm's own error (and others) for a model it has not mapped
        return None
    limits = {
        field: int(value)
        for field in LIMIT_FIELDS
        if isinstance(value := info.get(field), int | float) and value > 0
    }
    return limits or None
