"""jupyter_toolhost: Claude Code's tool system, in a Jupyter kernel.

What each part owns (imports point down only):

- ``jupyter/``: the ``%%agent`` magic, approval widgets, renderers, kernel tools (IPython).
- ``loop``/``session``: the agent loop (model → tool_use → orchestrator → tool_result);
  ``sent``: the exact body and usage of each request a conversation sent.
- ``model/``: the ``Model`` protocol, the Anthropic client (the only importer of
  ``anthropic``), replay cassettes.
- ``orchestration/``: the per-call pipeline, batches, the streaming executor, sibling abort.
- ``permissions/``: modes, rules, settings, hooks, the decision function.
- ``results``: the three-layer result budget and persistence.
- ``tool``, ``context``, ``types``: the tool definition and the data every layer shares.
- ``tools/``: the built-in tools, one package each.

Importing this package stays light (no IPython, no anthropic): ``%load_ext`` must be fast.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Public name -> the module that defines it. Nothing is imported until first use, so
# `%load_ext jupyter_toolhost` stays fast (pydantic alone costs ~100 ms, anthropic ~1.5 s).
_LAZY = {
    "AbortSignal": "context",
    "ToolUseContext": "context",
    "Tool": "tool",
    "ToolOutput": "tool",
    "build_tool": "tool",
    "registered_tools": "tool",
    "tool": "tool",
    "PermissionAllow": "types",
    "PermissionAsk": "types",
    "PermissionDeny": "types",
    "PermissionResult": "types",
    "ToolCall": "types",
    "ToolError": "types",
    "ToolResult": "types",
    "Session": "session",
    "RunResult": "loop",
}

__all__ = [
    "AbortSignal",
    "PermissionAllow",
    "PermissionAsk",
    "PermissionDeny",
    "PermissionResult",
    "RunResult",
    "Session",
    "Tool",
    "ToolCall",
    "ToolError",
    "ToolOutput",
    "ToolResult",
    "ToolUseContext",
    "__version__",
    "build_tool",
    "registered_tools",
    "tool",
]

if TYPE_CHECKING:
    from .context import AbortSignal as AbortSignal
    from .context import ToolUseContext as ToolUseContext
    from .loop_state import RunResult as RunResult
    from .session import Session as Session
    from .tool import Tool as Tool
    from .tool import ToolOutput as ToolOutput
    from .tool import build_tool as build_tool
    from .tool import registered_tools as registered_tools
    from .tool import tool as tool
    from .types import PermissionAllow as PermissionAllow
    from .types import PermissionAsk as PermissionAsk
    from .types import PermissionDeny as PermissionDeny
    from .types import PermissionResult as PermissionResult
    from .types import ToolCall as ToolCall
    from .types import ToolError as ToolError
    from .types import ToolResult as ToolResult


class _Package(types.ModuleType):
    """Keeps `jupyter_toolhost.tool` meaning the `@tool` decorator.

    Importing the submodule `jupyter_toolhost.tool` would otherwise replace the attribute
    with the module; the module stays reachable through `sys.modules` (plain imports)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _LAZY and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


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
