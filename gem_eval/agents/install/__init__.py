"""Installed agents: programs the field runs on Terminal-Bench from a package registry
(mini-swe-agent from PyPI, Qwen Code from the npm registry), put in the task's container.

A container here reaches no package registry, so their packages are fetched on this
machine into gem-eval's cache and unpacked there once (:mod:`.fetch`), and every agent
program's container sees them read-only (:mod:`gem_eval.sandbox.agent_files`); each
episode then only links the agent's command into place (:class:`Installer`). An agent
program (Harbor's adapter, run with ``skip_install=True``) uses them so::

    installer = make_installer("mini-swe-agent")
    await installer.prepare()                   # Agent.start(): fetch, unpack (once)
    installed = await installer.install(episode.sandbox)   # Agent.play(), per episode
    # then run `installed.command` in the sandbox, calling episode.sandbox_base_url
"""

from __future__ import annotations

from gem_eval.agents.install.base import Installed, Installer, Platform
from gem_eval.agents.install.fetch import FetchError

__all__ = ["FetchError", "Installed", "Installer", "Platform", "make_installer"]


def make_installer(name: str) -> Installer:
    """The installer of the agent ``name`` (``mini-swe-agent``, ``qwen-code``), at the
    versions :mod:`gem_eval.agents.catalog` pins."""
    if name == "mini-swe-agent":
        from gem_eval.agents.install.mini_swe_agent import MiniSweAgentInstaller

        return MiniSweAgentInstaller()
    if name == "qwen-code":
        from gem_eval.agents.install.qwen_code import QwenCodeInstaller

        return QwenCodeInstaller()
    raise ValueError(f"no installer for agent {name!r}")
