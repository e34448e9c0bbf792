"""One short episode with the real local model (Gemma 3 270M served by llama.cpp).

Marked ``local_model``: it needs llama-cpp-python, which CI installs (``make test``).
"""

from __future__ import annotations

import asyncio
import socket

import pytest

from gem_eval import make
from gem_eval.agent import Limits, run_episode
from gem_eval.models import GenerateConfig, get_model
from gem_eval.trajectory import Trajectory

pytestmark = pytest.mark.local_model


@pytest.mark.parametrize("backend", ["litellm", "openai"])
def test_one_episode_with_the_real_local_model(backend: str) -> None:
    model = get_model("local/gemma3-270m", backend=backend)

    base_url = ""

    async def main() -> Trajectory:
        nonlocal base_url
        async with model:
            await model.start()
            base_url = model.base_url
            return await run_episode(
                make("game:GuessTheNumber-v0-easy"),
                model,
                limits=Limits(max_turns=2),
                seed=0,
                config=GenerateConfig(max_tokens=24, temperature=0.0),
            )

    traj = asyncio.run(main())
    assert traj.outcome in ("completed", "truncated"), traj.error
    assert len(traj.steps) >= 1
    first = traj.steps[0]
    assert first.output.usage.input_tokens > 0 and first.output.usage.output_tokens > 0
    assert first.action is not None and first.observation  # the env answered the reply
    assert traj.model == "local/gemma3-270m"
    port = int(base_url.rsplit(":", 1)[1].split("/")[0])
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass  # the server was stopped with the model
