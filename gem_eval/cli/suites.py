"""``gem-eval suites list``, ``show`` and ``validate``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gem_eval.cli.options import DEFAULT_REGISTRY, Registry

if TYPE_CHECKING:
    from gem_eval.suites import Suite

suites_app = typer.Typer(help="List, inspect and validate suites.", no_args_is_help=True)

DirsOption = Annotated[
    list[Path] | None,
    typer.Option("--dir", "-d", help="Also look for suites here (searched first)."),
]


@suites_app.command("list")
def list_command(dirs: DirsOption = None) -> None:
    """List the suites in the repo's suites/ directory and any --dir."""
    from rich.markup import escape
    from rich.table import Table

    from gem_eval.cli.render import add_id_column, print_whole
    from gem_eval.errors import UserError
    from gem_eval.suites import list_suites, load_suite

    found = list_suites(dirs)
    table = Table(title=f"{len(found)} suites", title_justify="left")
    add_id_column(table, "name", found)
    for column in ("tasks", "episodes", "description"):
        table.add_column(column, overflow="fold")
    add_id_column(table, "path", [_shown(p) for p in found.values()])
    for name, path in found.items():
        try:
            suite = load_suite(path)
        except UserError as exc:  # also a missing optional package (an extra): one row each
            table.add_row(name, "", "", f"[red]invalid: {escape(str(exc))}[/]", _shown(path))
            continue
        table.add_row(
            name,
            str(len(suite.tasks)),
            str(suite.episode_count()),
            escape(suite.description),
            _shown(path),
        )
    print_whole(table, drop=("path", "episodes", "tasks"))


@suites_app.command("show")
def show_command(
    suite: Annotated[
        str, typer.Argument(help="A suite name (smoke) or path, or a dataset NAME@VERSION.")
    ],
    dirs: DirsOption = None,
    registry: Registry = DEFAULT_REGISTRY,
) -> None:
    """Show a suite's defaults, tasks and episode count."""
    from gem_eval.suites import load_suite

    _render(load_suite(suite, search_dirs=dirs, registry=registry))


@suites_app.command("validate")
def validate_command(
    paths: Annotated[
        list[str], typer.Argument(help="Suite files (or names, or datasets NAME@VERSION).")
    ],
    registry: Registry = DEFAULT_REGISTRY,
) -> None:
    """Check suite files as a run would play them, building every task's envs (no
    sandbox, image or model is started); print "ok: N tasks, M episodes", or every
    mistake, one line each (file:line: field: message).

    Exits with 2 when any file is invalid.
    """
    from gem_eval.suites.check import check_file

    failed = False
    for path in paths:
        suite, problems = check_file(path, registry=registry)
        for problem in problems:
            typer.echo(f"error: {problem}", err=True)
        if problems or suite is None:
            failed = True
            continue
        shown = _shown(suite.path) if suite.path else path
        tasks, episodes = len(suite.tasks), suite.episode_count()
        typer.echo(f"ok: {_plural(tasks, 'task')}, {_plural(episodes, 'episode')} ({shown})")
    if failed:
        raise typer.Exit(2)


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _render(suite: Suite) -> None:
    import yaml
    from rich.markup import escape
    from rich.table import Table

    from gem_eval.cli.render import add_id_column, dataset_line, print_whole

    head = Table.grid(padding=(0, 2))
    head.add_row("[bold]suite[/]", escape(suite.name))
    if suite.path:
        head.add_row("[bold]path[/]", escape(_shown(suite.path)))
    if suite.description:
        head.add_row("[bold]description[/]", escape(suite.description))
    for pin in suite.datasets:
        head.add_row("[bold]dataset[/]", escape(dataset_line(pin)))
    head.add_row("[bold]hash[/]", suite.hash[:16])
    head.add_row("[bold]episodes[/]", f"{suite.episode_count()} per model")
    if suite.defaults:
        text = yaml.safe_dump(suite.defaults, sort_keys=False, width=1000).strip()
        head.add_row("[bold]defaults[/]", escape(text))
    print_whole(head)  # paths, hashes and commits whole, in a log as on a terminal

    table = Table(title=f"{len(suite.tasks)} tasks", title_justify="left")
    add_id_column(table, "id", [t.spec.id for t in suite.tasks])
    add_id_column(table, "env", [t.spec.env_id for t in suite.tasks])
    for column in ("args", "samples", "epochs", "max turns", "scorer", "source"):
        table.add_column(column, overflow="fold")
    for task in suite.tasks:
        spec = task.spec
        args = ", ".join(f"{k}={v}" for k, v in spec.env_kwargs.items())
        samples = f"{task.samples} rows" if task.rows is not None else str(task.samples)
        table.add_row(
            escape(spec.id),
            escape(spec.env_id),
            escape(args),
            samples,
            str(task.epochs),
            str(spec.limits.max_turns),
            spec.scorer,
            escape(task.source),
        )
    print_whole(table, drop=("source", "scorer", "epochs", "max turns", "samples", "args"))
