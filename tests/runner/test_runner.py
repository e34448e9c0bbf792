"""The runner's scheduling, budget, cancellation and executor failures (no store)."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import pytest

from gem_eval.models import ModelOutput, ScriptedModel, Usage
from gem_eval.records import EpisodeRecord, EpisodeSpec, ModelSpec, TaskSpec
from gem_eval.runner import (
    EXIT_BUDGET,
    EXIT_CONFIG_ERROR,
    EXIT_HARNESS_ERROR,
    EXIT_INCOMPLETE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    Executor,
    LocalExecutor,
    Runner,
)
from gem_eval.runner.scoring import to_record
from gem_eval.tools.base import Tool, ToolResult
from gem_eval.tools.kit import KITS, SingleToolKit
from gem_eval.trajectory import Trajectory


def specs(n: int, env_id: str = "game:GuessTheNumber-v0-easy") -> list[EpisodeSpec]:
    task = TaskSpec(id="guess", env_id=env_id)
    model = ModelSpec(name="scripted")
    return [
        EpisodeSpec(
            key=EpisodeSpec.make_key("scripted", "guess", i, 0),
            task=task,
            model=model,
            sample=i,
            epoch=0,
            seed=i,
        )
        for i in range(n)
    ]


class FakeExecutor(Executor):
    """Sleeps, costs ``cost`` per episode, fails on the keys in ``fail``."""

    def __init__(
        self, delay: float = 0.01, cost: float = 0.0, fail: set[int] | None = None
    ) -> None:
        self.delay, self.cost, self.fail = delay, cost, fail or set()
        self.in_flight = self.peak = 0

    async def run(self, run_id: str, spec: EpisodeSpec) -> EpisodeRecord:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
            if spec.sample in self.fail:
                raise RuntimeError(f"executor broke on sample {spec.sample}")
            traj = Trajectory(env_id=spec.task.env_id, model=spec.model.name, success=True)
            traj.usage = Usage(input_tokens=1, cost_usd=self.cost)
            return to_record(run_id, spec, traj, time.time())
        finally:
            self.in_flight -= 1


def test_every_episode_is_played_with_bounded_concurrency() -> None:
    executor, seen = FakeExecutor(), []
    runner = Runner("run1", executor, [seen.append], concurrency=4)
    summary = asyncio.run(runner.run(specs(20)))
    assert (summary.status, summary.exit_code) == ("finished", EXIT_OK)
    assert sorted(r.sample for r in seen) == list(range(20))
    assert executor.peak == 4
    assert all(r.score == 1.0 and r.run_id == "run1" for r in seen)


def test_budget_stops_scheduling() -> None:
    seen: list[EpisodeRecord] = []
    runner = Runner("r", FakeExecutor(cost=1.0), [seen.append], concurrency=1, max_cost_usd=3.0)
    summary = asyncio.run(runner.run(specs(10)))
    assert (summary.status, summary.exit_code) == ("budget_exhausted", EXIT_BUDGET)
    assert len(seen) == 3 and summary.cost_usd == 3.0


def test_an_executor_that_raises_is_a_harness_error_and_the_run_goes_on() -> None:
    """The executor turns every expected failure into an outcome: an exception out of it
    is a bug in gem-eval, kept with its traceback, never scored, and the run fails."""
    seen: list[EpisodeRecord] = []
    runner = Runner("r", FakeExecutor(fail={2}), [seen.append], concurrency=2)
    summary = asyncio.run(runner.run(specs(5)))
    assert summary.exit_code == EXIT_HARNESS_ERROR and summary.outcomes["harness_error"] == 1
    assert summary.status == "failed" and "executor broke on sample 2" in (summary.failure() or "")
    broken = next(r for r in seen if r.sample == 2)
    assert broken.score is None and not broken.scored
    assert broken.trajectory is not None
    assert "executor broke on sample 2" in (broken.trajectory.error or "")
    assert "RuntimeError" in (broken.trajectory.traceback or "")
    assert len(seen) == 5


class OutcomeExecutor(Executor):
    """Ends each episode with the outcome its sample names (after ``delay`` seconds)."""

    def __init__(self, outcomes: dict[int, str], delay: float = 0.01) -> None:
        self.outcomes, self.delay = outcomes, delay
        self.started: list[int] = []

    async def run(self, run_id: str, spec: EpisodeSpec) -> EpisodeRecord:
        self.started.append(spec.sample)
        await asyncio.sleep(self.delay)
        outcome = self.outcomes.get(spec.sample, "completed")
        traj = Trajectory(
            env_id=spec.task.env_id,
            model=spec.model.name,
            outcome=outcome,  # type: ignore[arg-type]
            error=None if outcome == "completed" else f"{outcome} on {spec.sample}",
        )
        return to_record(run_id, spec, traj, time.time())


def test_a_configuration_error_stops_the_run() -> None:
    """A refused key fails every episode the same way: the runner stops scheduling,
    cancels what is in flight, and the run exits 2 naming the model and the cause."""
    seen: list[EpisodeRecord] = []
    executor = OutcomeExecutor({1: "config_error"}, delay=0.05)
    runner = Runner("r", executor, [seen.append], concurrency=2)
    summary = asyncio.run(runner.run(specs(50)))
    assert summary.exit_code == EXIT_CONFIG_ERROR and summary.status == "failed"
    assert summary.stopped_by == "model 'scripted': config_error on 1"
    assert len(executor.started) < 10  # it stopped, it did not play the other 48
    assert summary.outcomes["config_error"] == 1 and not any(
        r.scored for r in seen if r.outcome != "completed"
    )


@pytest.mark.parametrize(
    ("outcomes", "status", "code"),
    [
        ({}, "finished", EXIT_OK),
        ({1: "model_error"}, "finished", EXIT_OK),  # scored: the model's doing
        ({1: "infra_error"}, "incomplete", EXIT_INCOMPLETE),
        ({1: "env_error", 2: "infra_error"}, "incomplete", EXIT_INCOMPLETE),
        ({0: "infra_error", 1: "infra_error", 2: "infra_error"}, "incomplete", EXIT_INCOMPLETE),
        ({1: "harness_error", 2: "infra_error"}, "failed", EXIT_HARNESS_ERROR),
    ],
)
def test_the_status_and_exit_code_say_what_happened(
    outcomes: dict[int, str], status: str, code: int
) -> None:
    """A run whose episodes all errored is not "finished"."""
    summary = asyncio.run(Runner("r", OutcomeExecutor(outcomes), [], concurrency=2).run(specs(3)))
    assert (summary.status, summary.exit_code) == (status, code)
    for outcome in set(outcomes.values()):
        assert summary.first_errors[outcome].startswith(outcome)


def test_cancelling_records_in_flight_episodes_as_cancelled() -> None:
    seen: list[EpisodeRecord] = []
    runner = Runner("r", FakeExecutor(delay=0.2), [seen.append], concurrency=3)

    async def main() -> object:
        task = asyncio.create_task(runner.run(specs(9)))
        await asyncio.sleep(0.3)  # the first 3 finished, 3 more in flight
        task.cancel()
        return await task

    summary = asyncio.run(main())
    assert (summary.status, summary.exit_code) == ("interrupted", EXIT_INTERRUPTED)  # type: ignore[attr-defined]
    outcomes = sorted(r.outcome for r in seen)
    assert outcomes == ["cancelled"] * 3 + ["completed"] * 3
    assert all(r.score is None for r in seen if r.outcome == "cancelled")


def test_local_executor_plays_a_real_env_with_a_model() -> None:
    replies = ["\\boxed{5}", "\\boxed{8}", "\\boxed{7}"]
    executor = LocalExecutor(lambda spec: ScriptedModel(replies, name=spec.name))
    seen: list[EpisodeRecord] = []

    async def main() -> None:
        await executor.start([ModelSpec(name="scripted")])
        await Runner("r", executor, [seen.append]).run(specs(1))
        await executor.aclose()

    asyncio.run(main())
    [record] = seen
    assert record.outcome == "completed" and record.success and record.score == 1.0
    assert record.turns == 3 and record.trajectory is not None
    assert record.trajectory.seed == 0


def test_scorers() -> None:
    from gem_eval.models.base import ModelOutput
    from gem_eval.runner import score
    from gem_eval.trajectory import Step

    steps = [
        Step(index=i, output=ModelOutput(), action="a", reward=r) for i, r in enumerate([0.5, 1.0])
    ]
    traj = Trajectory(env_id="x", model="m", success=True, steps=steps)
    assert score(traj, "success", 1.0) == 1.0
    assert score(traj, "return", 1.0) == 1.5
    assert score(traj, "discounted_return", 0.5) == 1.0
    traj.outcome = "model_error"
    assert score(traj, "success", 1.0) == 1.0  # scored: the model's own failure counts
    traj.outcome = "infra_error"
    assert score(traj, "success", 1.0) is None


def test_unknown_tools_are_a_user_error() -> None:
    from gem_eval.errors import UserError

    executor = LocalExecutor(lambda spec: ScriptedModel(["x"]))
    task = TaskSpec(id="t", env_id="game:GuessTheNumber-v0", tools=["pyhton"])
    with pytest.raises(UserError, match=r"unknown tool 'pyhton'.*Did you mean: python"):
        executor.check([task])


def test_a_failing_sink_stops_the_run_and_raises() -> None:
    written: list[EpisodeRecord] = []

    def disk(record: EpisodeRecord) -> None:
        if len(written) == 2:
            raise OSError("No space left on device")
        written.append(record)

    runner = Runner("r", FakeExecutor(), [disk], concurrency=2)
    with pytest.raises(OSError, match="No space left"):
        asyncio.run(runner.run(specs(10)))
    assert runner.summary.status == "failed"
    assert sum(runner.summary.outcomes.values()) == len(written) == 2  # counted = stored


def test_budget_counts_what_earlier_sessions_spent() -> None:
    seen: list[EpisodeRecord] = []
    runner = Runner(
        "r", FakeExecutor(cost=1.0), [seen.append], concurrency=1, max_cost_usd=3.0, spent_usd=2.0
    )
    summary = asyncio.run(runner.run(specs(10)))
    assert summary.status == "budget_exhausted" and len(seen) == 1


def test_any_unscored_outcome_gives_exit_3() -> None:
    from gem_eval.runner import RunSummary

    for outcome in ("cancelled", "infra_error", "env_error"):
        summary = RunSummary(status="finished")
        summary.outcomes[outcome] += 1
        assert summary.exit_code == EXIT_INCOMPLETE
    assert RunSummary(status="finished").exit_code == EXIT_OK


def test_a_task_the_env_rejects_is_a_config_error() -> None:
    executor = LocalExecutor(lambda spec: ScriptedModel(["x"], name=spec.name))
    bad = specs(1)[0]
    bad.task = bad.task.model_copy(update={"env_kwargs": {"max_turns": 0}})

    async def main() -> EpisodeRecord:
        await executor.start([ModelSpec(name="scripted")])
        return await executor.run("r", bad)

    record = asyncio.run(main())
    assert record.outcome == "config_error" and record.score is None  # never replayed
    assert "max_turns must be at least 1" in (record.trajectory.error or "")  # type: ignore[union-attr]


def test_generation_settings_merge_extras_flat() -> None:
    from gem_eval.runner.executor import generate_config

    config = generate_config(
        {"temperature": 0.2, "extra": {"top_k": 5}}, {"temperature": 0.7, "min_p": 0.1}
    )
    assert config.temperature == 0.7
    assert config.extra == {"top_k": 5, "min_p": 0.1}


class _Recorder(Tool):
    """A tool that made a file for its episode (as a terminal's recording)."""

    name = "recorder"
    description = "records"

    def __init__(self) -> None:
        self.parameters = {"type": "object", "properties": {}}

    async def call(self, args: dict[str, Any], sandbox: Any = None) -> ToolResult:
        return ToolResult(output="")

    def attachments(self) -> dict[str, str]:
        return {"session.cast": f"typed {os.environ['RECORDER_TEST_TOKEN']}\n"}


class RecorderKit(SingleToolKit):
    tool_class = _Recorder


def test_files_the_tools_made_come_with_the_record_redacted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(KITS, "recorder", f"{__name__}:RecorderKit")
    monkeypatch.setenv("RECORDER_TEST_TOKEN", "hunter2-secret-value")
    executor = LocalExecutor(lambda spec: ScriptedModel(["\\boxed{5}"], name=spec.name))
    [spec] = specs(1)
    task = TaskSpec.model_validate({**spec.task.model_dump(), "tools": ["recorder"]})
    spec = spec.model_copy(update={"task": task})
    seen: list[EpisodeRecord] = []

    async def main() -> None:
        await executor.start([ModelSpec(name="scripted")])
        await Runner("r", executor, [seen.append]).run([spec])
        await executor.aclose()

    asyncio.run(main())
    [record] = seen
    assert record.outcome == "completed", record.trajectory and record.trajectory.error
    assert record.take_files() == {"session.cast": "typed [REDACTED]\n"}


class _PricedModel(ScriptedModel):
    """Guesses 1, 2, 3 ... (never solving fast); each call costs $0.01 and takes a moment,
    so that episodes overlap."""

    async def generate(self, messages: Any, tools: Any = None, config: Any = None) -> Any:
        await asyncio.sleep(0.005)
        turn = sum(1 for m in messages if m["role"] == "assistant")
        return ModelOutput(text=f"\\boxed{{{turn + 1}}}", usage=Usage(cost_usd=0.01))


def test_no_model_call_starts_once_the_budget_is_spent() -> None:
    executor = LocalExecutor(lambda spec: _PricedModel(["x"], name=spec.name))
    seen: list[EpisodeRecord] = []
    runner = Runner("r", executor, [seen.append], concurrency=4, max_cost_usd=0.05)

    async def main() -> Any:
        await executor.start([ModelSpec(name="scripted")])
        summary = await runner.run(specs(20, env_id="game:GuessTheNumber-v0"))
        await executor.aclose()
        return summary

    summary = asyncio.run(main())
    spent = sum(r.cost_usd or 0.0 for r in seen)
    # Without the per-call check the four episodes in flight play on: ~10 calls each.
    assert 0.05 <= spent <= 0.05 + 4 * 0.01 + 1e-9
    assert runner.budget.spent == pytest.approx(spent)
    assert summary.status == "budget_exhausted" and summary.exit_code == EXIT_BUDGET
    cut = [r for r in seen if r.outcome == "cancelled"]
    assert cut and all(
        "--max-cost budget ($0.05) is spent" in (r.trajectory.error or "") for r in cut
    )
    assert all(r.score is None for r in cut)  # not scored: --resume plays them again
    assert len(seen) <= 4 + 1  # no episode was scheduled after the cap


def test_near_the_cap_episodes_in_flight_finish_and_are_scored() -> None:
    """64 in flight and a cap that pays for a few episodes: the runner starts only what
    the budget can carry (one first, to learn what an episode costs), so that episodes
    are scored rather than all cut mid-way when the cap is reached."""
    executor = LocalExecutor(lambda spec: _PricedModel(["x"], name=spec.name))
    seen: list[EpisodeRecord] = []
    runner = Runner("r", executor, [seen.append], concurrency=64, max_cost_usd=0.5)

    async def main() -> Any:
        await executor.start([ModelSpec(name="scripted")])
        summary = await runner.run(specs(64, env_id="game:GuessTheNumber-v0-easy"))
        await executor.aclose()
        return summary

    summary = asyncio.run(main())
    scored = [r for r in seen if r.scored]
    cut = [r for r in seen if r.outcome == "cancelled"]
    assert summary.status == "budget_exhausted" and len(seen) < 64
    assert len(scored) >= 3 and len(cut) <= len(scored) // 2, [r.outcome for r in seen]
    assert sum(r.cost_usd or 0.0 for r in seen) <= 0.5 + 1e-9 + 0.01 * len(cut)
    assert summary.held_back is None or "is expected to cost $" in summary.held_back


def test_a_forecast_learns_per_model_and_task() -> None:
    from gem_eval.budget import Forecast

    forecast = Forecast([("a", "t1", 1.0), ("a", "t1", 3.0), ("a", "t2", 10.0)])
    assert forecast.expected("a", "t1") == 2.0  # its own task's mean
    assert forecast.expected("a", "t3") == pytest.approx(14.0 / 3)  # the model's, any task
    assert forecast.expected("b", "t1") is None  # nothing known: a probe first
