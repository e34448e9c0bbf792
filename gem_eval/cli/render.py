"""Rich output of the CLI: env tables and episode transcripts."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

if TYPE_CHECKING:
    from gem_eval.registration import EnvSpec
    from gem_eval.trajectory import Trajectory

console = Console(highlight=False)
# Rich fixes the width at COLUMNS as it was when the console was made (this module's
# import); unset, the width is read at each print: COLUMNS as it is when a command runs
# (a command run in-process, as tests and notebooks do, by `gem_eval.cli.main`).
console._width = None


def print_whole(table: Table, drop: Sequence[str] = ()) -> None:
    """Print a table; in a log (not a terminal) at its natural width, never cropped.

    In a terminal too narrow for it, the columns headed ``drop`` go first, in that order
    (the least important first), so that identifier columns (see :func:`add_id_column`)
    need not be cut.
    """
    out = console
    unbounded = console.options.update_width(10_000)  # a measure is clamped to the width
    if not console.is_terminal:
        natural = console.measure(table, options=unbounded)
        out = Console(highlight=False, width=max(console.width, natural.maximum))
    else:
        for header in drop:
            if console.measure(table, options=unbounded).minimum <= console.width:
                break
            table.columns[:] = [c for c in table.columns if c.header != header]
    out.print(table)


def add_id_column(table: Table, header: str, ids: Iterable[str], **kwargs: Any) -> None:
    """A column of identifiers (run ids, models, tasks) that copy-paste must find whole: as
    wide as its longest id, never wrapped or cut with an ellipsis (other columns wrap
    first; a terminal narrower than one id folds it)."""
    width = max((len(i) for i in ids), default=0)
    table.add_column(
        header, no_wrap=True, overflow="fold", min_width=max(width, len(header)), **kwargs
    )


def env_table(specs: list[EnvSpec]) -> None:
    table = Table(title=f"{len(specs)} envs", title_justify="left")
    table.add_column("id", style="bold cyan", no_wrap=True)
    table.add_column("settings")
    table.add_column("description")
    for s in specs:
        settings = ", ".join(f"{k}={v}" for k, v in s.kwargs.items())
        table.add_row(s.id, escape(settings), escape(s.description))
    console.print(table)


def env_details(spec: EnvSpec, doc: str, first_obs: str, seed: int) -> None:
    table = Table.grid(padding=(0, 2))
    table.add_row("[bold]id[/]", spec.id)
    table.add_row("[bold]entry point[/]", escape(str(spec.entry_point)))
    table.add_row(
        "[bold]settings[/]", escape(", ".join(f"{k}={v}" for k, v in spec.kwargs.items()))
    )
    table.add_row("[bold]description[/]", escape(spec.description))
    console.print(table)
    if doc:
        console.print(Panel(escape(doc), title="documentation", title_align="left"))
    console.print(
        Panel(escape(first_obs), title=f"first observation (seed {seed})", title_align="left")
    )


class TrajectoryPrinter:
    """Prints an episode turn by turn, as the agent loop (or a policy's rollout) plays it."""

    def __init__(self) -> None:
        self.shown = -1

    def __call__(self, traj: Trajectory) -> None:
        if self.shown < 0:
            console.print(Panel(escape(traj.initial_observation), title="env", title_align="left"))
            self.shown = 0
        for step in traj.steps[self.shown :]:
            out = step.output
            if out.usage.total_tokens or out.latency_s:  # a model's turn
                meta = f"{out.usage.total_tokens} tokens, {out.latency_s:.2f} s"
                console.print(f"[bold magenta]model[/] (turn {step.index + 1}, {meta}):")
            else:  # a policy's
                console.print(f"[bold magenta]agent[/] (turn {step.index + 1}):")
            console.print(escape(out.text) if out.text else "[dim](no text)[/]")
            for event in step.tool_events:
                style = "red" if event.is_error else "cyan"
                console.print(f"[{style}]tool {escape(event.name)}[/]: {escape(event.output)}")
            if step.observation is not None:
                title = f"env  reward {step.reward:+.3f}"
                status = "terminated" if step.terminated else "truncated" if step.truncated else ""
                if status:
                    title += escape(f"  [{status}]")
                console.print(Panel(escape(step.observation), title=title, title_align="left"))
        self.shown = len(traj.steps)


def trajectory_summary(traj: Trajectory, gamma: float) -> None:
    outcome = traj.outcome + (f" ({traj.truncated_by})" if traj.truncated_by else "")
    usage = traj.usage
    by_env = sum(s.observation is not None for s in traj.steps)
    rows = [
        ("env", traj.env_id),
        ("seed", str(traj.seed)),
        ("agent", traj.model),
        ("outcome", outcome),
        ("success", "yes" if traj.success else "no"),
        ("turns", f"{len(traj.steps)} ({by_env} answered by the env)"),
        (
            "return",
            f"{traj.total_return:.3f} (discounted, γ={gamma}: {traj.discounted_return(gamma):.3f})",
        ),
    ]
    if usage.total_tokens or usage.cost_usd is not None:  # a model played, not a policy
        cost = f"${usage.cost_usd:.4f}" if usage.cost_usd is not None else "unknown"
        tokens = f"{usage.input_tokens} in, {usage.output_tokens} out, {usage.cached_tokens} cached"
        rows += [("tokens", tokens), ("cost", cost)]
    queued = f" ({traj.queued_s:.1f} s queued for the model)" if traj.queued_s >= 0.05 else ""
    rows.append(("time", f"{traj.duration_s:.1f} s{queued}, {traj.retries} retries"))
    table = Table.grid(padding=(0, 2))
    for key, value in rows:
        table.add_row(f"[bold]{key}[/]", escape(value))
    console.print(Panel(table, title="episode", title_align="left", expand=False))
    if traj.error:
        console.print(f"[red]{escape(traj.error)}[/]")


def route_library_log() -> None:
    """Show the library's notices (an engine that went away, a cleanup that could not
    finish) as progress lines on stderr, like the run's own."""
    import logging

    logger = logging.getLogger("gem_eval")
    if not any(getattr(h, "_gem_eval", False) for h in logger.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("[gem-eval] %(message)s"))
        handler._gem_eval = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def dataset_line(pin: dict[str, Any]) -> str:
    """A registry dataset a suite or run played (a manifest's ``extra.datasets`` entry):
    ``NAME@VERSION: GIT_URL @ COMMIT (registry WHERE)``."""
    repos = pin.get("repositories") or ()
    where = ", ".join(f"{r.get('git_url')} @ {r.get('commit')}" for r in repos)
    return f"{pin.get('name')}@{pin.get('version')}: {where} (registry {pin.get('registry')})"


def prepare_run_summary() -> None:
    """Import what :func:`run_summary` needs (pandas: ~0.7 s) in a worker thread while the
    run plays, so the scores show as soon as the last episode ends."""
    import threading

    def load() -> None:
        import pandas  # noqa: F401

    threading.Thread(target=load, name="gem-eval-prewarm", daemon=True).start()


def run_summary(results_dir: Any, run_id: str, summary: Any) -> None:
    """The run's scores per model and task (as ``gem-eval leaderboard --by task``)."""
    import sqlite3

    from gem_eval.cli.options import open_index
    from gem_eval.metrics import summarize
    from gem_eval.metrics.render import summary_table

    try:
        with open_index(results_dir) as index:
            frame = index.episodes_frame(run_ids=[run_id])
    except sqlite3.Error as exc:  # a cache: the records are safe in episodes.jsonl
        console.print(
            f"the results index cannot be read ({exc}): `gem-eval results reindex` "
            "rebuilds it from the records",
            markup=False,
        )
        frame = None
    if frame is not None and len(frame):
        title = f"run {run_id}: {summary.status}"
        print_whole(summary_table(summarize(frame, by=("model", "task_id")), title=title))
    for line in outcome_lines(summary.outcomes, summary.first_errors):
        console.print(line, markup=False)
    if summary.judged or summary.judge_failed:
        failed = f", {summary.judge_failed} failed (judge_error)" if summary.judge_failed else ""
        console.print(
            f"judge: {summary.judged} episodes graded{failed}, ${summary.judge_cost_usd:.4f} "
            "(apart from the judged models' cost; the budget counts both)",
            markup=False,
        )
    if summary.cache is not None:
        hits, misses = summary.cache.get("hits", 0), summary.cache.get("misses", 0)
        console.print(
            f"response cache: {hits} replies from the cache, {misses} model calls made",
            markup=False,
        )
    if summary.replayed_calls:
        console.print(
            f"episodes cut before went on from {summary.replayed_calls} model calls replayed "
            f"from their records (${summary.replayed_cost_usd:.4f}, paid for then, not again)",
            markup=False,
        )
    if summary.gave_up:
        console.print(
            f"  {summary.gave_up} of them had their last attempt (--max-attempts): "
            "--resume will not play them again",
            markup=False,
        )
    if summary.given_up_before:
        console.print(
            f"  {summary.given_up_before} episodes were given up before (--max-attempts) and "
            "stay unscored: --resume with a higher --max-attempts plays them again",
            markup=False,
        )


def outcome_lines(outcomes: dict[str, int], first_errors: dict[str, str]) -> list[str]:
    """One line for the scored episodes, and one per outcome of those not scored, with
    its count, what it means for the run, and its first error."""
    from gem_eval.outcomes import OUTCOMES

    scored = {k: n for k, n in outcomes.items() if n and OUTCOMES[k].scored}
    parts = ", ".join(f"{n} {k}" for k, n in scored.items())
    lines = [f"this session: {sum(scored.values())} scored" + (f" ({parts})" if parts else "")]
    meaning = {
        "config": "the run was set up wrong and stopped",
        "harness": "a bug in gem-eval: the record keeps the traceback",
        "incomplete": "not scored; --resume plays them again",
    }
    for name, info in OUTCOMES.items():
        n = outcomes.get(name, 0)
        if not n or info.scored:
            continue
        line = f"  {n} {name}: {meaning[info.exit_class]}"
        first = first_errors.get(name)
        if first:
            line += f"; first: {_clip(first, 300)}"
        lines.append(line)
    return lines


def _clip(text: str, width: int) -> str:
    one = " ".join(text.split())
    return one if len(one) <= width else one[: width - 3] + "..."
