"""What a run will cost before it is played: episodes, model calls, tokens, USD, wall time.

One row per model and task. Two sources, and each row says which it used:

* **history**: earlier scored episodes of the same suite (by name; those of runs whose
  suite hash is this run's are preferred), agent and model in the results index. Calls,
  tokens and latency are their means per episode times this run's episodes; USD is what
  they were charged on average when every one recorded a cost, else their tokens at
  today's price.
* **bound**: no history. Calls are at most ``max_turns`` per episode, or the env's own
  turn limit when that is lower and the model has no tools (a game's guesses; see
  :meth:`gem_eval.core.Env.turn_limit`); each call's output at most the generation's
  ``max_tokens`` ("unbounded" when not set); each call's input the prompt (the env's
  first observation, measured by resetting it for a few samples, or the task's text at
  four characters a token) plus everything said before it, taking every later
  observation as no longer than the first (a tool's output as its sandbox's
  ``output_limit``). These are ceilings, shown as ``≤``; the per-episode ``max_tokens``
  limit caps them when set. Wall time is bounded by ``max_time_s``, when set.

Prices come from :mod:`gem_eval.models.pricing` (litellm's map, imported only when a
price is needed).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from gem_eval.estimate.history import History, read_history
from gem_eval.estimate.prompt import Prompt, measure_prompt
from gem_eval.models.pricing import FREE_REFERENCE, Price, price_of
from gem_eval.records import EpisodeSpec, ModelSpec, TaskSpec

REFERENCE_MODELS = ("oracle", "noop")


@dataclass(frozen=True)
class Amount:
    """An estimated quantity.

    Attributes:
        value: The figure; ``None``: unknown (``bound`` False) or unbounded (``bound`` True).
        bound: ``value`` is a ceiling, not an expectation.
    """

    value: float | None
    bound: bool = False

    def __add__(self, other: Amount) -> Amount:
        bound = self.bound or other.bound
        if self.value is None or other.value is None:
            # Unknown beats unbounded: an unknown part makes the sum unknown.
            unknown = (self.value is None and not self.bound) or (
                other.value is None and not other.bound
            )
            return Amount(None, bound and not unknown)
        return Amount(self.value + other.value, bound)

    def scaled(self, factor: float) -> Amount:
        return self if self.value is None else Amount(self.value * factor, self.bound)

    @property
    def unbounded(self) -> bool:
        return self.value is None and self.bound


UNKNOWN = Amount(None)
UNBOUNDED = Amount(None, bound=True)


@dataclass(frozen=True)
class RowEstimate:
    """The estimate for one model on one task.

    Attributes:
        parallel: Episodes of this row that may run at once (the run's concurrency, the
            model's connection limit and the row's episodes, whichever is least).
        work_s: Episode-seconds in all (wall time times ``parallel``).
        source: ``history: ...`` or ``bound: ...``: where the figures come from.
        price_note: Where the USD comes from, or why it is unknown.
        prompt_note: What a bound assumed of the task's prompts (``None``: history).
    """

    model: str
    task_id: str
    episodes: int
    calls: Amount
    input_tokens: Amount
    output_tokens: Amount
    usd: Amount
    wall_s: Amount
    work_s: Amount
    parallel: int
    source: str
    price_note: str = ""
    prompt_note: str | None = None

    @property
    def from_history(self) -> bool:
        return self.source.startswith("history")


@dataclass(frozen=True)
class RunEstimate:
    """The estimate for a whole run: its rows and their totals.

    Attributes:
        notes: About the estimate as a whole (history that could not be read).
    """

    rows: list[RowEstimate]
    concurrency: int
    notes: list[str] = field(default_factory=list)
    model_slots: dict[str, int] = field(default_factory=dict)
    """Episodes at once of each model with a limit of its own (its connection limit; a
    local model: one), shared by all its rows."""

    def total(self, name: str) -> Amount:
        """The sum of one of the rows' amounts (``calls``, ``input_tokens`` ...)."""
        total = Amount(0.0)
        for row in self.rows:
            total = total + getattr(row, name)
        return total

    @property
    def episodes(self) -> int:
        return sum(r.episodes for r in self.rows)

    @property
    def total_usd(self) -> float:
        """The USD of every row whose cost is known (ceilings included); see
        :attr:`unpriced` for the rows left out."""
        return sum(r.usd.value for r in self.rows if r.usd.value is not None)

    @property
    def unpriced(self) -> list[RowEstimate]:
        """Rows whose cost is unknown (no price) or unbounded (no output limit)."""
        return [r for r in self.rows if r.usd.value is None]

    @property
    def wall_s(self) -> Amount:
        """Expected wall time: all rows' episode-seconds shared by the run's
        concurrency, and never less than the slowest row on its own, nor than a model's
        rows taking turns on its own slots."""
        work = self.total("work_s")
        if work.value is None or not self.rows:
            return work if self.rows else Amount(0.0)
        slots = max(1, min(self.concurrency, self.episodes))
        longest = max(r.wall_s.value or 0.0 for r in self.rows)
        for model, own in self.model_slots.items():
            shared = sum(r.work_s.value or 0.0 for r in self.rows if r.model == model)
            longest = max(longest, shared / own)
        return Amount(max(work.value / slots, longest), work.bound)

    def exceeds(self, threshold_usd: float) -> str | None:
        """Why this run needs confirming under ``--confirm-above threshold_usd``, or
        ``None`` when its estimate stays at or under it.

        A ceiling counts as the cost (the run may spend that much); a row whose cost
        is unknown or unbounded needs confirming, since nothing shows it stays under.
        """
        total = self.total_usd
        if total > threshold_usd:
            kind = "at most" if any(r.usd.bound for r in self.rows) else "about"
            return f"the run is estimated to cost {kind} ${total:,.4f}, over ${threshold_usd:,.4f}"
        if self.unpriced:
            row = self.unpriced[0]
            why = "is unbounded" if row.usd.unbounded else "is unknown"
            more = f" (and {len(self.unpriced) - 1} more)" if len(self.unpriced) > 1 else ""
            return (
                f"the cost of {row.model} on {row.task_id}{more} {why}: cannot show the "
                f"run stays under ${threshold_usd:,.4f}"
            )
        return None


def estimate_run(
    specs: list[EpisodeSpec],
    *,
    results_dir: Path | None,
    concurrency: int,
    suite: str | None = None,
    suite_hash: str | None = None,
    pricing: Callable[[ModelSpec], Price] = price_of,
) -> RunEstimate:
    """Estimate the run that would play ``specs``; nothing is played, nothing written.

    Args:
        specs: The run's episodes (:meth:`gem_eval.suites.Suite.episodes`).
        results_dir: The results root whose index holds earlier runs (``None``: no
            history, bounds only).
        concurrency: The run's ``--concurrency``.
        suite: The suite's name: history comes from runs of it (``None``: from any run
            with the same model and task id).
        suite_hash: This run's suite hash: runs with the same one are preferred.
        pricing: The price of a model (litellm's map by default).
    """
    groups: dict[tuple[str, str], list[EpisodeSpec]] = {}
    for spec in specs:
        groups.setdefault((spec.model.name, spec.task.id), []).append(spec)
    notes: list[str] = []
    history: dict[tuple[str, str, str], History] = {}
    if results_dir is not None and groups:
        try:
            wanted = {(group[0].task.agent, *key) for key, group in groups.items()}
            history = read_history(Path(results_dir), suite, suite_hash, wanted)
        except sqlite3.Error as exc:
            notes.append(f"no history: the results index could not be read ({exc})")
    prices: dict[str, Price] = {}
    prompts: dict[str, Prompt] = {}  # every model of a task sees the same prompts

    def price(model: ModelSpec) -> Price:
        if model.name not in prices:
            prices[model.name] = pricing(model)
        return prices[model.name]

    def prompt(group: list[EpisodeSpec]) -> Prompt:
        task = group[0].task
        if task.id not in prompts:
            prompts[task.id] = measure_prompt(task, group)
        return prompts[task.id]

    rows = []
    model_slots: dict[str, int] = {}
    for (model_name, _), group in groups.items():
        seen = history.get((group[0].task.agent, model_name, group[0].task.id))
        model = group[0].model
        own = _own_slots(model)
        if own is not None:
            model_slots[model_name] = own
        parallel = max(1, min(concurrency, own or concurrency, len(group)))
        if seen is not None:
            row = _from_history(group, seen, parallel, price)
        else:
            row = _from_bounds(group, parallel, price, prompt)
        rows.append(_less_replayed(row, group))
    return RunEstimate(rows, concurrency, notes, model_slots)


def _less_replayed(row: RowEstimate, group: list[EpisodeSpec]) -> RowEstimate:
    """``row`` less the calls that resumed episodes replay from their earlier attempts
    (:mod:`gem_eval.models.paid_replies`): paid for then, not again."""
    paid = [s.paid_replies for s in group if s.paid_replies is not None and s.paid_replies.calls]
    if not paid:
        return row
    calls = sum(len(p.calls) for p in paid)
    usd = sum(p.cost_usd for p in paid)

    def less(amount: Amount, by: float) -> Amount:
        if amount.value is None:
            return amount
        return replace(amount, value=max(0.0, amount.value - by))

    note = f"less {calls} call{'s' * (calls != 1)} (${usd:.6f}) already paid, replayed"
    return replace(
        row,
        calls=less(row.calls, calls),
        usd=less(row.usd, usd),
        price_note=f"{row.price_note}; {note}" if row.price_note else note,
    )


def _own_slots(model: ModelSpec) -> int | None:
    """Episodes of ``model`` that can play at once whatever the run's concurrency: its
    connection limit, or a local model's one (its server decodes one request at a time
    and the model plays one episode at a time: :class:`~gem_eval.models.local.LocalModel`)."""
    if model.max_connections is not None:
        return model.max_connections
    if model.name.startswith("local/"):
        from gem_eval.models.local import LocalModel

        return LocalModel.max_episodes
    return None


def _from_history(
    group: list[EpisodeSpec], seen: History, parallel: int, price: Callable[[ModelSpec], Price]
) -> RowEstimate:
    spec, episodes = group[0], len(group)
    n = seen.episodes
    input_tokens = Amount(seen.input_tokens / n * episodes)
    output_tokens = Amount(seen.output_tokens / n * episodes)
    if seen.paid and seen.cost_usd is not None:
        usd = Amount(seen.cost_usd / seen.paid * episodes)
        price_note = "USD as earlier episodes were charged"
    else:
        usd, price_note = _priced(spec.model, input_tokens, output_tokens, price)
    # Replies from the response cache took no time: only the other episodes say how long.
    work = Amount(seen.latency_s / seen.paid * episodes) if seen.paid else UNKNOWN
    runs = seen.run_ids
    which = f"run {runs[-1]}" if len(runs) == 1 else f"{len(runs)} runs (latest {runs[-1]})"
    same = "" if seen.same_hash else ", suite hash differs"
    return RowEstimate(
        model=spec.model.name,
        task_id=spec.task.id,
        episodes=episodes,
        calls=Amount(seen.turns / n * episodes),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        usd=usd,
        wall_s=work.scaled(1 / parallel),
        work_s=work,
        parallel=parallel,
        source=f"history: {n} episode{'s' * (n != 1)} of {which}{same}",
        price_note=price_note,
    )


def _from_bounds(
    group: list[EpisodeSpec],
    parallel: int,
    price: Callable[[ModelSpec], Price],
    measure: Callable[[list[EpisodeSpec]], Prompt],
) -> RowEstimate:
    spec, episodes = group[0], len(group)
    task, model = spec.task, spec.model
    prompt = measure(group)
    turns, turns_note = _turns(task, prompt)
    calls = Amount(turns * episodes, bound=True) if turns is not None else UNBOUNDED
    max_time = task.limits.max_time_s
    work = Amount(max_time * episodes, bound=True) if max_time is not None else UNKNOWN
    wall = work.scaled(1 / parallel)
    if model.name in REFERENCE_MODELS:  # no model behind it: no tokens to pay for
        zero = Amount(0.0)
        return RowEstimate(
            model.name, task.id, episodes, calls, zero, zero, zero, wall, work, parallel,
            "bound: a reference agent", FREE_REFERENCE.note,
        )  # fmt: skip
    found = price(model)
    per_call = _max_output(task, model)
    limits = [turns_note, f"max_tokens {per_call} a call"]
    if per_call is None and found.max_output_tokens is not None:
        per_call = found.max_output_tokens  # what the provider lets one reply hold
        limits[1] = f"no max_tokens: the model's most, {per_call:,} a call"
    elif per_call is None:
        limits[1] = "no max_tokens"
    per_episode_in, per_episode_out = _episode_bounds(
        task, turns, per_call, prompt, found.max_input_tokens
    )
    input_tokens = per_episode_in.scaled(episodes)
    output_tokens = per_episode_out.scaled(episodes)
    usd, price_note = _priced(model, input_tokens, output_tokens, price)
    if task.limits.max_tokens is not None:
        limits.append(f"{task.limits.max_tokens} tokens an episode")
    return RowEstimate(
        model=model.name,
        task_id=task.id,
        episodes=episodes,
        calls=calls,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        usd=usd,
        wall_s=wall,
        work_s=work,
        parallel=parallel,
        source=f"bound: {', '.join(limits)}",
        price_note=price_note,
        prompt_note=prompt.note,
    )


def _turns(task: TaskSpec, prompt: Prompt) -> tuple[int | None, str]:
    """Model calls an episode may make at most, and what bounds them: the task's
    ``max_turns`` or, when lower, the env's own turn limit."""
    turns, own = task.limits.max_turns, prompt.env_turns
    if own is not None and (turns is None or own < turns):
        return own, f"the env's own limit, {own} turns"
    return turns, f"max_turns {turns}"


def _max_output(task: TaskSpec, model: ModelSpec) -> int | None:
    """A call's output limit: the model's ``-M max_tokens`` over the task's generation."""
    merged = {**task.generation, **model.args}
    extra = {**task.generation.get("extra", {}), **model.args.get("extra", {})}
    for key in ("max_tokens", "max_completion_tokens"):
        value = merged.get(key, extra.get(key))
        if value is not None:
            return int(value)
    return None


def _episode_bounds(
    task: TaskSpec, turns: int | None, per_call: int | None, prompt: Prompt, context: int | None
) -> tuple[Amount, Amount]:
    """Input and output tokens one episode can use at most: call ``t`` reads the prompt and
    everything of the ``t - 1`` turns before it (a reply and an observation each), and
    never more than the model's ``context`` (when known)."""
    cap = task.limits.max_tokens
    if turns is None or per_call is None:
        # Without an output limit a reply, and so every later prompt, is unbounded; the
        # episode cap still stops calls, but not the one that crosses it.
        return UNBOUNDED, UNBOUNDED
    first, growth = prompt.tokens, per_call + prompt.turn_tokens
    last_prompt = first + growth * (turns - 1)
    if context is None or last_prompt <= context:
        input_tokens = turns * first + growth * turns * (turns - 1) // 2
    else:  # calls 1..k grow, the rest read a full context
        k = 0 if first > context else min(turns, (context - first) // growth + 1)
        input_tokens = k * first + growth * k * (k - 1) // 2 + (turns - k) * context
        last_prompt = context
    output_tokens = turns * per_call
    if cap is not None:
        # Calls start only while the episode's total is under the cap: what came before
        # the last call is under it, and the last call adds one prompt and one reply.
        input_tokens = min(input_tokens, cap + last_prompt)
        output_tokens = min(output_tokens, cap + per_call)
    return Amount(input_tokens, bound=True), Amount(output_tokens, bound=True)


def _priced(
    model: ModelSpec,
    input_tokens: Amount,
    output_tokens: Amount,
    price: Callable[[ModelSpec], Price],
) -> tuple[Amount, str]:
    found = price(model)
    bound = input_tokens.bound or output_tokens.bound
    if found.input_usd == 0.0 and found.output_usd == 0.0:
        return Amount(0.0), found.note
    if not found.known:
        return UNKNOWN, found.note
    if input_tokens.value is None or output_tokens.value is None:
        return UNBOUNDED, found.note
    cost = found.cost(input_tokens.value, output_tokens.value)
    return Amount(cost, bound), found.note
