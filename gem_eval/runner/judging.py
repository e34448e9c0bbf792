"""Judging episodes: a ``scorer: judge`` task's record gets its score from a judge model.

* :func:`judge_record` judges one recorded episode (played now, or read back from a
  run: ``gem-eval rescore`` judges without playing again).
* :class:`Judges` holds a run's judge models for an executor: one per distinct judge
  (model, server, key, call policy), built through the run's model factory, started,
  checked and closed with the executor.

The judge's tokens and cost stay in ``record.judge.usage``; the record's
``input_tokens``/``output_tokens``/``cost_usd`` remain the judged model's alone.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from gem_eval.budget import Budget
from gem_eval.errors import ModelCallError, UserError
from gem_eval.judge import JudgeSpec, JudgeVerdict, judge_answer
from gem_eval.models.base import GenerateConfig, Message, Model, ModelOutput, ToolSchema
from gem_eval.outcomes import is_scored, is_zeroed
from gem_eval.records import EpisodeRecord, EpisodeSpec, ModelSpec, TaskSpec
from gem_eval.runner.scoring import gave_up
from gem_eval.trajectory import Trajectory

JUDGE_SALT = {"role": "judge"}
"""The response cache's salt for judge calls: their entries stay apart from episodes'."""


def final_answer(trajectory: Trajectory) -> str:
    """What the model last gave the env as its answer (``""``: none)."""
    for step in reversed(trajectory.steps):
        if step.action:
            return step.action
    return ""


def render_transcript(trajectory: Trajectory) -> str:
    """The conversation as plain text, for a rubric's ``{transcript}``."""
    lines = []
    for message in trajectory.messages:
        content = message.get("content") or ""
        if not isinstance(content, str):  # a list of content parts
            content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        calls = message.get("tool_calls") or []
        for call in calls:
            function = call.get("function", {}) if isinstance(call, dict) else {}
            content += f"\n[tool call] {function.get('name')}({function.get('arguments')})"
        lines.append(f"[{message.get('role', '?')}] {content.strip()}")
    return "\n\n".join(lines)


def reference_answer(env: Any) -> str | None:
    """The env's reference answer, if it exposes one (``answer``: the question envs'
    gold answer, drawn at reset); aliases are joined with `` / ``."""
    value = getattr(getattr(env, "unwrapped", env), "answer", None)
    if value is None:
        return None
    if isinstance(value, list | tuple):
        return " / ".join(str(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return str(value)


async def judge_record(
    record: EpisodeRecord,
    task: TaskSpec,
    judge_model: Model,
    *,
    target: str | None = None,
) -> EpisodeRecord:
    """``record`` judged by ``judge_model`` as ``task.judge`` says: a copy with the
    verdict in ``judge`` and its score.

    An episode that is not scored (an infrastructure failure) is returned as it is; one
    scored 0 whatever happened (``sandbox_lost``, ``tampered``) keeps its 0 unjudged. A
    ``judge_error`` record is judged again from its trajectory's outcome. When the judge
    fails, the copy is ``judge_error``: no score, replayed by ``--resume``.

    Args:
        record: A played episode's record (with its trajectory).
        task: Its task; ``task.judge`` names the rubric and grades.
        judge_model: The judge (started; the response cache's wrapper when caching).
        target: The reference answer; ``None``: the one an earlier verdict was shown.

    Raises:
        UserError: ``task`` has no judge.
    """
    spec = task.judge
    if spec is None:
        raise UserError(f"task {task.id!r}: scorer: judge needs a `judge:` (a judge model)")
    trajectory = record.trajectory
    outcome = record.outcome
    if outcome == "judge_error" and trajectory is not None:
        outcome = trajectory.outcome  # how the episode itself ended
    if trajectory is None or not is_scored(outcome) or is_zeroed(outcome):
        return record
    if target is None and record.judge is not None:
        target = record.judge.target
    verdict = await judge_answer(
        judge_model,
        spec,
        question=trajectory.initial_observation,
        answer=final_answer(trajectory),
        target=target,
        transcript=render_transcript(trajectory) if "{transcript}" in spec.rubric else "",
    )
    judged = verdict.score is not None
    return record.model_copy(
        update={
            "outcome": outcome if judged else "judge_error",
            "score": verdict.score,
            "success": judged and verdict.score == spec.full_score,
            "judge": verdict,
        }
    )


def judge_model_spec(spec: JudgeSpec) -> ModelSpec:
    """The judge as a model spec, for the run's model factory."""
    return ModelSpec(
        name=spec.model,
        base_url=spec.base_url,
        backend=spec.backend,
        api_key_env=spec.api_key_env,
        max_retries=spec.max_retries,
        timeout_s=spec.timeout_s,
        max_connections=spec.max_connections,
    )


class Judges:
    """A run's judge models, one per distinct judge of its tasks.

    Args:
        model_factory: Builds a model from a :class:`ModelSpec` (the run's factory).
    """

    def __init__(self, model_factory: Callable[[ModelSpec], Model]) -> None:
        self.model_factory = model_factory
        self.models: dict[tuple[Any, ...], Model] = {}

    async def start(
        self,
        tasks: list[TaskSpec],
        check: Callable[[Model], Awaitable[None]] | None = None,
    ) -> None:
        """Build, start and check the judges of ``tasks``: by default a server that
        cannot be reached or refuses the key stops the run before the first episode.

        Args:
            tasks: The run's tasks; those with ``scorer: judge`` need a judge.
            check: Checks a judge behind a server instead (the executor's, which lets a
                run served from the response cache go on without one).

        Raises:
            UserError: A ``scorer: judge`` task has no judge, or a judge cannot be used.
        """
        from gem_eval.models.chat_api import ChatAPIModel
        from gem_eval.models.preflight import check_server

        for task in tasks:
            if task.scorer != "judge":
                continue
            if task.judge is None:
                raise UserError(f"task {task.id!r}: scorer: judge needs a `judge:` (a model)")
            key = task.judge.connection()
            if key in self.models:
                continue
            model = self.model_factory(judge_model_spec(task.judge))
            self.models[key] = model  # closed by aclose, even if start fails
            await model.start()
            if isinstance(model, ChatAPIModel) and model.api_base is not None:
                if check is not None:
                    await check(model)
                else:
                    await check_server(model.name, model.api_base, model.api_key)

    def api_keys(self) -> list[str]:
        """The judges' API keys, for the run's redactor."""
        return [key for m in self.models.values() if (key := getattr(m, "api_key", None))]

    def model_for(self, spec: JudgeSpec, cache: Any = None) -> Model:
        """The judge model of ``spec`` (started by :meth:`start`), through ``cache``
        (a :class:`~gem_eval.models.response_cache.ResponseCache`) when given."""
        model = self.models.get(spec.connection())
        if model is None:
            raise UserError(f"judge {spec.model!r} was not started (Judges.start)")
        if cache is not None:
            from gem_eval.models.response_cache import CachedModel, cacheable

            if cacheable(model):
                model = CachedModel(model, cache, salt=JUDGE_SALT, backend=spec.backend)
        return model

    async def judge(
        self,
        spec: EpisodeSpec,
        record: EpisodeRecord,
        target: str | None,
        *,
        cache: Any = None,
        redact: Callable[[str], str] | None = None,
        budget: Budget | None = None,
    ) -> EpisodeRecord:
        """``record`` of the episode ``spec`` judged (see :func:`judge_record`), the
        verdict's text redacted. The judge's calls are held to the run's ``budget`` as
        the models' are: charged, and none starts once it is spent (``judge_error``)."""
        assert spec.task.judge is not None  # start() refused a judge task without one
        model = self.model_for(spec.task.judge, cache)
        if budget is not None:
            model = _Budgeted(model, budget)
        judged = await judge_record(record, spec.task, model, target=target)
        if judged.judge is not None and judged.judge is not record.judge:
            judged.judge = redacted(judged.judge, redact)
        judged.gave_up = gave_up(spec, judged.outcome)
        return judged

    async def aclose(self) -> None:
        try:
            for model in self.models.values():
                await model.aclose()
        finally:
            self.models.clear()


class _Budgeted(Model):
    """A judge held to the run's budget: no call starts once it is spent."""

    def __init__(self, inner: Model, budget: Budget) -> None:
        self.inner, self.budget, self.name = inner, budget, inner.name

    async def generate(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        config: GenerateConfig | None = None,
    ) -> ModelOutput:
        if self.budget.exhausted:
            raise ModelCallError(f"stopped: {self.budget.describe()}", transient=True)
        output = await self.inner.generate(messages, tools, config)
        self.budget.charge(output.usage.cost_usd)
        return output


def redacted(verdict: JudgeVerdict, redact: Callable[[str], str] | None) -> JudgeVerdict:
    """``verdict`` with secrets removed from the judge's text and error."""
    if redact is None:
        return verdict
    error = redact(verdict.error) if verdict.error is not None else None
    return verdict.model_copy(update={"explanation": redact(verdict.explanation), "error": error})
