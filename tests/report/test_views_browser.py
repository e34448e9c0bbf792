"""``gem-eval view`` in headless Chromium, as a user works it: ticking an older and a newer
run compares the newer against the older, and the page says which is which; an episode
shows the env's last reply (the model never read it) and its turns as a count."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gem_eval.report.server import ResultsServer
from tests.report.test_report_browser import Page
from tests.report.written import LAST_WORD, MODEL, TASK, TwoRuns, write_two_runs


@pytest.fixture
def page(browser: Any) -> Iterator[Page]:
    p = Page(browser)
    yield p
    p.page.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[TwoRuns, str]]:
    results = tmp_path / "results"
    results.mkdir()
    runs = write_two_runs(results)
    server = ResultsServer(results)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield runs, server.url
    server.shutdown()
    server.server_close()


def test_ticking_two_runs_compares_the_newer_against_the_older(
    page: Page, served: tuple[TwoRuns, str]
) -> None:
    runs, url = served
    p = page.open(url)
    assert p.locator("#runs a").all_inner_texts() == [runs.new, runs.old]  # newest first
    for run_id in (runs.new, runs.old):
        p.check(f'input[name="run"][value="{run_id}"]')
    p.click("button[type=submit]")
    p.wait_for_selector("#board tbody tr")
    assert p.locator("#gate-status").inner_text() == "FAIL"
    assert p.locator('#runs .run[data-role="baseline"] code').inner_text() == runs.old
    assert p.locator('#runs .run[data-role="new"] code').inner_text() == runs.new
    assert p.locator('#runs .run[data-role="baseline"]').inner_text().startswith("baseline ")
    page.shot("view-two-runs")
    assert page.errors == []


def test_the_baseline_can_be_chosen(page: Page, served: tuple[TwoRuns, str]) -> None:
    runs, url = served
    p = page.open(url)
    for run_id in (runs.new, runs.old):
        p.check(f'input[name="run"][value="{run_id}"]')
    p.check(f'input[name="base"][value="{runs.new}"]')
    p.click("button[type=submit]")
    p.wait_for_selector("#board tbody tr")
    assert p.locator("#gate-status").inner_text() == "PASS"
    assert p.locator('#runs .run[data-role="baseline"] code').inner_text() == runs.new
    assert page.errors == []


def test_an_episodes_turns_are_a_count(page: Page, served: tuple[TwoRuns, str]) -> None:
    runs, url = served
    p = page.open(url + "run/" + runs.new)
    turns = p.locator("#episode-list thead th").all_inner_texts().index("turns")
    shown = p.locator(f"#episode-list tbody td:nth-child({turns + 1})").all_inner_texts()
    assert shown and set(shown) == {"4"}
    # the leaderboard's turns are a mean, printed as `gem-eval leaderboard` prints it
    assert p.locator('#board td[data-col="turns"]').inner_text() == "4.0"
    assert page.errors == []


def test_an_episode_shows_the_envs_last_reply(page: Page, served: tuple[TwoRuns, str]) -> None:
    runs, url = served
    p = page.open(url + "run/" + runs.new)
    p.fill("#f-key", f"{MODEL}|{TASK}|0|0")
    rows = p.locator("#episode-list tbody tr")
    assert rows.count() == 1
    rows.first.click()
    view = p.locator("#episode-view")
    view.wait_for()
    assert LAST_WORD in view.locator(".msg").last.inner_text()
    assert LAST_WORD in view.locator(".steps tr.step").last.inner_text()
    assert "1 is too low." in view.locator(".steps tr.step").first.inner_text()
    page.shot("view-episode-last-reply")
    assert page.errors == []
