"""A price the user gives (``--price``, a models entry's ``price:``): what the replies
cost, what the estimate shows, and the models a ``--max-cost`` cap cannot see."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import ValidationError

from gem_eval.models import get_model
from gem_eval.models.base import Message
from gem_eval.models.chat_api import ChatAPIModel
from gem_eval.models.pricing import budget_blind_spots, price_of
from gem_eval.records import ModelSpec, TokenPrice
from tests.fixtures.openai_server import FakeOpenAIServer, Reply

PRICE = TokenPrice(input=1000, output=2000)  # USD per million: big enough to see


@pytest.mark.parametrize("backend", ["litellm", "openai"])
def test_a_given_price_makes_each_reply_s_cost(
    openai_server: FakeOpenAIServer, backend: str
) -> None:
    usage = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    openai_server.enqueue(Reply("hello", usage=usage))
    # openai/fake: litellm has no price for it; the direct client never records one.
    model = get_model("openai/fake", base_url=openai_server.base_url, backend=backend, price=PRICE)
    assert isinstance(model, ChatAPIModel)

    async def call() -> tuple[int, int, float | None]:
        async with model:
            messages: list[Message] = [{"role": "user", "content": "hi"}]
            usage = (await model.generate(messages)).usage
            return usage.input_tokens, usage.output_tokens, usage.cost_usd

    read, written, cost = asyncio.run(call())
    assert (read, written) == (100, 20)
    assert cost == pytest.approx((100 * 1000 + 20 * 2000) / 1e6)


def test_the_estimate_uses_a_given_price_over_litellm_s() -> None:
    mine = price_of(ModelSpec(name="hosted_vllm/ckpt", backend="openai", base_url="http://h",
                              price=PRICE))  # fmt: skip
    assert mine.cost(1e6, 1e6) == pytest.approx(3000.0) and not mine.counted_free
    assert mine.note == "your price: $1000/$2000 per million input/output tokens"
    over = price_of(ModelSpec(name="openai/gpt-4o-mini", price=PRICE))
    assert over.cost(1e6, 0) == pytest.approx(1000.0)
    assert over.max_output_tokens  # litellm's limits kept for the bounds


def test_models_a_budget_cannot_see_are_named() -> None:
    models = [
        ModelSpec(name="hosted_vllm/a", backend="openai", base_url="http://h"),  # counted $0
        ModelSpec(name="hosted_vllm/b", backend="openai", base_url="http://h", price=PRICE),
        ModelSpec(name="oracle"),
        ModelSpec(name="openai/no-such-model-anywhere"),  # unknown
    ]
    assert budget_blind_spots(models, None) == []
    lines = budget_blind_spots(models, 5.0)
    assert [line.split(" has no price")[0] for line in lines] == [
        "--max-cost counts priced calls only: model hosted_vllm/a",
        "--max-cost counts priced calls only: model openai/no-such-model-anywhere",
    ]
    assert "give one with --price hosted_vllm/a=IN,OUT" in lines[0]


@pytest.mark.parametrize("values", [(-1, 2), (1, float("nan")), (float("inf"), 1)])
def test_a_price_is_two_finite_numbers_of_at_least_zero(values: tuple[float, float]) -> None:
    with pytest.raises(ValidationError):
        TokenPrice(input=values[0], output=values[1])
