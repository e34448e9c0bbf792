"""Which client a model gets when none is chosen: the direct one for OpenAI and every
OpenAI-compatible server, litellm for the other providers; and the direct client's calls
to OpenAI's own API (its key, its token limit, litellm's prices)."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from gem_eval.errors import MissingAPIKeyError
from gem_eval.models import get_model, openai_compat
from gem_eval.models.backends import default_backend
from gem_eval.models.base import GenerateConfig
from gem_eval.models.openai_compat import OpenAICompatModel
from gem_eval.models.pricing import table_price
from gem_eval.records import ModelSpec
from tests.fixtures.openai_server import FakeOpenAIServer


@pytest.mark.parametrize(
    ("name", "base_url", "backend"),
    [
        ("openai/gpt-5", None, "openai"),  # OpenAI's own API
        ("openai/ckpt", "http://gpu-1:8000/v1", "openai"),
        ("hosted_vllm/ckpt-1200", "http://gpu-1:8000/v1", "openai"),
        ("Qwen/Qwen3-8B", "http://gpu-1:8000/v1", "openai"),  # any name at a base URL
        ("local/gemma3-270m", None, "openai"),
        ("anthropic/claude-sonnet-4", None, "litellm"),
        ("anthropic/claude-sonnet-4", "http://proxy/v1", "litellm"),  # its own wire format
        ("ollama/llama3", "http://127.0.0.1:11434", "litellm"),
        ("gemini/gemini-2.5-pro", None, "litellm"),
        ("gpt-4o", None, "litellm"),  # a bare name: litellm knows the provider
    ],
)
def test_the_default_backend(name: str, base_url: str | None, backend: str) -> None:
    assert default_backend(name, base_url) == backend
    assert ModelSpec(name=name, base_url=base_url).backend == backend


def test_a_chosen_backend_is_kept_and_recorded() -> None:
    spec = ModelSpec(name="openai/gpt-5", backend="litellm")
    assert spec.backend == "litellm"
    again = ModelSpec.model_validate_json(spec.model_dump_json())  # as a manifest keeps it
    assert again.backend == "litellm"
    assert ModelSpec(name="openai/gpt-5", backend=None).backend == "openai"


def test_the_direct_client_needs_no_litellm() -> None:
    # A process of its own: another test may have imported litellm in this one.
    code = (
        "import sys; from gem_eval.models import get_model; "
        "m = get_model('openai/gpt-4o', base_url='http://127.0.0.1:1/v1'); "
        "assert type(m).__name__ == 'OpenAICompatModel' and m.model == 'gpt-4o'; "
        "assert m.price is not None and m.price.input > 0; "  # litellm's price, as a file
        "assert 'litellm' not in sys.modules, 'litellm imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_openai_s_own_api_without_a_key_fails_before_any_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    model = get_model("openai/gpt-4o")
    assert isinstance(model, OpenAICompatModel)
    assert model.api_base == "https://api.openai.com/v1"
    with pytest.raises(MissingAPIKeyError, match="OPENAI_API_KEY"):
        asyncio.run(model.start())


def test_openai_s_own_api_is_called_as_openai_asks(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The fixture server plays OpenAI's API: the base URL the direct client treats as it.
    monkeypatch.setattr(openai_compat, "OPENAI_API_BASE", openai_server.base_url)
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model = get_model("openai/gpt-4o")

    async def main() -> object:
        await model.start()
        try:
            return await model.generate(
                [{"role": "user", "content": "hi"}], config=GenerateConfig(max_tokens=32)
            )
        finally:
            await model.aclose()

    output = asyncio.run(main())
    (request,) = openai_server.requests
    assert request.authorization == "Bearer sk-test"
    assert request.body["model"] == "gpt-4o"
    assert request.body["max_completion_tokens"] == 32 and "max_tokens" not in request.body
    # Priced by litellm's map, as the litellm backend prices the same reply.
    price = table_price("openai/gpt-4o")
    assert price is not None and price.known
    usage = output.usage  # type: ignore[attr-defined]
    assert usage.output_tokens > 0
    assert usage.cost_usd == pytest.approx(price.cost(usage.input_tokens, usage.output_tokens))


def test_a_compatible_server_gets_max_tokens_as_given(openai_server: FakeOpenAIServer) -> None:
    model = get_model("hosted_vllm/ckpt", base_url=openai_server.base_url)

    async def main() -> None:
        try:
            await model.generate(
                [{"role": "user", "content": "hi"}], None, GenerateConfig(max_tokens=8)
            )
        finally:
            await model.aclose()

    asyncio.run(main())
    (request,) = openai_server.requests
    assert request.body["max_tokens"] == 8 and request.body["model"] == "ckpt"
