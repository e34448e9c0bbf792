"""An episode's phases: timed where they happen, in the episode's own context (its tasks
and threads), nowhere else; summed per run for ``results show`` and the report."""

from __future__ import annotations

import asyncio
import time

import pytest

from gem_eval import phases
from gem_eval.phases import PHASES, clocked, mean_phases, phase, phases_line, remainder


def test_phases_add_up_in_the_episode_s_tasks_and_threads() -> None:
    async def episode() -> dict[str, float]:
        with clocked() as clock:
            with phase("sandbox_start"):
                await asyncio.sleep(0.05)
            # A task and a thread started by the episode time into its clock.
            await asyncio.ensure_future(_timed("setup", 0.03))
            await asyncio.to_thread(_sleep_in, "verifier", 0.04)
            with phase("verifier"):  # a phase met twice adds up
                await asyncio.sleep(0.02)
        return clock.seconds()

    seconds = asyncio.run(episode())
    assert list(seconds) == ["sandbox_start", "setup", "verifier"]  # in PHASES order
    assert seconds["sandbox_start"] == pytest.approx(0.05, abs=0.03)
    assert seconds["setup"] == pytest.approx(0.03, abs=0.03)
    assert seconds["verifier"] == pytest.approx(0.06, abs=0.03)


def test_two_episodes_at_once_keep_their_own_clocks() -> None:
    async def episode(seconds: float) -> dict[str, float]:
        with clocked() as clock, phase("agent"):
            await asyncio.sleep(seconds)
        return clock.seconds()

    async def both() -> list[dict[str, float]]:
        return list(await asyncio.gather(episode(0.02), episode(0.1)))

    short, long = asyncio.run(both())
    assert short["agent"] < 0.08 <= long["agent"]


def test_the_remainder_leaves_out_the_phases_inside_it() -> None:
    with clocked() as clock, remainder("agent"):
        time.sleep(0.05)
        with phase("verifier"):
            time.sleep(0.1)
    seconds = clock.seconds()
    assert seconds["verifier"] == pytest.approx(0.1, abs=0.04)
    assert seconds["agent"] == pytest.approx(0.05, abs=0.04)


def test_outside_an_episode_nothing_is_timed() -> None:
    assert phases.current() is None
    with phase("agent"), remainder("agent"):
        pass
    assert phases.current() is None


def test_means_over_a_run_and_the_line_that_shows_them() -> None:
    timed = [{"sandbox_start": 1.0, "agent": 3.0}, {"sandbox_start": 2.0, "verifier": 1.0}, {}]
    means = mean_phases(timed)
    assert means == {"sandbox_start": 1.5, "agent": 1.5, "verifier": 0.5}  # {} not counted
    assert list(means) == [p for p in PHASES if p in means]
    assert phases_line(means) == "sandbox_start 1.50 s, agent 1.50 s, verifier 0.50 s"
    assert mean_phases([]) == {}


def test_the_report_shows_each_run_s_phases() -> None:
    from gem_eval.report.data import ReportData
    from gem_eval.report.page import render

    runs = [{"run_id": "a", "label": "run 1", "phases": {"agent": 2.0, "verifier": 1.25}}]
    runs[0]["phases_timed"] = 4
    page = render(ReportData(runs=runs, boards={}))
    assert '<table id="phases-table">' in page
    assert "<td>run 1</td><td>4</td><td>2.00</td><td>1.25</td><td>3.25</td>" in page
    assert '<section id="phases">' not in render(ReportData(runs=[{"run_id": "b"}], boards={}))


async def _timed(name: str, seconds: float) -> None:
    with phase(name):
        await asyncio.sleep(seconds)


def _sleep_in(name: str, seconds: float) -> None:
    with phase(name):
        time.sleep(seconds)
