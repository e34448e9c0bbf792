"""Token ids and log-probabilities: asked for only on request, read from vLLM's shapes,
through both backends against the fixture server."""

from __future__ import annotations

from typing import Any

import pytest

from gem_eval.models import GenerateConfig
from gem_eval.models.tokens import TokenTrace, read_tokens
from tests.fixtures import _chat_wire as wire
from tests.fixtures.openai_server import FakeOpenAIServer, Reply
from tests.models.test_chat_models import model_for, play


def test_read_tokens_takes_vllm_ids_and_openai_logprobs() -> None:
    response = {"prompt_token_ids": [5, 6, 7]}
    choice = {
        "token_ids": [11, 12],
        "logprobs": {"content": [{"token": "a", "logprob": -0.5}, {"token": "b", "logprob": 0}]},
    }
    assert read_tokens(response, choice) == TokenTrace(
        prompt_ids=[5, 6, 7], completion_ids=[11, 12], logprobs=[-0.5, 0.0]
    )


def test_ids_come_from_token_id_strings_when_the_server_sends_no_token_ids() -> None:
    entries = [{"token": "token_id:42", "logprob": -1.0}, {"token": "token_id:7", "logprob": -2.0}]
    trace = read_tokens({}, {"logprobs": {"content": entries}})
    assert trace == TokenTrace(completion_ids=[42, 7], logprobs=[-1.0, -2.0])
    plain = read_tokens({}, {"logprobs": {"content": [{"token": "hi", "logprob": -1.0}]}})
    assert plain == TokenTrace(logprobs=[-1.0])  # text tokens: no ids to take


@pytest.mark.parametrize(
    "choice",
    [{}, {"logprobs": None}, {"token_ids": ["x"]}, {"token_ids": [True]}, {"logprobs": {}}],
)
def test_a_reply_without_token_data_has_none(choice: dict[str, Any]) -> None:
    assert read_tokens({"prompt_token_ids": None}, choice) is None


@pytest.mark.parametrize("backend", ["litellm", "openai"])
def test_tokens_are_asked_for_and_read_only_on_request(
    openai_server: FakeOpenAIServer, backend: str
) -> None:
    openai_server.enqueue(Reply("\\boxed{7}"), Reply("\\boxed{7}"))
    plain = play(model_for(openai_server, backend))
    asked = play(model_for(openai_server, backend), config=GenerateConfig(return_tokens=True))
    first, second = (r.body for r in openai_server.requests)
    assert "logprobs" not in first and "return_token_ids" not in first
    assert plain.steps[0].output.tokens is None
    assert second["logprobs"] is True and second["return_token_ids"] is True
    tokens = asked.steps[0].output.tokens
    assert tokens is not None
    expected, usage = wire.fake_tokens(second, "\\boxed{7}")
    assert tokens.completion_ids == expected["token_ids"] and tokens.completion_ids[-1] == 0
    assert tokens.prompt_ids == expected["prompt_token_ids"] and tokens.prompt_ids
    assert tokens.logprobs == pytest.approx(
        [-0.01 * (i + 1) for i in range(len(tokens.completion_ids))]
    )
    assert asked.steps[0].output.usage.output_tokens == usage["completion_tokens"]
