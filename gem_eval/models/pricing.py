"""What a model's tokens cost, before any call: litellm's price map, read offline.

The run records the cost each reply reports (see
:class:`~gem_eval.models.litellm_model.LiteLLMModel`); an estimate has no reply yet, so
it asks litellm's map for the model's prices per token. litellm is imported only here,
and only when a price is asked for (the import takes seconds). The direct client prices
its replies from the same map, read as the JSON file litellm ships (:func:`table_price`),
without importing litellm.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gem_eval.records import ModelSpec, TokenPrice

_TABLE = "model_prices_and_context_window_backup.json"
"""litellm's price map, as its package ships it."""

_LOCAL_PREFIXES = ("local/",)
_REFERENCE = ("oracle", "noop")


@dataclass(frozen=True)
class Price:
    """USD per token, or why there is none.

    Attributes:
        input_usd: Per input (prompt) token; ``None``: unknown.
        output_usd: Per output (completion) token; ``None``: unknown.
        note: Where the price comes from, or why it is unknown (one line).
        max_output_tokens: The most one reply can hold, when litellm knows it.
        max_input_tokens: The most one call can read (the context), when known.
        counted_free: No price is known, and the run counts the calls as $0 (a
            self-hosted model, the direct client): not free, only unpriced.
    """

    input_usd: float | None
    output_usd: float | None
    note: str
    max_output_tokens: int | None = None
    max_input_tokens: int | None = None
    counted_free: bool = False

    @property
    def known(self) -> bool:
        return self.input_usd is not None and self.output_usd is not None

    def cost(self, input_tokens: float, output_tokens: float) -> float | None:
        """USD for these tokens; ``None`` when the price is unknown."""
        if self.input_usd is None or self.output_usd is None:
            return None
        return input_tokens * self.input_usd + output_tokens * self.output_usd


FREE_LOCAL = Price(0.0, 0.0, "runs on this machine: no charge")
FREE_REFERENCE = Price(0.0, 0.0, "a reference agent: no model, no charge")


def price_of(model: ModelSpec) -> Price:
    """The price per token the run will be charged for ``model``.

    * ``oracle`` / ``noop``: free.
    * A price the user gave (``--price``, a models entry's ``price:``): that, with
      litellm's token limits when it knows the model.
    * ``local/...``: free.
    * Otherwise litellm's price for the model string, as the run's replies are priced
      (also with a base URL: litellm prices by name; the direct client by the same map,
      :func:`table_price`). A model litellm does not know is free when served from a
      base URL (a self-hosted server), else unknown.
    """
    if model.name in _REFERENCE:
        return FREE_REFERENCE
    given = model.price
    if given is not None:
        limits = table_price(model.name) if model.backend == "openai" else litellm_price(model.name)
        return Price(
            given.input / 1e6,
            given.output / 1e6,
            f"your price: ${given.input:g}/${given.output:g} per million input/output tokens",
            max_output_tokens=limits.max_output_tokens if limits else None,
            max_input_tokens=limits.max_input_tokens if limits else None,
        )
    if model.name.startswith(_LOCAL_PREFIXES):
        return FREE_LOCAL
    found = table_price(model.name) if model.backend == "openai" else litellm_price(model.name)
    if found is not None:
        where = " (served from its base URL)" if model.base_url else ""
        return replace(found, note=f"litellm's price for {model.name}{where}")
    if model.base_url is not None:
        return Price(
            0.0,
            0.0,
            f"no litellm price for {model.name}: self-hosted, counted as $0",
            counted_free=True,
        )
    return Price(None, None, f"no litellm price for {model.name}: cost unknown")


def budget_blind_spots(models: Sequence[ModelSpec], max_cost_usd: float | None) -> list[str]:
    """One warning per model whose calls a ``--max-cost`` cap cannot see: no price is
    known, so they count as $0 (give one with ``--price`` or a models entry's ``price:``)."""
    if max_cost_usd is None:
        return []
    lines = []
    for model in models:
        price = price_of(model)
        if price.known and not price.counted_free:
            continue
        lines.append(
            f"--max-cost counts priced calls only: model {model.name} has no price "
            f"({price.note}); give one with --price {model.name}=IN,OUT (USD per million "
            "input/output tokens)"
        )
    return lines


def litellm_price(name: str) -> Price | None:
    """litellm's prices (and token limits) for ``name``; ``None`` if it has no price."""
    from gem_eval.models.litellm_model import import_litellm

    try:
        info = import_litellm().get_model_info(name)
    except Exception:  # litellm raises its own error (and others) for an unmapped model
        return None
    prices = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if prices[0] is None or prices[1] is None:
        return None
    return Price(
        float(prices[0]),
        float(prices[1]),
        f"litellm's price for {name}",
        max_output_tokens=_positive(info.get("max_output_tokens")),
        max_input_tokens=_positive(info.get("max_input_tokens")),
    )


def table_price(name: str) -> Price | None:
    """The price litellm's map gives ``name`` (``openai/gpt-4o`` or ``gpt-4o``), read
    from the file litellm ships, without importing litellm; ``None``: no price."""
    table = _price_table()
    for key in (name, name.removeprefix("openai/")):
        info = table.get(key)
        if not isinstance(info, dict) or (key != name and info.get("litellm_provider") != "openai"):
            continue
        prices = info.get("input_cost_per_token"), info.get("output_cost_per_token")
        if not all(isinstance(p, int | float) for p in prices):
            continue
        return Price(
            float(prices[0]),  # type: ignore[arg-type]
            float(prices[1]),  # type: ignore[arg-type]
            f"litellm's price for {name}",
            max_output_tokens=_positive(info.get("max_output_tokens")),
            max_input_tokens=_positive(info.get("max_input_tokens")),
        )
    return None


def table_token_price(name: str) -> TokenPrice | None:
    """:func:`table_price` as the direct client charges it (USD per million tokens)."""
    found = table_price(name)
    if found is None or found.input_usd is None or found.output_usd is None:
        return None
    return TokenPrice(input=found.input_usd * 1e6, output=found.output_usd * 1e6)


@functools.lru_cache(maxsize=1)
def _price_table() -> dict[str, Any]:
    spec = importlib.util.find_spec("litellm")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return {}
    path = Path(next(iter(spec.submodule_search_locations))) / _TABLE
    try:
        table = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return table if isinstance(table, dict) else {}


def _positive(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) and value > 0 else None
