"""How an episode can end: every outcome, defined once.

Each outcome says whether the episode counts in scores, whether ``--resume`` plays it
again, and which class of exit code of ``gem-eval run`` it leads to. Records, the agent
loop, the runner, the progress display, leaderboards and the gate all read this table;
none keeps a list of its own.

The rule behind the table: a score measures the model. An episode is scored only when
it ended for a reason that is the model's doing (it answered, ran out of turns, or the
API refused it for what it wrote). Failures of the configuration (a bad key, an unknown
model, an unreachable server), of the infrastructure (rate limits outlasting the
retries, a dead sandbox), of the env or of gem-eval itself are recorded, reported
apart, and never counted as a 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

Outcome = Literal[
    "completed",
    "truncated",
    "model_error",
    "sandbox_lost",
    "tampered",
    "config_error",
    "env_error",
    "infra_error",
    "judge_error",
    "harness_error",
    "cancelled",
]
"""The name of an outcome (see :data:`OUTCOMES`)."""

ExitClass = Literal["ok", "incomplete", "config", "harness"]
"""What an outcome makes of a run's exit code: ``ok`` (0), ``incomplete`` (3: some
episodes are to be played again), ``config`` (2: the run was set up wrong and stopped),
``harness`` (1: a bug in gem-eval)."""


@dataclass(frozen=True)
class OutcomeInfo:
    """One outcome.

    Attributes:
        name: The outcome.
        scored: Counts in scores (and denominators).
        replay: ``--resume`` plays the episode again.
        exit_class: Its class of exit code (see :data:`ExitClass`).
        stops_run: The runner stops scheduling when an episode ends this way (every
            other episode would fail the same way).
        description: What it means, for the README and ``--help``.
        zero: Scored as a failure (score 0, no success) whatever the env reported: the
            agent caused it.
        capped: ``--resume`` replays it at most ``--max-attempts`` times in all (a
            failure that may recur every time must not be replayed forever).
    """

    name: Outcome
    scored: bool
    replay: bool
    exit_class: ExitClass
    stops_run: bool
    description: str
    zero: bool = False
    capped: bool = False


OUTCOMES: dict[str, OutcomeInfo] = {
    info.name: info
    for info in (
        OutcomeInfo(
            "completed", True, False, "ok", False,
            "the env ended the episode: solved, lost, or out of the env's own turns",
        ),
        OutcomeInfo(
            "truncated", True, False, "ok", False,
            "a harness limit (turns, tokens, time, cost) ended it; truncated_by names it",
        ),
        OutcomeInfo(
            "model_error", True, False, "ok", False,
            "the API refused the call for what the model wrote: a refusal or content "
            "filter, or a context overflow",
        ),
        OutcomeInfo(
            "sandbox_lost", True, False, "ok", False,
            "the sandbox was lost after the agent's first command ran (the agent may have "
            "killed it): charged to the agent, scored 0, never replayed",
            zero=True,
        ),
        OutcomeInfo(
            "tampered", True, False, "ok", False,
            "the verifier's toolchain changed during the episode (the integrity audit "
            "names the paths): scored 0, never replayed",
            zero=True,
        ),
        OutcomeInfo(
            "config_error", False, True, "config", True,
            "the run is set up wrong: the key was refused (401/403), the model or URL is "
            "unknown (404), the server cannot be reached, it rejected the request (400), "
            "or an env's constructor refused the task's arguments",
        ),
        OutcomeInfo(
            "env_error", False, True, "incomplete", False,
            "the env raised (its settings or its code)",
            capped=True,
        ),
        OutcomeInfo(
            "infra_error", False, True, "incomplete", False,
            "a transient failure outlasted the retries (rate limits, 5xx, timeouts, "
            "dropped connections, malformed replies) or the sandbox failed before the "
            "agent acted (start, image, setup) or with the engine",
            capped=True,
        ),
        OutcomeInfo(
            "judge_error", False, True, "incomplete", False,
            "the judge model of a `scorer: judge` task failed: its call failed for good "
            "or its replies held no grade (the model's answer is kept, never scored 0)",
            capped=True,
        ),
        OutcomeInfo(
            "harness_error", False, True, "harness", False,
            "an unexpected exception in gem-eval's own code (a bug: the record holds "
            "the traceback)",
        ),
        OutcomeInfo(
            "cancelled", False, True, "incomplete", False,
            "the run was stopped (Ctrl-C, SIGTERM, a budget, another episode's "
            "configuration error) while the episode was in flight",
        ),
    )
}  # fmt: skip
"""Every outcome, by name, in the order reports list them."""

assert set(OUTCOMES) == set(get_args(Outcome)), "OUTCOMES and Outcome disagree"

SCORED_OUTCOMES: tuple[str, ...] = tuple(n for n, o in OUTCOMES.items() if o.scored)
"""Outcomes that count in scores."""

REPLAYED_OUTCOMES: tuple[str, ...] = tuple(n for n, o in OUTCOMES.items() if o.replay)
"""Outcomes of episodes that are not done: ``--resume`` plays them again."""

CAPPED_OUTCOMES: tuple[str, ...] = tuple(n for n, o in OUTCOMES.items() if o.capped)
"""Replayed outcomes whose replays count against ``--max-attempts``."""

ERROR_OUTCOMES: tuple[str, ...] = tuple(n for n in OUTCOMES if n not in ("completed", "truncated"))
"""Outcomes counted in their own columns of leaderboards and progress displays."""


def is_zeroed(outcome: str) -> bool:
    """Whether ``outcome`` is scored as a failure whatever the env said."""
    info = OUTCOMES.get(outcome)
    return info is not None and info.zero


def is_scored(outcome: str) -> bool:
    """Whether ``outcome`` counts in scores (unknown names do not)."""
    info = OUTCOMES.get(outcome)
    return info is not None and info.scored
