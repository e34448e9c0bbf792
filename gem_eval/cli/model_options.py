"""Which model each connection option belongs to: ``--model-base-url``, ``--api-key-env``
and ``--model-backend`` given after a ``--model`` apply to that model; given before the
first ``--model``, to every model.

Click hands a command its options by name, not in the order they were typed, so
:class:`OrderedCommand` keeps that order (in ``ctx.meta``) for :func:`model_choices`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperCommand

from gem_eval.errors import UserError

if TYPE_CHECKING:
    from gem_eval.runner.request import ModelChoice

ORDER_KEY = "gem_eval.option_order"

MODEL_OPTION = "model"
PER_MODEL_OPTIONS = {
    "model_base_url": ("base_url", "--model-base-url"),
    "api_key_env": ("api_key_env", "--api-key-env"),
    "model_backend": ("backend", "--model-backend"),
}
"""Command parameters that belong to the ``--model`` before them: their ModelSpec field
and their flag."""

ModelBaseUrls = Annotated[
    list[str] | None,
    typer.Option(
        "--model-base-url",
        metavar="URL",
        help="Base URL of an OpenAI-compatible server (vLLM, SGLang ...). After a --model: "
        "that model's; before the first --model: every model's.",
    ),
]
ApiKeyEnvs = Annotated[
    list[str] | None,
    typer.Option(
        "--api-key-env",
        metavar="NAME",
        help="The environment variable holding the API key (its name: keys are never "
        "given on the command line). After a --model: that model's; before the first: "
        "every model's. Default: the provider's usual variable (OPENAI_API_KEY, "
        "HOSTED_VLLM_API_KEY ...).",
    ),
]
ModelBackends = Annotated[
    list[str] | None,
    typer.Option(
        "--model-backend",
        metavar="NAME",
        help="litellm, or openai (the direct client, for compatible servers). After a "
        "--model: that model's; before the first: every model's.  [default: litellm]",
    ),
]


class OrderedCommand(TyperCommand):
    """A Typer command that also keeps the order in which ``--model`` and the per-model
    options were given (``ctx.meta[ORDER_KEY]``: ``(parameter name, value)`` pairs)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # a click Context
        parser = self.make_parser(ctx)
        try:
            opts, _, order = parser.parse_args(args=list(args))
        except Exception:  # a usage error: the real parse below reports it
            opts, order = {}, []
        taken: dict[str, int] = {}
        seen: list[tuple[str, Any]] = []
        for param in order:
            name = param.name or ""
            if name != MODEL_OPTION and name not in PER_MODEL_OPTIONS:
                continue
            values = opts.get(name)
            index = taken.get(name, 0)
            taken[name] = index + 1
            value = values[index] if isinstance(values, list) else values
            seen.append((name, value))
        ctx.meta[ORDER_KEY] = seen
        return super().parse_args(ctx, args)


def model_choices(
    order: Sequence[tuple[str, Any]], warn: Callable[[str], None] | None = None
) -> tuple[dict[str, Any], list[ModelChoice]]:
    """The settings for every model, and each ``--model`` with its own settings.

    Args:
        order: ``(parameter name, value)`` in the order given (:class:`OrderedCommand`).
        warn: Hears a setting given only after the last of several models (which reads
            like one for all of them, as it did before settings belonged to a model).

    Raises:
        UserError: One option given twice for one model (or twice before the first
            ``--model``): which value was meant cannot be told.
    """
    from gem_eval.runner.request import ModelChoice

    shared: dict[str, Any] = {}
    choices: list[tuple[str, dict[str, Any]]] = []
    for name, value in order:
        if name == MODEL_OPTION:
            choices.append((value, {}))
            continue
        field, flag = PER_MODEL_OPTIONS[name]
        target = choices[-1][1] if choices else shared
        if field in target:
            whose = (
                f"model {choices[-1][0]!r}" if choices else "every model (before the first --model)"
            )
            raise UserError(
                f"{flag} given twice for {whose} ({target[field]} and {value}): give each "
                "model's after its --model, or one before the first --model for all"
            )
        target[field] = value
    names = [name for name, _ in choices]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UserError(f"--model {twice[0]} given twice: name each model once")
    if warn is not None and len(choices) > 1:
        last, own = choices[-1]
        for field, flag in PER_MODEL_OPTIONS.values():
            alone = field in own and field not in shared
            if alone and not any(field in settings for _, settings in choices[:-1]):
                warn(
                    f"{flag} {own[field]} is model {last!r}'s only (given after its --model); "
                    "give it before the first --model for every model"
                )
    return shared, [ModelChoice(name, settings) for name, settings in choices]


def ordered_options(ctx: typer.Context) -> list[tuple[str, Any]]:
    """The order :class:`OrderedCommand` kept for the command ``ctx`` runs."""
    order: list[tuple[str, Any]] = ctx.meta.get(ORDER_KEY, [])
    return order
