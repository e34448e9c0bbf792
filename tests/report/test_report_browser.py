"""The report and ``gem-eval view`` in headless Chromium (Debian's package, driven by
Playwright): no console errors, the JSON leaderboard's numbers, a failing episode's tool
calls two clicks away, plots with one mark per model and group. A screenshot of each page
goes to ``results/screenshots/``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.report.conftest import SCREENSHOTS, Recorded
from tests.report.recorded import MODELS, ROOT, gem_eval


class Page:
    """A browser page that records console errors and uncaught exceptions."""

    def __init__(self, browser: Any) -> None:
        self.page = browser.new_page(viewport={"width": 1300, "height": 900})
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))

    def open(self, url: str) -> Any:
        self.page.goto(url)
        self.page.wait_for_load_state("load")
        return self.page

    def shot(self, name: str) -> None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


@pytest.fixture
def page(browser: Any) -> Iterator[Page]:
    p = Page(browser)
    yield p
    p.page.close()


@pytest.fixture(scope="module")
def report_file(recorded: Recorded, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("html") / "report.html"
    done = gem_eval("report", recorded.base, recorded.new, "-o", str(out), results=recorded.results)
    assert done.returncode == 0, done.stderr
    return out


def test_leaderboard_shows_the_json_numbers(
    page: Page, report_file: Path, recorded: Recorded
) -> None:
    p = page.open(report_file.as_uri())
    board = gem_eval(
        "leaderboard", recorded.base, recorded.new, "-f", "json", results=recorded.results
    )
    expected = json.loads(board.stdout)
    rows = p.locator("#board tbody tr")
    assert rows.count() == len(expected)
    assert sorted({r["model"] for r in expected}) == sorted(MODELS)
    for i, want in enumerate(expected):
        cells = rows.nth(i).locator("td")
        got = {
            cells.nth(j).get_attribute("data-col"): json.loads(
                cells.nth(j).get_attribute("data-value")
            )
            for j in range(cells.count())
        }
        assert got == want
        shown = rows.nth(i).locator('td[data-col="score"]').inner_text()
        assert shown == f"{want['score']:.3f}"
    # sorting by score, worst first, then best first
    p.click('#board th[data-col="score"]')
    scores = [float(s) for s in p.locator('#board td[data-col="score"]').all_inner_texts()]
    assert scores == sorted(scores, reverse=True)
    p.click('#board th[data-col="score"]')
    scores = [float(s) for s in p.locator('#board td[data-col="score"]').all_inner_texts()]
    assert scores == sorted(scores)
    assert p.locator("#gate-status").inner_text() == "PASS"
    page.shot("report")
    assert page.errors == []


def test_a_failing_episode_shows_its_tool_calls(page: Page, report_file: Path) -> None:
    p = page.open(report_file.as_uri())
    p.select_option("#f-model", "openai/weak")
    p.select_option("#f-task", "qa-search")
    p.select_option("#f-score", "zero")
    p.fill("#f-key", "|0|0")  # sample 0, epoch 0 of one run
    rows = p.locator("#episode-list tbody tr")
    assert rows.count() == 2  # the base run's and the new run's
    rows.first.click()
    view = p.locator("#episode-view")
    view.wait_for()
    assert view.locator("h3").inner_text() == "openai/weak|qa-search|0|0"
    calls = view.locator('.steps .tool-call[data-tool="search"]')
    assert calls.count() == 1
    assert calls.first.inner_text().startswith("search")  # its name
    assert '"query"' in calls.first.inner_text()  # its arguments
    folded = calls.first.locator("details")  # its output (the search results), folded
    assert "[1] " not in folded.inner_text()
    folded.locator("summary").click()
    assert "[1] Verran" in folded.inner_text()
    assert view.locator('.msg.assistant .tool-call[data-tool="search"]').count() == 1
    assert "nobody" in view.locator(".msg.assistant").last.inner_text()
    assert '"gold"' in view.inner_text()  # the grader's output
    page.shot("report-episode")
    assert page.errors == []


def test_a_failed_episode_is_two_clicks_from_the_leaderboard(page: Page, report_file: Path) -> None:
    p = page.open(report_file.as_uri())
    weak = p.locator('td[data-col="model"]', has_text="openai/weak")
    row = p.locator("#board tbody tr", has=weak)
    run = row.first.locator('td[data-col="run_id"]')  # a row per run, when it names one
    run_id = json.loads(run.get_attribute("data-value") or "null") if run.count() else None
    row.first.locator("a.failures").click()
    rows = p.locator("#episode-list tbody tr")
    assert rows.count() > 0
    models = p.locator("#episode-list tbody td:nth-child(2)").all_inner_texts()
    assert set(models) == {"openai/weak"}
    if run_id is not None:  # the failures of that row's run only
        assert set(p.locator("#episode-list tbody td:nth-child(1)").all_inner_texts()) == {run_id}
    scores = p.locator("#episode-list tbody td:nth-child(7)").all_inner_texts()
    assert scores and all(float(s) < 1 for s in scores)
    rows.first.click()
    assert p.locator("#episode-view h3").inner_text().startswith("openai/weak|")
    assert page.errors == []


def test_plots_have_one_mark_per_model_and_group(page: Page, report_file: Path) -> None:
    p = page.open(report_file.as_uri())
    marks = {
        plot: sum(
            p.locator(f'#plot-{plot} svg g[id^="{plot}-marks-{i}"] use').count()
            for i in range(len(MODELS))
        )
        for plot in ("task", "category", "turns", "passk")
    }
    # 2 models x 2 tasks, x 2 categories, x 1 point, x k in (1, 2); times the runs when
    # the leaderboard has a row per run (it never pools two runs)
    runs = 2 if p.locator('#board th[data-col="run_id"]').count() else 1
    assert marks == {"task": 4 * runs, "category": 4 * runs, "turns": 2 * runs, "passk": 4 * runs}
    if runs > 1:  # each run its own marker, named in the legend
        assert p.locator('#plot-task svg g[id="task-marks-0-run1"] use').count() == 2
        assert "baseline" in p.locator("#plot-task svg").inner_html()
    box = p.locator("#plot-task svg").bounding_box()
    assert box and box["width"] > 100 and box["height"] > 50  # drawn, not empty
    assert page.errors == []


def test_view_serves_a_run_list_and_a_run(page: Page, recorded: Recorded) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "gem_eval", "view", str(recorded.results)],
        cwd=ROOT, env=os.environ.copy(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stderr is not None
        line = proc.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert match, line + (proc.stderr.read() if proc.poll() is not None else "")
        p = page.open(match.group(0))
        links = p.locator("#runs a")
        assert sorted(links.all_inner_texts()) == sorted([recorded.base, recorded.new])
        page.shot("view-runs")
        p.click(f"text={recorded.new}")
        p.wait_for_selector("#board tbody tr")
        assert p.locator("#board tbody tr").count() == len(MODELS)
        assert p.locator("#episode-list tbody tr").count() == 20
        page.shot("view-run")
        assert page.errors == []
    finally:
        proc.terminate()
        proc.wait(timeout=10)
