"""An agent program for tests: it asks the run's endpoint what to do (with the ``openai``
SDK, as a CLI agent would), runs each command it is told in the sandbox, and stops when
told ``done``."""

from __future__ import annotations

import asyncio
import time

from gem_eval.agents.base import Agent, AgentEpisode, AgentError, AgentResult


class FakeCli(Agent):
    name = "fake-cli"
    families = ("terminal",)
    source = "tests"
    records = "its calls"

    def __init__(self) -> None:
        self.started = False

    async def start(self) -> None:
        self.started = True

    async def play(self, episode: AgentEpisode) -> AgentResult:
        import openai

        began = time.monotonic()
        client = openai.AsyncOpenAI(
            base_url=episode.host_base_url, api_key=episode.api_key, max_retries=0
        )
        messages = [{"role": "user", "content": episode.instruction}]
        log, turns = [], []
        for _ in range(episode.max_turns or 5):
            try:
                reply = await client.chat.completions.create(model=episode.model, messages=messages)
            except openai.APIStatusError as exc:
                raise AgentError(f"the model answered {exc.status_code}") from exc
            command = reply.choices[0].message.content or ""
            messages.append({"role": "assistant", "content": command})
            if command.strip() == "done":
                break
            result = await episode.sandbox.exec(command, timeout=30)
            log.append(f"$ {command}\n{result.stdout}")
            turns.append({"commands": [command], "observation": result.stdout})
            messages.append(
                {"role": "user", "content": f"exit {result.exit_code}: {result.stdout}"}
            )
        return AgentResult(
            setup_s=0.0,
            run_s=time.monotonic() - began,
            version="1.0",
            files={"fake-cli.log": "".join(log)},
            turns=turns,
        )


class PersistentCli(FakeCli):
    """``fake-cli`` that retries a failed model call until its time is up, as Terminus-2
    and mini-swe-agent do (every 0.2 s: they back off longer, and so waste more)."""

    name = "fake-persistent-cli"

    async def play(self, episode: AgentEpisode) -> AgentResult:
        import openai

        began = time.monotonic()
        client = openai.AsyncOpenAI(
            base_url=episode.host_base_url, api_key=episode.api_key, max_retries=0
        )
        messages: list[dict[str, str]] = [{"role": "user", "content": episode.instruction}]
        deadline = began + (episode.timeout_s or 60.0)
        while time.monotonic() < deadline:
            try:
                reply = await client.chat.completions.create(model=episode.model, messages=messages)
            except openai.APIError:
                await asyncio.sleep(0.2)
                continue
            command = reply.choices[0].message.content or ""
            messages.append({"role": "assistant", "content": command})
            if command.strip() == "done":
                return AgentResult(run_s=time.monotonic() - began, version="1.0")
            result = await episode.sandbox.exec(command, timeout=30)
            messages.append({"role": "user", "content": f"exit {result.exit_code}"})
        return AgentResult(run_s=time.monotonic() - began, version="1.0", timed_out=True)
