"""``ReplayModel``: a model that answers with an episode's recorded outputs, in order.

Re-scoring (:mod:`gem_eval.runner.rescore`) plays a recorded episode again through a
fresh env and the same agent loop, with this model in place of the one that played it:
the env grades the same answers again, and no model is called.

When the env asks for a turn the record does not hold, the replay ends the way the
recorded episode ended there, if that end came from the model's side of the loop (a
``model_error``, or the time limit hit while it was answering); otherwise it raises
:class:`ReplayOverrun`: the replay has left the recorded episode (``overrun`` says so).
"""

from __future__ import annotations

import re

from gem_eval.clock import TimeLimitReached
from gem_eval.errors import GemEvalError, ModelCallError
from gem_eval.models.base import GenerateConfig, Message, Model, ModelOutput, ToolSchema
from gem_eval.trajectory import Trajectory

_STATUS = re.compile(r"^(\d{3}) (.*)$", re.DOTALL)


class ReplayOverrun(GemEvalError):
    """The env asked for more turns than the recorded episode has."""


class ReplayModel(Model):
    """Answers call ``i`` with the output of the recorded trajectory's step ``i``.

    Args:
        trajectory: The recorded episode.
        name: The model's name in results (the recorded model's).

    Attributes:
        calls: Outputs handed out so far.
        overrun: The env asked for a turn past the record (the replay diverged).
    """

    def __init__(self, trajectory: Trajectory, name: str) -> None:
        self.name = name
        self.trajectory = trajectory
        self.outputs = [step.output for step in trajectory.steps]
        # The recorded model could not call functions: the loop taught it the text
        # protocol, and the replay must be offered the tools the same way.
        self.supports_tools = trajectory.tool_mode == "native"
        self.calls = 0
        self.overrun = False

    async def generate(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        config: GenerateConfig | None = None,
    ) -> ModelOutput:
        index, self.calls = self.calls, self.calls + 1
        if index < len(self.outputs):
            return self.outputs[index]
        ending = self._recorded_end()
        if ending is not None:
            raise ending
        self.overrun = True
        raise ReplayOverrun(
            f"the env asked for turn {index + 1}; the record has {len(self.outputs)}"
        )

    def _recorded_end(self) -> BaseException | None:
        """The exception that ends the replay as the record ended after its last output:
        a refused call (``model_error``) or the time limit reached while waiting on the
        model. Any other end lies with the env or the loop, which the replay reproduces
        itself (or it diverged)."""
        traj = self.trajectory
        if traj.outcome == "truncated" and traj.truncated_by == "max_time":
            return TimeLimitReached("the recorded episode reached its time limit here")
        if traj.outcome == "model_error" and traj.error:
            found = _STATUS.match(traj.error)
            status, text = (int(found[1]), found[2]) if found else (None, traj.error)
            return ModelCallError(text, status=status, transient=False)
        return None
