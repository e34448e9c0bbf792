"""``--max-turns`` caps gem-eval's own loop: where agent programs play, the run says in
one line at its start that they keep their own turn limits."""

from __future__ import annotations

from gem_eval.records import ModelSpec, TaskSpec
from gem_eval.runner.plan import RunOptions
from gem_eval.runner.preflight import check_setup


def warnings(tasks: list[TaskSpec], overrides: dict[str, object]) -> list[str]:
    said: list[str] = []
    options = RunOptions(overrides=overrides)
    check_setup([ModelSpec(name="noop")], tasks, options, warn=said.append)
    return said


def test_max_turns_with_agent_programs_is_said_once() -> None:
    own = TaskSpec(id="a", env_id="game:Wordle-v0-easy")
    played = [
        TaskSpec(id="b", env_id="terminal:Task-v0", agent="terminus-2"),
        TaskSpec(id="c", env_id="terminal:Task-v0", agent="qwen-code"),
    ]
    capped = {"limits": {"max_turns": 3}}
    assert warnings([own, *played], capped) == [
        "--max-turns caps gem-eval's own loop only: qwen-code, terminus-2 keep their own "
        "turn limits (a suite task's agent_max_turns sets the agents that take one)"
    ]
    assert warnings([own], capped) == []  # gem-eval's loop alone: nothing to say
    assert warnings([own, *played], {}) == []  # not given
