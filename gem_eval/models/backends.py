"""Which client a model's calls go through: the direct one, or litellm.

* ``openai``: gem-eval's own client for the OpenAI chat-completions wire format
  (:class:`~gem_eval.models.openai_compat.OpenAICompatModel`): plain JSON over pooled
  connections, the fast path. It serves OpenAI itself and every OpenAI-compatible server
  (vLLM, SGLang, llama.cpp, a local model gem-eval starts).
* ``litellm``: every other provider (Anthropic, Gemini, Bedrock ...), through litellm.

:func:`default_backend` picks one from the model's name and base URL; ``--model-backend``
(a models entry's ``backend:``) chooses otherwise. The manifest records the choice, so a
resumed run keeps the client it was started with.
"""

from __future__ import annotations

BACKENDS = ("litellm", "openai")

OPENAI_COMPATIBLE = ("openai/", "hosted_vllm/", "vllm/", "sglang/", "llamacpp/")
"""Provider prefixes that name an OpenAI-compatible server; the rest is the model's name
there (``hosted_vllm/ckpt-1200`` is ``ckpt-1200`` on the server)."""

OTHER_PROVIDERS = (
    "anthropic/",
    "gemini/",
    "vertex_ai/",
    "bedrock/",
    "azure/",
    "mistral/",
    "groq/",
    "deepseek/",
    "together_ai/",
    "openrouter/",
    "xai/",
    "cohere/",
    "ollama/",
    "ollama_chat/",
    "huggingface/",
    "replicate/",
    "fireworks_ai/",
)
"""litellm providers with wire formats or endpoints of their own: they stay on litellm,
with a base URL too (a proxy for that provider)."""

OPENAI_API_BASE = "https://api.openai.com/v1"
"""Where ``openai/NAME`` goes without a base URL (``OPENAI_BASE_URL`` overrides it)."""


def default_backend(name: str, base_url: str | None) -> str:
    """The backend a model gets when none is chosen: ``openai`` (direct) for ``openai/``
    and the other OpenAI-compatible prefixes, for a local model, and for any name served
    from a base URL unless it names another litellm provider; else ``litellm``."""
    if name.startswith(OTHER_PROVIDERS):
        return "litellm"
    if name.startswith((*OPENAI_COMPATIBLE, "local/")) or base_url is not None:
        return "openai"
    return "litellm"


def served_name(name: str) -> str:
    """The model's name on its server: ``name`` without an OpenAI-compatible prefix."""
    return next((name[len(p) :] for p in OPENAI_COMPATIBLE if name.startswith(p)), name)
