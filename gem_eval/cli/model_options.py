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
ARGS_OPTION = "model_arg"
"""``-M key=value``: a generation setting of the ``--model`` before it (``args``)."""
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
        help="openai (the direct client: OpenAI and any OpenAI-compatible server) or "
        "litellm (every provider). After a --model: that model's; before the first: every "
        "model's.  [default: openai for openai/*, hosted_vllm/*, local/* and any model "
        "with --model-base-url; else litellm]",
    ),
]


ModelArgsEach = Annotated[
    list[str] | None,
    typer.Option(
        "--model-arg",
        "-M",
        metavar="KEY=VALUE",
        help="Generation setting (temperature=0.7). After a --model: that model's; before "
        "the first --model: every model's. Repeatable.",
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
            if name not in (MODEL_OPTION, ARGS_OPTION) and name not in PER_MODEL_OPTIONS:
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

    Connection options and ``-M key=value`` (``args``) given after a ``--model`` are that
    model's; given before the first ``--model``, every model's (a model's own win).

    Args:
        order: ``(parameter name, value)`` in the order given (:class:`OrderedCommand`).
        warn: Hears a setting given only after the last of several models (which reads
            like one for all of them, as it did before settings belonged to a model).

    Raises:
        UserError: One option (or one ``-M`` key) given twice for one model, or twice
            before the first ``--model``: which value was meant cannot be told.
    """
    from gem_eval.cli.options import parse_key_values
    from gem_eval.runner.request import ModelChoice

    shared: dict[str, Any] = {}
    choices: list[tuple[str, dict[str, Any]]] = []
    for name, value in order:
        if name == MODEL_OPTION:
            choices.append((value, {}))
            continue
        target = choices[-1][1] if choices else shared
        whose = f"model {choices[-1][0]}" if choices else "every model (before the first --model)"
        if name == ARGS_OPTION:
            args = target.setdefault("args", {})
            for key, setting in parse_key_values([value], "-M").items():
                if key in args:
                    raise UserError(f"-M {key} given twice for {whose}: {_twice}")
                args[key] = setting
            continue
        field, flag = PER_MODEL_OPTIONS[name]
        if field in target:
            raise UserError(
                f"{flag} given twice for {whose} ({target[field]} and {value}): {_twice}"
            )
        target[field] = value
    names = [name for name, _ in choices]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UserError(f"--model {twice[0]} given twice: name each model once")
    if warn is not None and len(choices) > 1:
        _warn_last_only(choices, shared, warn)
    return shared, [ModelChoice(name, settings) for name, settings in choices]


_twice = "give each model's after its --model, or one before the first --model for all"


def _warn_last_only(
    choices: list[tuple[str, dict[str, Any]]],
    shared: dict[str, Any],
    warn: Callable[[str], None],
) -> None:
    """Warn of each setting only the last of several models has, given after it."""
    last, own = choices[-1]
    others = [settings for _, settings in choices[:-1]]
    for field, flag in [*PER_MODEL_OPTIONS.values(), ("args", "-M")]:
        if field in own and field not in shared and not any(field in o for o in others):
            value = own[field]
            shown = " ".join(f"{k}={v}" for k, v in value.items()) if field == "args" else value
            warn(
                f"{flag} {shown} applies to model {last} only (given after its --model); "
                "give it before the first --model for every model"
            )


def ordered_options(ctx: typer.Context) -> list[tuple[str, Any]]:
    """The order :class:`OrderedCommand` kept for the command ``ctx`` runs."""
    order: list[tuple[str, Any]] = ctx.meta.get(ORDER_KEY, [])
    return order
