"""Before a run is created or resumed: can its models and judges be used as configured?

A missing extra, an unset key, weights not found or a server that cannot be reached
would otherwise leave a ``failed`` run with no episode; checked first, they are one line
and nothing is written (see :func:`gem_eval.models.preflight.check_models`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gem_eval.records import ModelSpec, TaskSpec
    from gem_eval.runner.session import RunOptions


def check_setup(
    models: Sequence[ModelSpec],
    tasks: Sequence[TaskSpec],
    options: RunOptions,
    warn: Callable[[str], None] | None = None,
) -> None:
    """Check the run's models and the judges of its ``scorer: judge`` tasks.

    Args:
        models: The models that will play.
        tasks: The tasks they will play.
        options: The run's options (with ``cache``, server and key problems are warnings).
        warn: Hears each warning: also each model a ``max_cost_usd`` cap cannot see (no
            price: its calls count as $0).

    Raises:
        UserError: A model or judge that cannot be used.
    """
    from gem_eval.models.preflight import check_models
    from gem_eval.models.pricing import budget_blind_spots
    from gem_eval.runner.judging import judge_model_spec

    specs = list(models)
    seen = set()
    for task in tasks:
        if task.scorer == "judge" and task.judge is not None:
            key = task.judge.connection()
            if key not in seen:
                seen.add(key)
                specs.append(judge_model_spec(task.judge))
    warnings = asyncio.run(check_models(specs, cache=options.cache))
    warnings += budget_blind_spots(specs, options.max_cost_usd)
    warnings += _turns_not_capped(tasks, options)
    for line in warnings:
        if warn is not None:
            warn(line)


def _turns_not_capped(tasks: Sequence[TaskSpec], options: RunOptions) -> list[str]:
    """A line when ``--max-turns`` was given and agent programs play some tasks: it
    caps gem-eval's own loop; an agent keeps its own turn limit (a task's
    ``agent_max_turns`` sets the agents that take one)."""
    from gem_eval.agents.registry import DEFAULT_AGENT

    if (options.overrides.get("limits") or {}).get("max_turns") is None:
        return []
    agents = sorted({t.agent for t in tasks if t.agent != DEFAULT_AGENT})
    if not agents:
        return []
    return [
        f"--max-turns caps gem-eval's own loop only: {', '.join(agents)} keep their own "
        "turn limits (a suite task's agent_max_turns sets the agents that take one)"
    ]
