"""The Jupyter front end: magics, approval widgets, renderers, kernel-namespace tools.

`%load_ext jupyter_toolhost` stays light: it registers the magics and the input
transformer and reads the `ToolHost` config; the session, the model client (anthropic),
pydantic-heavy tool modules and ipywidgets are imported on the first `%%agent` cell.

Modules: `transformer` (the `%%agent` cell → one `await`), `magics` (thin), `options`
(argument parsing), `help_text` (`%agent help`, from the subcommand table), `host`
(per-kernel state and the cell's wait/interrupt logic),
`commands` (`%agent` subcommands; `mcp_command` for `%agent mcp`), `live`, `cards` and
`render` (what the cell shows), `approval` (the widget approver, plans included),
`questions` (the widget asker for AskUserQuestion), `kernel_tools` (PythonExec,
ListVariables, InspectVariable; `captured` holds what PythonExec shows and sends;
`variable_reach` what the two read-only ones may reach),
`timeline` (`%agent history --timeline`), `request_view` (`%agent request [N]`),
`results_comm` (saved results served to the lab extension over a comm).

Imports point one way (`tests/test_import_structure.py` checks that there is no cycle, lazy
and type-only imports included): `host` owns the kernel's state and builds sessions through
`agent` (which reads the host through a small Protocol, not by importing `host`);
`commands`, `mcp_command`, `magics` and `cell` build on `host`, and `host` imports none of
them. The imports that remain inside functions are all downward and are there only for
load time (the 150 ms `%load_ext` target): `host` importing `agent`, `approval`,
`questions`, `live`, `kernel_tools` and the tools on the first cell; `magics` and `cell`
importing `commands` on the first `%agent` line.
"""

from __future__ import annotations

from typing import Any


def load_ipython_extension(ipython: Any) -> None:
    """Register `%agent`/`%%agent`, the input transformer, and the kernel's host."""
    from . import cell, results_comm
    from .config import ToolHost
    from .host import AgentHost
    from .magics import ToolHostMagics
    from .transformer import make_transformer

    unload_ipython_extension(ipython)
    host = AgentHost(ipython, ToolHost(parent=ipython))
    cell.set_host(host)
    ipython.register_magics(ToolHostMagics(ipython, host))
    ipython.input_transformers_cleanup.append(make_transformer(ipython))
    results_comm.register(ipython)  # "Open full output" reads saved results through it


def unload_ipython_extension(ipython: Any) -> None:
    """Remove the input transformer (the magics stay registered, as IPython has no API to
    remove them; they are replaced on the next load)."""
    from . import cell

    transforms = ipython.input_transformers_cleanup
    transforms[:] = [t for t in transforms if not getattr(t, "toolhost", False)]
    cell.set_host(None)
