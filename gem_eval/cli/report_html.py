"""``gem-eval report`` (one self-contained HTML file) and ``gem-eval view`` (a local,
read-only server of the same pages). Thin: :mod:`gem_eval.report` does the work."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gem_eval.cli.options import DEFAULT_RESULTS_DIR, ResultsDir, check_results_dir, open_index
from gem_eval.errors import UserError


def report(
    runs: Annotated[
        list[str],
        typer.Argument(help="Run ids (or 'latest'); with two, the first is the baseline."),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="The HTML file to write.")] = Path(
        "report.html"
    ),
    gamma: Annotated[
        float, typer.Option(help="Discount of the per-turn returns-to-go shown.")
    ] = 1.0,
    results_dir: ResultsDir = DEFAULT_RESULTS_DIR,
) -> None:
    """Write one HTML file: leaderboard, plots, gate and comparison, and every transcript."""
    from gem_eval.report import report_html
    from gem_eval.returns import check_gamma
    from gem_eval.store import resolve_run

    try:
        check_gamma(gamma)
    except ValueError as exc:
        raise UserError(f"--gamma: {exc}") from None
    with open_index(results_dir) as index:
        known = index.runs()
        run_ids = list(dict.fromkeys(resolve_run(known, r)["run_id"] for r in runs))
        page = report_html(index, results_dir, run_ids, gamma=gamma)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    typer.echo(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB)")


def view(
    results: Annotated[
        Path | None, typer.Argument(help="The results directory (default: --results-dir).")
    ] = None,
    host: Annotated[
        str, typer.Option(help="The address to bind: loopback only unless you say otherwise.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="The port; 0 picks a free one.")] = 0,
    results_dir: ResultsDir = DEFAULT_RESULTS_DIR,
) -> None:
    """Serve the results directory read-only: a run list, and each run's report page."""
    from gem_eval.report.server import ResultsServer

    root = results if results is not None else results_dir
    check_results_dir(root)
    try:
        server = ResultsServer(root, host=host, port=port)
    except OSError as exc:
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    typer.echo(f"serving {root} at {server.url} (Ctrl-C stops)", err=False)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
