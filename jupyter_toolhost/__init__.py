"""jupyter_toolhost: Claude Code's tool system, in a Jupyter kernel.

What each part owns (imports point down only):

- ``jupyter/``: the ``%%agent`` magic, approval widgets, renderers, kernel tools (IPython).
- ``loop``/``session``: the agent loop (model → tool_use → orchestrator → tool_result).
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

from typing import TYPE_CHECKING, Any

from .context import AbortSignal, ToolUseContext
from .tool import Tool, ToolOutput, build_tool, registered_tools, tool
from .types import (
    PermissionAllow,
    PermissionAsk,
    PermissionDeny,
    PermissionResult,
    ToolCall,
    ToolError,
    ToolResult,
)

__version__ = "0.1.0"

__all__ = [
    "AbortSignal",
    "PermissionAllow",
    "PermissionAsk",
    "PermissionDeny",
    "PermissionResult",
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
    from .session import Session as Session

_LAZY = {"Session": ("session", "Session")}


def __getattr__(name: str) -> Any:
    """Import heavier parts (the loop and its model client) on first use only."""
    if name in _LAZY:
        from importlib import import_module

        module, attribute = _LAZY[name]
        return getattr(import_module(f".{module}", __name__), attribute)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext jupyter_toolhost`: register the magics (widgets are built on first use)."""
    from .jupyter import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from .jupyter import unload_ipython_extension as unload

    unload(ipython)
