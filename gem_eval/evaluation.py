"""``gem_eval.evaluate``: a run from Python, played exactly as ``gem-eval run`` plays it.

For notebooks and training loops::

    import gem_eval

    result = gem_eval.evaluate("smoke", models=["oracle"])
    print(result.status, result.exit_code)
    print(result.leaderboard)          # a pandas DataFrame: one row per model
    episodes = result.episodes         # one row per episode

The run is planned, checked (models, keys, servers: a :class:`~gem_eval.errors.UserError`
before anything is written), played and stored in ``results_dir`` as the CLI does; a
run's directory and its index are the same files the CLI writes and reads, so
``gem-eval leaderboard``, ``compare`` and ``gate`` see it. Nothing is printed; what the
CLI warns of (a model a ``max_cost`` cannot price) comes as a Python ``UserWarning``.
:func:`aevaluate` is the same for a running event loop.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from typing_extensions import Unpack

from gem_eval.errors import UserError
from gem_eval.records import ModelSpec

if TYPE_CHECKING:
    import pandas as pd

    from gem_eval.runner.request import RunRequest
    from gem_eval.runner.runner import RunSummary


@dataclass
class EvalResult:
    """What a run made: its id and directory, how it ended, and its scores.

    Attributes:
        run_id: The run's id (``--resume`` takes it).
        run_dir: Its directory (``manifest.json``, ``episodes.jsonl``).
        results_dir: The results directory it lies in.
        summary: How the session went (status, outcomes, cost; see
            :class:`~gem_eval.runner.runner.RunSummary`).
    """

    run_id: str
    run_dir: Path
    results_dir: Path
    summary: RunSummary
    _frame: Any = field(default=None, repr=False)

    @property
    def status(self) -> str:
        """``finished``, ``incomplete``, ``interrupted``, ``budget_exhausted`` ..."""
        return str(self.summary.status)

    @property
    def exit_code(self) -> int:
        """The code ``gem-eval run`` would exit with (0: every episode scored)."""
        return self.summary.exit_code

    @property
    def episodes(self) -> pd.DataFrame:
        """One row per episode (its latest attempt): model, task, sample, epoch,
        outcome, score, tokens, cost ... (the results index's columns)."""
        if self._frame is None:
            from gem_eval.store import open_results_index

            with open_results_index(self.results_dir) as index:
                self._frame = index.episodes_frame(run_ids=[self.run_id])
        frame: pd.DataFrame = self._frame
        return frame

    @property
    def leaderboard(self) -> pd.DataFrame:
        """The run's scores per model (as ``gem-eval leaderboard RUN``): n, mean score
        with its standard error and 95% CI, accuracy, pass@k, tokens, cost, errors."""
        return self.by(("model",))

    def by(self, groups: Sequence[str]) -> pd.DataFrame:
        """The scores grouped by ``groups`` (``("model", "task_id")``, ``("category",)``)."""
        from gem_eval.metrics import summarize

        return summarize(self.episodes, by=tuple(groups))


class EvalOptions(TypedDict, total=False):
    """:func:`evaluate`'s keywords: ``gem-eval run``'s options of the same names."""

    results_dir: str | Path
    """Where runs are kept (default ``results``)."""
    resume: str
    """A run id or ``latest``: play what that run is missing."""
    force: bool
    """With ``resume``: accept changes to what the run measures."""
    base_url: str
    api_key_env: str
    backend: str
    model_args: dict[str, Any]
    """Connection and generation settings of every model given as a string."""
    limit: int
    epochs: int
    seed: int
    max_turns: int
    agent: str
    tasks: Sequence[str]
    """Globs on task ids (``--task``)."""
    samples: Sequence[int]
    categories: Sequence[str]
    concurrency: int
    max_cost: float
    """USD (``--max-cost``)."""
    max_attempts: int
    cache: bool
    sandbox: str
    no_network: bool


def evaluate(
    suite: str | Path | None = None,
    models: Sequence[str | ModelSpec] = (),
    **options: Unpack[EvalOptions],
) -> EvalResult:
    """Play ``suite`` (a bundled name, a path, or ``NAME@VERSION``) with ``models`` as
    ``gem-eval run`` does, and return the result.

    ``models``: model strings (``"openai/gpt-5"``, ``"hosted_vllm/ckpt"``), each with the
    shared ``base_url``, ``api_key_env``, ``backend`` and ``model_args``, or
    :class:`~gem_eval.records.ModelSpec` objects carrying their own. ``options``: see
    :class:`EvalOptions`.

    Raises:
        UserError: A bad suite, model or option, an unreachable server, a missing key
            (nothing is written).
    """
    return asyncio.run(_play(_request(suite, models, options)))


async def aevaluate(
    suite: str | Path | None = None,
    models: Sequence[str | ModelSpec] = (),
    **options: Unpack[EvalOptions],
) -> EvalResult:
    """:func:`evaluate` from a running event loop (a notebook, an async trainer): the
    checks run in a thread, the episodes on the caller's loop."""
    return await _play(_request(suite, models, options))


def _request(
    suite: str | Path | None, models: Sequence[str | ModelSpec], options: EvalOptions
) -> RunRequest:
    """The run's request, as ``gem-eval run`` builds it from its options."""
    from gem_eval.agents.registry import agent_info
    from gem_eval.models.generation import ensure_generation
    from gem_eval.runner.request import CONNECTION_FIELDS, ModelChoice, RunRequest

    unknown = set(options) - set(EvalOptions.__annotations__)
    if unknown:
        raise UserError(f"evaluate() got no option {sorted(unknown)[0]!r}")
    model_args = options.get("model_args")
    if model_args:
        ensure_generation(model_args, "model_args")
    choices = []
    for model in models:
        if isinstance(model, ModelSpec):
            own = {k: getattr(model, k) for k in CONNECTION_FIELDS if getattr(model, k)}
            settings = {**own, **({"args": model.args} if model.args else {})}
            choices.append(ModelChoice(model.name, settings))
        else:
            choices.append(ModelChoice(model))
    max_turns, agent = options.get("max_turns"), options.get("agent")
    overrides = {
        **({"limits": {"max_turns": max_turns}} if max_turns is not None else {}),
        **({"agent": agent_info(agent).name} if agent is not None else {}),
    }
    run_options = {
        "limit": options.get("limit"), "epochs": options.get("epochs"), "seed": options.get("seed"),
        "overrides": overrides or None, "concurrency": options.get("concurrency"),
        "max_cost_usd": options.get("max_cost"), "max_attempts": options.get("max_attempts"),
        "cache": options.get("cache") or None, "sandbox": options.get("sandbox"),
        "no_network": options.get("no_network") or None,
        "tasks": list(options.get("tasks", ())) or None,
        "samples": sorted(set(options.get("samples", ()))) or None,
        "categories": list(options.get("categories", ())) or None,
    }  # fmt: skip
    shared = {
        "base_url": options.get("base_url"),
        "api_key_env": options.get("api_key_env"),
        "backend": options.get("backend"),
    }
    resume = options.get("resume")
    return RunRequest(
        suite=None if suite is None else str(suite),
        models=tuple(choices),
        shared=shared,
        model_args=model_args,
        options=run_options,
        resume=resume,
        force=options.get("force", False),
        results_dir=Path(options.get("results_dir", "results")),
    )


async def _play(request: RunRequest) -> EvalResult:
    from gem_eval.runner.session import play_request

    def warn(line: str) -> None:  # as Python's warnings, at evaluate()'s caller
        warnings.warn(line, stacklevel=2)

    plan, summary = await play_request(request, warn=warn)
    return EvalResult(plan.manifest.run_id, Path(plan.run_dir.path), request.results_dir, summary)
