"""The ``mcp`` tool kit: the tools of MCP servers, offered to the agent.

Servers are reached over stdio (a command on the host, or inside the episode's sandbox)
or streamable HTTP, with the official ``mcp`` SDK (``pip install 'gem-eval[mcp]'``). The
SDK is imported when a kit is opened, not when this package is.
"""

from __future__ import annotations

from gem_eval.tools.mcp.config import ServerConfig, parse_servers
from gem_eval.tools.mcp.connection import MCPConnection, ServerGoneError
from gem_eval.tools.mcp.sandbox_transport import BridgeLog, sandbox_stdio
from gem_eval.tools.mcp.tool import MCPKit, MCPTool, render

__all__ = [
    "BridgeLog",
    "MCPConnection",
    "MCPKit",
    "MCPTool",
    "ServerConfig",
    "ServerGoneError",
    "parse_servers",
    "render",
    "sandbox_stdio",
]
