"""Terminus-2 is told the run's model's context and output limits: it is given the model
as ``openai/<name>`` (the run's endpoint serves it), a name litellm may not know, where
``harbor run`` with the real name would know them; gem-eval looks the real name up in
litellm's offline map and passes what it finds as Terminus-2's ``model_info``, so the
limits Terminus-2 computes (and so when it summarises its context) are Harbor's."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from gem_eval.agents.base import AgentEpisode
from gem_eval.agents.episode import served_name
from gem_eval.agents.harbor.agents import Terminus2
from gem_eval.agents.model_limits import model_limits
from gem_eval.errors import UserError
from gem_eval.records import TaskSpec

MODELS = ["openai/gpt-4o-mini", "openai/gpt-4o", "anthropic/claude-sonnet-4-5", "openai/scripted"]
"""OpenAI's models (their served name is their own), another provider's (litellm knows
it only under its real name), and one litellm does not know (Harbor's fallback)."""


def episode(model: str, max_turns: int | None = None) -> AgentEpisode:
    """An episode of the run's ``model`` as gem-eval hands it to an agent."""
    return AgentEpisode(
        instruction="",
        sandbox=None,  # type: ignore[arg-type]  # not used by agent_kwargs
        model=served_name(model),
        host_base_url="http://127.0.0.1:1/v1",
        sandbox_base_url="http://127.0.0.1:1/v1",
        api_key="episode-token",
        task=TaskSpec(id="t", env_id="terminal:Task-v0"),
        timeout_s=None,
        logs_dir=Path("/nonexistent"),
        model_limits=model_limits(model),
        max_turns=max_turns,
    )


def test_the_limits_are_litellms_for_the_real_name() -> None:
    assert model_limits("openai/gpt-4o") == {
        "max_input_tokens": 128_000,
        "max_output_tokens": 16_384,
        "max_tokens": 16_384,
    }
    # Under the name Terminus-2 is given litellm knows none; under the real one it does.
    assert served_name("anthropic/claude-sonnet-4-5") == "openai/claude-sonnet-4-5"
    assert model_limits("openai/claude-sonnet-4-5") is None
    claude = model_limits("anthropic/claude-sonnet-4-5")
    assert claude is not None and claude["max_input_tokens"] >= 200_000
    for unknown in ("openai/scripted", "noop", "local/gemma3-270m", "hosted_vllm/my-model"):
        assert model_limits(unknown) is None


def test_without_litellm_there_are_no_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> None:
        raise UserError("litellm is not installed: pip install 'gem-eval[models]'")

    monkeypatch.setattr("gem_eval.models.litellm_model.import_litellm", missing)
    model_limits.cache_clear()
    try:
        assert model_limits("openai/gpt-4o-mini") is None
    finally:
        model_limits.cache_clear()


def test_terminus2_gets_the_limits_and_a_turn_cap_only_when_there_are_some() -> None:
    kwargs = Terminus2().agent_kwargs(episode("openai/gpt-4o-mini", max_turns=3))
    assert kwargs["model_info"] == model_limits("openai/gpt-4o-mini")
    assert kwargs["max_turns"] == 3
    # A model litellm does not know, no cap: Harbor's own fallback and limit, as before.
    assert Terminus2().agent_kwargs(episode("openai/scripted")) == {
        "api_base": "http://127.0.0.1:1/v1",
        "llm_kwargs": {"api_key": "episode-token"},
    }


PROBE = """
import json, sys
from pathlib import Path
from harbor.agents.factory import AgentFactory
from harbor.models.trial.config import AgentConfig

def limits(model, kwargs):
    config = AgentConfig(name="terminus-2", model_name=model, kwargs=kwargs)
    agent = AgentFactory.create_agent_from_config(config, logs_dir=Path(sys.argv[1]))
    return [agent._llm.get_model_context_limit(), agent._llm.get_model_output_limit()]

cases = json.loads(sys.stdin.read())
# Harbor run with each real name first: gem-eval's registrations come after its lookups.
harbor = [limits(c["real"], {}) for c in cases]
gem_eval = [limits(c["served"], c["kwargs"]) for c in cases]
print(json.dumps({"harbor": harbor, "gem_eval": gem_eval}))
"""


@pytest.mark.harbor
def test_terminus2_under_gem_eval_uses_the_limits_harbor_run_with_the_real_name_uses(
    tmp_path: Path,
) -> None:
    """In Harbor's venv: Terminus-2 made as ``harbor run --agent terminus-2 --model REAL``
    makes it, and as gem-eval's host makes it (the served name, gem-eval's keyword
    arguments); the context and output limits its model client computes are equal."""
    from gem_eval.agents.harbor.venv import harbor_venv, venv_python

    cases = [
        {"real": m, "served": served_name(m), "kwargs": Terminus2().agent_kwargs(episode(m))}
        for m in MODELS
    ]
    venv, _ = harbor_venv()
    done = subprocess.run(
        [str(venv_python(venv)), "-c", PROBE, str(tmp_path)],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HARBOR_TELEMETRY": "0"},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    by_model = dict(zip(MODELS, zip(map(tuple, found["harbor"]), map(tuple, found["gem_eval"]))))
    for model, (harbor, gem_eval) in by_model.items():
        assert gem_eval == harbor, model
    assert by_model["openai/gpt-4o-mini"][0] == (128_000, 16_384)
    assert by_model["anthropic/claude-sonnet-4-5"][0][0] >= 200_000  # not the fallback
    assert by_model["openai/scripted"][0] == (1_000_000, None)  # Harbor's fallback, both
