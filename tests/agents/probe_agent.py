"""An agent program for tests that runs inside the container, as installed agents do: a
Python script there asks the run's endpoint what to do (at ``sandbox_base_url``, with the
episode's token), runs the command it is told, and reports what else it could reach: the
endpoint with another token, ports of this machine, Debian's mirror."""

from __future__ import annotations

import json
import time
from typing import ClassVar

from gem_eval.agents.base import Agent, AgentEpisode, AgentError, AgentResult

PROBE = r"""
import json, os, socket, subprocess, urllib.error, urllib.parse, urllib.request

url, token = os.environ["URL"], os.environ["TOKEN"]
report = {"url": url}

def ask(key):
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "go"}]})
    request = urllib.request.Request(
        url + "/chat/completions", body.encode(),
        {"Authorization": "Bearer " + key, "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=20) as reply:
            return reply.status, json.load(reply)["choices"][0]["message"]["content"]
    except urllib.error.HTTPError as exc:
        return exc.code, None

report["other_token"] = ask("gem-not-this-episodes")[0]
status, command = ask(token)
report["status"], report["command"] = status, command
if command:
    report["exit"] = subprocess.run(command, shell=True).returncode
host = urllib.parse.urlsplit(url).hostname
report["ports"] = {}
for port in json.loads(os.environ.get("PORTS", "[]")):
    try:
        socket.create_connection((host, port), timeout=3).close()
        report["ports"][str(port)] = "open"
    except OSError as exc:
        report["ports"][str(port)] = type(exc).__name__
if os.environ.get("MIRROR"):
    try:
        urllib.request.urlopen(os.environ["MIRROR"], timeout=5)
        report["mirror"] = "reached"
    except Exception as exc:
        report["mirror"] = type(exc).__name__
print(json.dumps(report))
"""


class ProbeAgent(Agent):
    """See the module docstring; :attr:`ports` and :attr:`mirror` are what it tries."""

    name = "probe"
    families = ("terminal",)
    source = "tests"
    records = "its calls"
    ports: ClassVar[list[int]] = []
    mirror: ClassVar[str] = ""

    async def play(self, episode: AgentEpisode) -> AgentResult:
        began = time.monotonic()
        env = {
            "URL": episode.sandbox_base_url,
            "TOKEN": episode.api_key,
            "PORTS": json.dumps(self.ports),
            "MIRROR": self.mirror,
        }
        done = await episode.sandbox.exec(["python3", "-c", PROBE], timeout=120, env=env)
        if not done.ok:
            raise AgentError(f"the probe failed: {done.stderr.strip()[-300:]}")
        report = json.loads(done.stdout.strip().splitlines()[-1])
        return AgentResult(run_s=time.monotonic() - began, info={"probe": report})
