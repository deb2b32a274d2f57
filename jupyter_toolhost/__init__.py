"""jupyter_toolhost: Claude Code's tool system, in a Jupyter kernel.

What each part owns (imports point down only; `tests/test_import_structure.py` holds the
arrows, read from ``docs/architecture-layers.toml``):

- ``jupyter/``: the ``%%agent`` magic, approval widgets, renderers, kernel tools (IPython).
- ``agent/``: `Session` and the agent loop (model → tool_use → orchestrator → tool_result),
  the prompt, compaction, thinking, transcripts and the events a run reports.
- ``model/``: the ``Model`` protocol, the Anthropic client (the only importer of
  ``anthropic``), replay cassettes.
- ``mcp/``: MCP servers' tools and resources as tools.
- ``tools/``: the built-in tools, one package each.
- ``orchestration/``: the per-call pipeline, batches, the streaming executor, sibling abort.
- ``disclosure/``: deferred tools and ToolSearch's ranking.
- ``permissions/``: the decision (modes, guards, the engine), with ``rules/`` and
  ``settings/``.
- ``hooks/``: code run around tool calls and prompts; ``shell/``: the bash analysis library.
- ``core/``: the tool definition, the context, the data every layer shares, messages, the
  result budget.
- ``testing/``: the loopback Messages API server the tests and demos talk to.

Importing this package stays light (no IPython, no anthropic): ``%load_ext`` must be fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Public name -> the module that defines it. Nothing is imported until first use, so
# `%load_ext jupyter_toolhost` stays fast (pydantic alone costs ~100 ms, anthropic ~1.5 s).
_LAZY = {
    "AbortSignal": "core.context",
    "ToolUseContext": "core.context",
    "Tool": "core.tool",
    "ToolOutput": "core.tool",
    "build_tool": "core.tool",
    "registered_tools": "core.tool",
    "tool": "core.tool",
    "PermissionAllow": "core.types",
    "PermissionAsk": "core.types",
    "PermissionDeny": "core.types",
    "PermissionResult": "core.types",
    "ToolCall": "core.types",
    "ToolError": "core.types",
    "ToolResult": "core.types",
    "ToolhostError": "core.errors",
    "ConfigurationError": "core.errors",
    "UsageError": "core.errors",
    "ParseError": "core.errors",
    "McpError": "core.errors",
    "ToolInputError": "core.types",
    "ModelError": "model.base",
    "ModelAPIError": "model.base",
    "ModelUnreachable": "model.base",
    "StreamBroken": "model.base",
    "MissingCredentials": "model.anthropic_model",
    "SettingsError": "permissions.settings.settings_file",
    "RuleError": "permissions.rules.rules",
    "McpConfigError": "mcp.config",
    "Session": "agent.session",
    "SessionConfig": "agent.session_config",
    "RunResult": "agent.loop",
}

__all__ = [
    "AbortSignal",
    "ConfigurationError",
    "McpConfigError",
    "McpError",
    "MissingCredentials",
    "ModelAPIError",
    "ModelError",
    "ModelUnreachable",
    "ParseError",
    "PermissionAllow",
    "PermissionAsk",
    "PermissionDeny",
    "PermissionResult",
    "RuleError",
    "RunResult",
    "Session",
    "SessionConfig",
    "SettingsError",
    "StreamBroken",
    "Tool",
    "ToolCall",
    "ToolError",
    "ToolInputError",
    "ToolOutput",
    "ToolResult",
    "ToolUseContext",
    "ToolhostError",
    "UsageError",
    "__version__",
    "build_tool",
    "registered_tools",
    "tool",
]

if TYPE_CHECKING:
    from .agent.loop_state import RunResult as RunResult
    from .agent.session import Session as Session
    from .agent.session_config import SessionConfig as SessionConfig
    from .core.context import AbortSignal as AbortSignal
    from .core.context import ToolUseContext as ToolUseContext
    from .core.errors import ConfigurationError as ConfigurationError
    from .core.errors import McpError as McpError
    from .core.errors import ParseError as ParseError
    from .core.errors import ToolhostError as ToolhostError
    from .core.errors import UsageError as UsageError
    from .core.tool import Tool as Tool
    from .core.tool import ToolOutput as ToolOutput
    from .core.tool import build_tool as build_tool
    from .core.tool import registered_tools as registered_tools
    from .core.tool import tool as tool
    from .core.types import PermissionAllow as PermissionAllow
    from .core.types import PermissionAsk as PermissionAsk
    from .core.types import PermissionDeny as PermissionDeny
    from .core.types import PermissionResult as PermissionResult
    from .core.types import ToolCall as ToolCall
    from .core.types import ToolError as ToolError
    from .core.types import ToolInputError as ToolInputError
    from .core.types import ToolResult as ToolResult
    from .mcp.config import McpConfigError as McpConfigError
    from .model.anthropic_model import MissingCredentials as MissingCredentials
    from .model.base import ModelAPIError as ModelAPIError
    from .model.base import ModelError as ModelError
    from .model.base import ModelUnreachable as ModelUnreachable
    from .model.base import StreamBroken as StreamBroken
    from .permissions.rules.rules import RuleError as RuleError
    from .permissions.settings.settings_file import SettingsError as SettingsError


def __getattr__(name: str) -> Any:
    """Import the module behind a public name on first use only."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext jupyter_toolhost`: register the magics (widgets are built on first use)."""
    from .jupyter import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from .jupyter import unload_ipython_extension as unload

    unload(ipython)
