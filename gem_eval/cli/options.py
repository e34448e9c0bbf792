"""Options several commands share: ``--results-dir`` (and opening its index), and
``key=value`` lists (``--arg``, ``--model-arg``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gem_eval.core import MAX_SEED
from gem_eval.errors import UserError
from gem_eval.registry.source import DEFAULT_REGISTRY as DEFAULT_REGISTRY
from gem_eval.registry.source import ENV_VAR as REGISTRY_ENV

if TYPE_CHECKING:
    from gem_eval.records import TokenPrice
    from gem_eval.store import Index

Seed = Annotated[int | None, typer.Option(min=0, max=MAX_SEED, help="Base seed of the samples.")]

RESULTS_ENV = "GEM_EVAL_RESULTS"
DEFAULT_RESULTS_DIR = Path("results")

_NAME_MAX = 255
"""Bytes a file name may hold on the file systems results live on (ext4, xfs, btrfs)."""


def _results_dir(value: Path) -> Path:
    """A results directory whose name the system can look up (else no command can)."""
    if any(len(os.fsencode(part)) > _NAME_MAX for part in value.parts):
        raise typer.BadParameter(f"a folder name in it is longer than {_NAME_MAX} bytes")
    return value


ResultsDir = Annotated[
    Path,
    typer.Option(
        "--results-dir",
        envvar=RESULTS_ENV,
        callback=_results_dir,
        help="The results directory (run directories and index.sqlite).",
    ),
]

Registry = Annotated[
    str,
    typer.Option(
        "--registry",
        envvar=REGISTRY_ENV,
        help="Where a suite named NAME@VERSION (a dataset: terminal-bench@2.0) is looked "
        "up: a registry JSON file or URL in Harbor's format.",
    ),
]

ImageMap = Annotated[
    list[str] | None,
    typer.Option(
        "--image-map",
        help="FROM=TO: build task images with base image TO wherever a Dockerfile says "
        "FROM (globs allowed: 'python:3*=gem-eval/base:bookworm'; TO may be a directory "
        "with a Dockerfile). Repeatable.",
    ),
]

ModelArgs = Annotated[
    list[str] | None,
    typer.Option("--model-arg", "-M", help="Generation setting key=value (temperature=0.7)."),
]
ModelBaseUrl = Annotated[
    str | None, typer.Option(help="Base URL of an OpenAI-compatible server (vLLM, SGLang ...).")
]
ApiKeyEnv = Annotated[
    str | None,
    typer.Option(
        help="The environment variable holding the API key (its name: keys are never "
        "given on the command line). Default: the provider's usual variable "
        "(OPENAI_API_KEY, HOSTED_VLLM_API_KEY ...).",
    ),
]
ModelBackend = Annotated[
    str | None,
    typer.Option(
        help="litellm, or openai (the direct client, for compatible servers).  [default: litellm]"
    ),
]
TaskGlobs = Annotated[
    list[str] | None,
    typer.Option(
        "--task",
        metavar="GLOB",
        help="Only the tasks whose id matches this glob ('terminal/fix-*'). Repeatable.",
    ),
]
SampleIds = Annotated[
    str | None,
    typer.Option(
        "--sample",
        metavar="IDS",
        help="Only these sample indices of each task: 0,3,10-19 (keys unchanged).",
    ),
]
Categories = Annotated[
    list[str] | None,
    typer.Option("--category", metavar="NAME", help="Only the tasks of this category. Repeatable."),
]

ExecutorName = Annotated[
    str,
    typer.Option(
        "--executor",
        help="Where episodes play: local (this process) or ray (the nodes of a Ray "
        "cluster; pip install 'gem-eval[ray]').",
    ),
]
RayAddress = Annotated[
    str | None,
    typer.Option(
        help="With --executor ray: the cluster (host:6379 or ray://host:10001). "
        "Default: RAY_ADDRESS, a local `ray start`, else a one-node cluster for the run.",
    ),
]


def check_executor(executor: str, ray_address: str | None) -> bool:
    """Whether the run goes to Ray; a one-line error for an unknown executor."""
    from gem_eval.runner.request import RunRequest

    return RunRequest(executor=executor, ray_address=ray_address).executor == "ray"


def positive_seconds(value: float | None) -> float | None:
    """A time limit given in seconds: more than 0 and finite (0, a negative number or
    ``inf`` would switch the limit off)."""
    if value is not None and not 0 < value < float("inf"):
        raise typer.BadParameter(f"expected a finite number of seconds above 0 (got {value:g})")
    return value


Prices = Annotated[
    list[str] | None,
    typer.Option(
        "--price",
        metavar="MODEL=IN,OUT",
        help="What MODEL's tokens cost: USD per million input and output tokens "
        "(openai/gpt-4o=2.5,10), for a model litellm has no price for (a self-hosted "
        "checkpoint) or over litellm's. --max-cost counts it. Repeatable.",
    ),
]


def parse_prices(given: list[str] | None) -> dict[str, TokenPrice]:
    """``--price MODEL=IN,OUT`` as each model's price.

    Raises:
        UserError: Not ``MODEL=IN,OUT`` with two finite numbers >= 0, or a model priced
            twice.
    """
    from pydantic import ValidationError

    from gem_eval.records import TokenPrice

    prices: dict[str, TokenPrice] = {}
    for item in given or []:
        name, _, pair = item.rpartition("=")
        parts = pair.split(",")
        shape = f"--price takes MODEL=IN,OUT (USD per million input, output tokens), got {item!r}"
        if not name.strip() or len(parts) != 2:
            raise UserError(shape)
        try:
            price = TokenPrice(input=float(parts[0]), output=float(parts[1]))
        except (ValueError, ValidationError):
            raise UserError(f"{shape}: two numbers >= 0") from None
        if name in prices:
            raise UserError(f"--price {name} given twice: price each model once")
        prices[name] = price
    return prices


def selection_options(
    tasks: list[str] | None, samples: str | None, categories: list[str] | None
) -> dict[str, Any]:
    """``--task``/``--sample``/``--category`` as RunOptions fields (only those given)."""
    from gem_eval.suites.selection import parse_sample_ids

    given = {
        "tasks": list(tasks) if tasks else None,
        "samples": sorted(set(parse_sample_ids(samples))) if samples is not None else None,
        "categories": list(categories) if categories else None,
    }
    return {k: v for k, v in given.items() if v is not None}


def check_results_dir(results_dir: Path) -> None:
    """A one-line user error when there is no results directory to read."""
    if not results_dir.is_dir():
        raise UserError(
            f"no results directory {str(results_dir)!r} (set --results-dir or {RESULTS_ENV})"
        )


@contextmanager
def open_index(results_dir: Path) -> Iterator[Index]:
    """The results index, built from the run directories first when it is missing."""
    from gem_eval.store import open_results_index

    check_results_dir(results_dir)
    with open_results_index(results_dir) as index:
        yield index


def parse_key_values(pairs: list[str], flag: str) -> dict[str, Any]:
    """``["max_turns=5", "name=x"]`` -> ``{"max_turns": 5, "name": "x"}`` (values read as YAML)."""
    import yaml

    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"{flag} takes key=value, got {pair!r}")
        try:
            out[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError:
            raise UserError(f"{flag} {key.strip()}: cannot read the value {value!r}") from None
    return out


AgentName = Annotated[
    str | None,
    typer.Option(
        "--agent",
        metavar="NAME",
        help="Who plays every task: gem-eval's own loop (gem-eval, the default), or an "
        "agent program (terminus-2, mini-swe-agent, qwen-code: `gem-eval agents list`).",
    ),
]


def agent_override(agent: str | None) -> dict[str, Any]:
    """``--agent`` as a task override (checked: an unknown name is one line)."""
    if agent is None:
        return {}
    from gem_eval.agents.registry import agent_info

    return {"agent": agent_info(agent).name}
