"""``gem-eval results list``, ``results show``, ``results reindex``, ``results export`` and
``results import``."""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from gem_eval.cli.options import DEFAULT_RESULTS_DIR, ResultsDir, check_results_dir
from gem_eval.export import ExportFormat
from gem_eval.outcomes import REPLAYED_OUTCOMES

if TYPE_CHECKING:
    from gem_eval.records import EpisodeRecord, RunManifest

results_app = typer.Typer(
    help="List, show, re-index, export and import recorded runs.", no_args_is_help=True
)


@results_app.command("list")
def list_command(
    results_dir: ResultsDir = DEFAULT_RESULTS_DIR,
    suite: Annotated[str | None, typer.Option("--suite", help="Only runs of this suite.")] = None,
) -> None:
    """List recorded runs, oldest first (from the index; built first if missing)."""
    from gem_eval.cli.render import add_id_column, print_whole
    from gem_eval.metrics.selection import agents_of
    from gem_eval.store import INDEX_FILE, Index

    check_results_dir(results_dir)
    missing = not (results_dir / INDEX_FILE).exists()
    with Index.for_root(results_dir) as index:
        if missing:
            index.rebuild(results_dir)
        runs = [r for r in index.runs() if suite is None or r["suite"] == suite]
    table = Table(title=f"{len(runs)} runs in {results_dir}", title_justify="left")
    add_id_column(table, "run id", (r["run_id"] for r in runs), style="bold cyan")
    add_id_column(table, "suite", (r["suite"] for r in runs))
    models = [m for r in runs for m in r["models"]]
    # One model per line when narrow; a model's name itself is never cut.
    table.add_column("models", overflow="fold", min_width=max(map(len, models), default=6))
    agents = {r["run_id"]: agents_of(r) for r in runs}
    names = [a for played in agents.values() for a in played]
    table.add_column("agents", overflow="fold", min_width=max(map(len, names), default=6))
    for name in ("status", "episodes", "started"):
        table.add_column(name)
    for r in runs:
        table.add_row(
            r["run_id"],
            r["suite"],
            ", ".join(r["models"]),
            ", ".join(agents[r["run_id"]]),
            _status(r["status"], results_dir / r["run_id"]),
            f"{r['episodes_done']}/{r['episodes_planned']}",
            _when(r["started_at"]),
        )
    print_whole(table, drop=("started", "episodes", "status", "agents", "suite"))


@results_app.command("show")
def show_command(
    run_id: Annotated[str, typer.Argument(help="A run id, or 'latest'.")],
    results_dir: ResultsDir = DEFAULT_RESULTS_DIR,
) -> None:
    """Show a run's manifest, its agents (per agent: its version, its mean setup and run
    times) and the outcomes of its episodes, per model."""
    from gem_eval.cli.render import print_whole
    from gem_eval.store import RunDir

    check_results_dir(results_dir)
    run = RunDir.open(results_dir, run_id)
    manifest = run.read_manifest()
    records = list(run.latest_by_key().values())
    print_whole(_manifest_grid(manifest, records, run.path))
    print_whole(_outcome_table(records), drop=("mean score",))


@results_app.command("reindex")
def reindex_command(results_dir: ResultsDir = DEFAULT_RESULTS_DIR) -> None:
    """Rebuild index.sqlite from every run directory's manifest and episodes.jsonl."""
    from gem_eval.cli.render import console
    from gem_eval.store import Index

    check_results_dir(results_dir)
    started = time.perf_counter()
    with Index.for_root(results_dir) as index:
        stats = index.rebuild(results_dir)
    for run_id, reason in stats.skipped.items():
        console.print(f"[yellow]skipped[/] {run_id}: {reason}", markup=True, highlight=False)
    console.print(
        f"indexed {stats.runs} runs, {stats.episodes} episodes into "
        f"{index.path} in {time.perf_counter() - started:.2f} s"
        + (f" ({len(stats.skipped)} skipped)" if stats.skipped else "")
    )


@results_app.command("export")
def export_command(
    run_id: Annotated[str, typer.Argument(help="A run id, or 'latest'.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The directory to write to.")],
    format: Annotated[
        ExportFormat,
        typer.Option("--format", "-f", help="atif: one ATIF (Harbor) JSON per episode."),
    ] = ExportFormat.atif,
    results_dir: ResultsDir = DEFAULT_RESULTS_DIR,
) -> None:
    """Export a run's episodes (the last attempt of each) to another format."""
    from gem_eval.cli.render import console
    from gem_eval.export import export_run
    from gem_eval.store import RunDir

    check_results_dir(results_dir)
    done = export_run(RunDir.open(results_dir, run_id), format, out)
    console.print(
        f"exported {done.episodes} episodes of {done.run_id} as {done.format.value}: "
        f"{len(done.files)} files in {done.out}",
        markup=False,
        highlight=False,
    )


@results_app.command("import")
def import_command(
    path: Annotated[
        Path,
        typer.Argument(
            help="An inspect_ai log (.eval, .json), a Harbor job directory, lm-eval "
            "results_*.json / samples_*.jsonl, or a directory of these."
        ),
    ],
    source: Annotated[
        str | None,
        typer.Option(
            "--source",
            metavar="[inspect|harbor|lm-eval]",
            help="The harness that wrote PATH (default: told from PATH).",
        ),
    ] = None,
    results_dir: ResultsDir = DEFAULT_RESULTS_DIR,
) -> None:
    """Import another harness's results as runs (marked with their source). What cannot
    be read (a job, a trial, a log) is left out with a warning naming it, when the rest
    can be read; nothing readable is an error."""
    from gem_eval.cli.render import console
    from gem_eval.store import RunDir
    from gem_eval.store.importers import import_results

    def warn(line: str) -> None:
        console.print(f"[bold yellow]warning:[/] {escape(line)}", soft_wrap=True)

    for run_id in import_results(path, results_dir, source=source, warn=warn):
        run = RunDir(results_dir / run_id)
        manifest = run.read_manifest()
        records = list(run.latest_by_key().values())
        scored = sum(r.scored for r in records)
        console.print(
            f"imported {run_id} ({manifest.extra['imported']['source']}, suite "
            f"{manifest.suite}, {', '.join(m.name for m in manifest.models)}): "
            f"{len(records)} episodes, {scored} scored, {len(records) - scored} not scored",
            markup=False,
            highlight=False,
        )


def _when(timestamp: float | None) -> str:
    return "-" if timestamp is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(timestamp))


def _status(status: str, run_dir: Path) -> str:
    """The run's status, colored; a run still ``running`` that no process plays (the
    session lock is free: its process was killed) says so."""
    from gem_eval.store import session_lock

    if status == "running" and not session_lock.is_played(run_dir):
        return "[yellow]stopped[/] (its process is gone: --resume it)"
    color = {"finished": "green", "running": "blue", "failed": "red"}.get(status, "yellow")
    return f"[{color}]{status}[/]"


def _manifest_grid(m: RunManifest, records: list[EpisodeRecord], run_dir: Path) -> Table:
    from gem_eval.cli.render import dataset_line

    done = sum(r.outcome not in REPLAYED_OUTCOMES for r in records)
    tokens = sum(r.input_tokens + r.output_tokens for r in records)
    costs = [r.cost_usd for r in records if r.cost_usd is not None]
    # As the leaderboard sums it: the known costs, "-" when none is known.
    cost = f"${sum(costs):.4f}" if costs else "-"
    duration = f"{m.finished_at - m.started_at:.0f} s" if m.finished_at is not None else "-"
    grid = Table.grid(padding=(0, 2))
    rows = [
        ("run id", m.run_id),
        (
            "suite",
            f"{m.suite}{f' ({m.suite_path})' if m.suite_path else ''}, hash {m.suite_hash[:12]}",
        ),
        ("models", ", ".join(model.name for model in m.models)),
        ("agents", _agents(m, records)),
        ("status", _status(m.status, run_dir)),
        (
            "episodes",
            f"{done}/{m.episodes_planned} done (tasks: {len(m.tasks)}, epochs: {m.epochs})",
        ),
        ("usage", f"{tokens:,} tokens, cost {cost}"),
        ("started", f"{_when(m.started_at)} (duration {duration})"),
        *_phases(records),
        *_executor(m),
        ("seed", _seed(m, records)),
        *_made_by(m),
        *(("dataset", dataset_line(pin)) for pin in m.extra.get("datasets") or ()),
    ]
    origin = m.extra.get("rescored_from")
    if isinstance(origin, dict):  # written by gem-eval rescore
        scorer = f"scorer {origin.get('scorer')}" if origin.get("scorer") else "its scorers"
        first = f"gem-eval {origin.get('gem_eval_version')}"
        rows.append(("rescored", f"from {origin.get('run_id')} ({scorer}; first by {first})"))
    for name, value in rows:
        grid.add_row(f"[bold]{name}[/]", value if name == "status" else escape(value))
    return grid


def _executor(m: RunManifest) -> list[tuple[str, str]]:
    """Where the run played, when on a Ray cluster: its nodes and their episodes, the
    nodes lost and why, and the episodes played again elsewhere."""
    if m.executor != "ray":
        return []
    about = m.resources.get("ray") or {}
    nodes = about.get("nodes") or {}
    if not nodes:
        return [("executor", "ray")]
    played = ", ".join(f"{node}: {n}" for node, n in nodes.items())
    text = f"ray ({len(nodes)} node{'s' * (len(nodes) != 1)}: {played})"
    lost = about.get("lost") or {}
    if lost:
        text += "; lost " + "; ".join(str(why) for why in lost.values())
        retried = about.get("retried", 0)
        text += f"; {retried} episode{'s' * (retried != 1)} played again on another node"
    return [("executor", text)]


def _phases(records: list[EpisodeRecord]) -> list[tuple[str, str]]:
    """Where an episode's time went, on average (runs whose episodes timed phases)."""
    from gem_eval.phases import mean_phases, phases_line

    timed = [r.phases for r in records if r.phases]
    means = mean_phases(timed)
    if not means:
        return []
    return [("phases", f"{phases_line(means)} (mean of {len(timed)} episodes)")]


def _agents(m: RunManifest, records: list[EpisodeRecord]) -> str:
    """One line per agent that played the run: its version, episodes and mean times."""
    from gem_eval.records import DEFAULT_AGENT
    from gem_eval.store.agents import run_agents

    lines = []
    for play in run_agents(m, records):
        name = f"{play.agent} (gem-eval's own loop)" if play.agent == DEFAULT_AGENT else play.agent
        parts = [f"{play.episodes} episode{'s' * (play.episodes != 1)}"]
        if play.versions:
            parts.insert(0, f"version {', '.join(play.versions)}")
        times = [
            f"{what} {seconds:.1f} s"
            for what, seconds in (("setup", play.setup_s), ("run", play.run_s))
            if seconds is not None
        ]
        if times:
            parts.append("mean " + ", ".join(times))
        lines.append(f"{name}: {', '.join(parts)}")
    return "\n".join(lines)


def _seed(m: RunManifest, records: list[EpisodeRecord]) -> str:
    """The base seed the episodes played: sample ``i`` plays ``base + i`` (the run's
    ``--seed``, else the suite's ``defaults.seed``, else 0; the manifest holds only the
    first), read back from the records."""
    bases = sorted({r.seed - r.sample for r in records if r.seed is not None})
    if len(bases) == 1:
        return f"{bases[0]} (sample i plays seed {bases[0]} + i)"
    if bases:  # cannot come from one plan; show what is there
        return ", ".join(map(str, bases)) + " (per-sample base seeds)"
    return "-" if m.seed is None else str(m.seed)


def _made_by(m: RunManifest) -> list[tuple[str, str]]:
    """Which program played the run, and where: for an imported run, the source harness
    (its version and the host or code origin its log names) and then the import."""
    made = f"{m.gem_eval_version} (commit {m.git_commit or '-'}) on {m.host}"
    imported = m.extra.get("imported")
    if not isinstance(imported, dict):
        return [("gem-eval", made)]
    source = str(imported.get("source"))
    where = [str(imported[k]) for k in ("host", "origin") if imported.get(k)]
    commit = f" (commit {imported['commit']})" if imported.get("commit") else ""
    played = f"{imported.get('version') or 'version unknown'}{commit}"
    played += f" on {', '.join(where)}" if where else ""
    return [(source, played), ("imported", f"by gem-eval {made}")]


def _outcome_table(records: list[EpisodeRecord]) -> Table:
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    scores: dict[str, list[float]] = defaultdict(list)
    for r in records:
        counts[r.model][r.outcome] += 1
        if r.scored and r.score is not None:
            scores[r.model].append(r.score)
    outcomes = sorted({o for c in counts.values() for o in c})
    from gem_eval.cli.render import add_id_column

    table = Table(title="outcomes", title_justify="left")
    add_id_column(table, "model", counts, style="bold cyan")
    for outcome in outcomes:
        table.add_column(outcome, justify="right")
    table.add_column("mean score", justify="right")
    for model, c in sorted(counts.items()):
        s = scores[model]
        mean = f"{sum(s) / len(s):.3f}" if s else "-"
        table.add_row(model, *(str(c[o]) for o in outcomes), mean)
    return table
