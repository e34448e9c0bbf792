"""Reference agents for checking tasks: ``--model oracle`` and ``--model noop``.

* ``oracle`` plays whatever reference the env has (:func:`reference_kind`):

  - ``solution``: a hosted task's reference solution (the env's ``asolve``: a terminal
    task's ``solve.sh``, an MCP task's solution script), applied on the first turn,
    then "done";
  - ``move``: a game's oracle move (``oracle_action()``, as ``gem-eval play --policy
    oracle``), every turn;
  - ``answer``: a question's gold answer, written as the env reads answers: math
    ``\\boxed{gold}``, QA and reasoning-gym ``<answer>gold</answer>``, HumanEval its
    canonical solution in a code block.

  A healthy task gives it full marks. A run refuses, before its first episode and in one
  line, to play the oracle on a task with no reference (:meth:`OracleModel.check_tasks`);
  should one be reached anyway, the call fails as a configuration error, never as an
  infrastructure one.
* ``noop`` says it is done without doing anything. A healthy task gives it nothing.

Neither calls an API. ``gem-eval tasks check`` runs both on every task (the do-nothing
agent alone on tasks with no reference).
"""

from __future__ import annotations

from typing import Any, Literal

from gem_eval.errors import ModelCallError, UserError
from gem_eval.models.base import GenerateConfig, Message, Model, ModelOutput, ToolSchema
from gem_eval.records import TaskSpec

REFERENCE_MODELS = ("oracle", "noop")
DONE = "Done."
ReferenceKind = Literal["solution", "move", "answer"]
_LISTED = 5  # task ids named in a refusal


class NoopModel(Model):
    """Answers every turn with :data:`DONE`, touching nothing."""

    name = "noop"
    supports_tools = True

    async def generate(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        config: GenerateConfig | None = None,
    ) -> ModelOutput:
        return ModelOutput(text=DONE, finish_reason="stop", model=self.name)


class OracleModel(NoopModel):
    """Plays the episode's reference (see the module docstring); the executor binds it to
    the episode's env with :meth:`for_episode`.

    Args:
        env: The episode's env (``None``: not bound yet).
        refuse: :meth:`check_tasks` refuses tasks with no reference (``tasks check``
            turns it off: it plays the oracle only on tasks that have one).
    """

    name = "oracle"

    def __init__(self, env: Any = None, *, refuse: bool = True) -> None:
        self.env = env
        self.refuse = refuse
        self._solved = False

    def for_episode(self, env: Any) -> OracleModel:
        """A copy bound to ``env`` (one per episode)."""
        return OracleModel(env, refuse=self.refuse)

    def check_tasks(self, tasks: list[TaskSpec]) -> None:
        """Refuse, in one line, a run that would play the oracle on tasks with no reference.

        Raises:
            UserError: Naming the tasks (the first few) and what to do instead.
        """
        if not self.refuse:
            return
        missing = [task.id for task in tasks if lacks_reference(task)]
        if missing:
            shown = ", ".join(missing[:_LISTED]) + (", ..." if len(missing) > _LISTED else "")
            raise UserError(
                f"--model oracle: {len(missing)} task(s) have no reference to play ({shown}); "
                "the oracle plays a game's oracle move, a question's gold answer or a task's "
                "reference solution. `gem-eval tasks check` checks such tasks with the "
                "do-nothing agent"
            )

    async def generate(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        config: GenerateConfig | None = None,
    ) -> ModelOutput:
        if self.env is None:
            return await super().generate(messages, tools, config)
        env = self.env.unwrapped
        kind = reference_kind(env)
        if kind == "move":
            return self._say(str(env.oracle_action()))
        if kind == "answer":
            answer = gold_answer_action(env)
            if answer is None:
                raise ModelCallError(f"{env}: this sample has no gold answer", transient=False)
            return self._say(answer)
        if kind == "solution":
            if self._solved:
                return await super().generate(messages, tools, config)
            self._solved = True
            output = await env.asolve()
            return self._say(f"{DONE}\n\n(reference solution output)\n{output}".rstrip())
        raise ModelCallError(f"{env} has no reference for --model oracle", transient=False)

    def _say(self, text: str) -> ModelOutput:
        return ModelOutput(text=text, finish_reason="stop", model=self.name)


def reference_model(name: str) -> Model:
    """The reference agent called ``name`` (one of :data:`REFERENCE_MODELS`)."""
    return OracleModel() if name == "oracle" else NoopModel()


def reference_kind(env: Any) -> ReferenceKind | None:
    """What the oracle plays in ``env`` (an env or an env class), or ``None``: no reference.

    A class answers for every instance, except hosted envs, whose task directory decides:
    ``has_solution()`` when the env has it, else its task's ``solution``.
    """
    from gem_eval.envs.hosted import HostedEnv

    target = env if isinstance(env, type) else env.unwrapped
    cls = target if isinstance(target, type) else type(target)
    if issubclass(cls, HostedEnv):
        if isinstance(target, type):
            return "solution"  # each task decides: see lacks_reference
        has = getattr(target, "has_solution", None)
        if callable(has):
            return "solution" if has() else None
        task = getattr(target, "task", None)
        if task is not None and hasattr(task, "solution"):
            return "solution" if task.solution is not None else None
        return "solution" if cls.asolve is not HostedEnv.asolve else None
    if callable(getattr(cls, "oracle_action", None)):
        return "move"
    if issubclass(cls, _answer_classes()):
        return "answer"
    return None


def lacks_reference(task: TaskSpec) -> bool:
    """Whether a task of a suite surely has nothing for the oracle to play, known before
    any episode: from the env's class, or for a hosted env, from the env built on the
    task's directory. A task whose env cannot be built is not counted (its episodes
    will say why)."""
    from gem_eval.envs.hosted import HostedEnv
    from gem_eval.registration import make, spec

    try:
        factory = spec(task.env_id).load()
    except Exception:  # unknown or unloadable: its episodes report it
        return False
    if not isinstance(factory, type):
        return False  # a factory function: cannot tell without building a sample
    if not issubclass(factory, HostedEnv):
        return reference_kind(factory) is None
    try:
        env = make(task.env_id, **task.env_kwargs)
    except Exception:  # reported by its episodes (env_error)
        return False
    try:
        return reference_kind(env) is None
    finally:
        env.close()


def gold_answer_action(env: Any) -> str | None:
    """The gold answer of ``env``'s current sample, written as the env reads answers."""
    from gem_eval.envs.code.humaneval import HumanEvalEnv
    from gem_eval.envs.math.env import MathEnv
    from gem_eval.envs.math.extract import gold_answer
    from gem_eval.envs.qa.env import QAEnv
    from gem_eval.envs.rg.env import ReasoningGymEnv

    if isinstance(env, MathEnv):
        golds = env.answer if isinstance(env.answer, (list, tuple)) else [env.answer]
        gold = next(filter(None, map(gold_answer, golds)), None)
        return None if gold is None else f"\\boxed{{{gold}}}"
    if isinstance(env, QAEnv):
        return f"<answer>{env.golds[0]}</answer>" if env.golds else None
    if isinstance(env, ReasoningGymEnv):
        answer = (env.entry or {}).get("answer")
        return None if answer is None else f"<answer>{answer}</answer>"
    if isinstance(env, HumanEvalEnv):
        if env.canonical_solution is None or env.starter_code is None:
            return None
        return f"```python\n{env.starter_code}{env.canonical_solution}```"
    return None


def _answer_classes() -> tuple[type, ...]:
    """The question envs whose gold answer :func:`gold_answer_action` can write."""
    from gem_eval.envs.code.humaneval import HumanEvalEnv
    from gem_eval.envs.math.env import MathEnv
    from gem_eval.envs.qa.env import QAEnv
    from gem_eval.envs.rg.env import ReasoningGymEnv

    return (MathEnv, QAEnv, ReasoningGymEnv, HumanEvalEnv)
