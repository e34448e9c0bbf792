"""An agent program's calls, each stored as what it added to the call it extends, read
back whole: the prompts a trainer gets (``gem-eval rollout``) are the requests sent."""

from __future__ import annotations

from gem_eval.agents.episode import _Recorder
from gem_eval.endpoint import Call
from gem_eval.models.base import GenerateConfig, ModelOutput, ToolCall
from gem_eval.rl.transitions import transition_rows
from gem_eval.trajectory import Trajectory


def test_requests_stored_as_deltas_read_back_whole() -> None:
    traj = Trajectory(env_id="terminal:Task-v0", model="m", agent="fake")
    record = _Recorder(traj)
    first = [{"role": "user", "content": "task"}]
    call = ToolCall(id="c1", name="bash", arguments='{"cmd": "ls"}')
    out1 = ModelOutput(text="", tool_calls=[call])
    second = [*first, out1.message(), {"role": "tool", "tool_call_id": "c1", "content": "a b"}]
    out2 = ModelOutput(text="done")
    summarised = [{"role": "user", "content": "summary of the task so far"}]  # a new history
    sent = [first, second, summarised]
    for messages, output in [(first, out1), (second, out2), (summarised, ModelOutput(text="x"))]:
        record.heard(Call(messages, None, GenerateConfig(), output=output))
    assert [s.info["request"]["from"] for s in traj.steps] == [None, 0, None]
    assert traj.steps[1].info["request"]["messages"] == second[2:]  # only what it added
    assert traj.agent_requests() == sent
    rows = transition_rows(traj, 1.0)
    import json

    assert [json.loads(r["prompt"]) for r in rows] == sent
    assert json.loads(rows[0]["completion"])["tool_calls"][0]["function"]["name"] == "bash"
