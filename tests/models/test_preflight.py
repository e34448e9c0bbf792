"""What is known about a model before a run: a name litellm cannot route is refused
before anything is written (it used to fail every first call, 6 s into a run)."""

from __future__ import annotations

import asyncio

import pytest

from gem_eval.errors import UserError
from gem_eval.models.preflight import ROUTED_PREFIXES, check_models
from gem_eval.records import ModelSpec


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        (ModelSpec(name="stub"), "prefix it (openai/stub, anthropic/..."),
        (ModelSpec(name="foo/ckpt"), "hosted_vllm/ckpt with --model-base-url"),
        (
            ModelSpec(name="ckpt-1200", base_url="http://127.0.0.1:1/v1", backend="litellm"),
            "hosted_vllm/ckpt-1200 or openai/ckpt-1200 for the server at http://127.0.0.1:1/v1",
        ),
    ],
)
def test_a_name_without_a_provider_is_refused(spec: ModelSpec, said: str) -> None:
    with pytest.raises(UserError, match="litellm cannot tell its provider") as caught:
        asyncio.run(check_models([spec]))
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_names_litellm_routes_pass() -> None:
    # gpt-4o: routed by litellm's own lists; the direct client takes any name.
    specs = [
        ModelSpec(name="gpt-4o", api_key_env=None),
        ModelSpec(name="ckpt", backend="openai", base_url="http://127.0.0.1:1/v1"),
        ModelSpec(name="oracle"),
    ]
    with pytest.raises(UserError, match="cannot reach the server"):  # the next check
        asyncio.run(check_models(specs))
    asyncio.run(check_models(specs[:1] + specs[2:]))


def test_the_prefixes_taken_without_asking_are_litellm_providers() -> None:
    from gem_eval.models.litellm_model import import_litellm

    litellm = import_litellm()
    for prefix in ROUTED_PREFIXES:
        assert litellm.get_llm_provider(model=f"{prefix}x")[1] == prefix.rstrip("/")
