"""The HTML report of one or more runs (``gem-eval report``) and the local viewer
(``gem-eval view``).

* :mod:`~gem_eval.report.data` -- what the page shows, read from the results index and the
  run directories (the leaderboards are ``gem-eval leaderboard``'s).
* :mod:`~gem_eval.report.plots` -- the plots, matplotlib SVG.
* :mod:`~gem_eval.report.page` -- the self-contained HTML page.
* :mod:`~gem_eval.report.server` -- the read-only viewer of a results directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gem_eval.store import Index

__all__ = ["report_html"]


def report_html(index: Index, results_dir: Path, run_ids: list[str], gamma: float = 1.0) -> str:
    """The report page of ``run_ids`` (the first is the baseline when there are two).

    Raises:
        UserError: pandas or matplotlib is missing.
        GemEvalError: A run directory cannot be read.
    """
    from gem_eval.report import data, page

    if len(run_ids) == 2:
        title = f"gem-eval report: {run_ids[1]} against baseline {run_ids[0]}"
    else:
        title = "gem-eval report: " + ", ".join(run_ids)
    return page.render(data.build(index, results_dir, run_ids, gamma), title=title)
