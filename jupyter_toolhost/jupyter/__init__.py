"""The Jupyter front end: the `%%agent` magic, prompts as widgets, views, kernel tools.

At the top: `host` (one kernel's agent state, how a cell runs, waits and is interrupted),
`agent` (the seam to `Session`: the host builds, updates and runs sessions only through it),
`cell` (what a transformed `%%agent` cell awaits, and the kernel's one `AgentHost`) and
`config` (`ToolHost`, the traitlets defaults). Below them, one sub-package per kind of part:

- `magic/`: reading and dispatching lines: the input transformer, the thin magics, the
  `%%agent` line's and the subcommands' argparse grammar, `%agent help`, the subcommands.
- `widgets/`: questions asked in the cell (approval, AskUserQuestion, folder trust) and
  how a widget is shown and answered while the cell awaits.
- `views/`: what a cell shows: mimebundles, HTML through `views.safe_html`, the live view,
  cards, the timeline, the request view.
- `kernel/`: the kernel-namespace tools (PythonExec, ListVariables, InspectVariable), what
  they capture and may reach, and saved results served to the lab extension.

Where the lazy imports are. `%load_ext jupyter_toolhost` must stay light (the 150 ms target
in docs/benchmarks.md): `load_ipython_extension` below imports `config`, `host`, `cell`,
`magic.magics`, `magic.transformer` and `kernel.results_comm`, and with them the light
views and the grammar, nothing more. Everything else is loaded on use, and `LOADED_ON_USE`
lists it: the only modules the front end imports inside a function. They are the boundary,
in three places: `host` loads the session's heavy half, the live view, the prompts, the
kernel tools and the settings on the first `%%agent` cell; `magic.magics` (and
`cell.run_agent_command`) load `magic.commands` on the first `%agent` line, which loads what
one subcommand needs when it runs; and the two heavy libraries stay behind doors of their
own: `anthropic` is imported only when `agent` makes a session (or `%agent status` asks
where a key comes from), `ipywidgets` only through `widgets.widget_prompt.ipywidgets`, i.e.
when a prompt is about to be shown (a headless run never imports it). IPython is the kernel
itself, so it is imported at module level wherever it is used.
`tests/jupyter/test_lazy_boundary.py` checks both halves: no other import sits in a
function, and `%load_ext` loads none of these.

Imports point one way (`tests/test_import_structure.py` checks that there is no cycle, lazy
and type-only imports included): `host` owns the kernel's state and builds sessions through
`agent` (which reads the host through a small Protocol, not by importing `host`);
`magic.commands`, `magic.mcp_command`, `magic.magics` and `cell` build on `host`, and
`host` imports none of them."""

from __future__ import annotations

from typing import Any

LOADED_ON_USE: frozenset[str] = frozenset(
    {
        # the first `%%agent` cell (`host`)
        "jupyter_toolhost.agent.events",
        "jupyter_toolhost.jupyter.kernel.attached",
        "jupyter_toolhost.jupyter.kernel.kernel_tools",
        "jupyter_toolhost.jupyter.magic.undo",
        "jupyter_toolhost.jupyter.views.live",
        "jupyter_toolhost.jupyter.widgets.approval",
        "jupyter_toolhost.jupyter.widgets.questions",
        "jupyter_toolhost.jupyter.widgets.trust_prompt",
        "jupyter_toolhost.model.cassette",
        "jupyter_toolhost.permissions.settings.managed",
        "jupyter_toolhost.permissions.settings.settings",
        "jupyter_toolhost.permissions.settings.trust",
        "jupyter_toolhost.tools",
        "jupyter_toolhost.tools.web_search",
        # the first `%agent` line (`magic.magics`, `cell`), then one subcommand's needs
        "jupyter_toolhost.jupyter.magic.commands",
        "jupyter_toolhost.jupyter.magic.mcp_command",
        "jupyter_toolhost.jupyter.views.check_display",
        "jupyter_toolhost.jupyter.views.request_view",
        "jupyter_toolhost.permissions.check",
        "jupyter_toolhost.permissions.rules.inactive",
        "jupyter_toolhost.permissions.rules.rules",
        "jupyter_toolhost.permissions.settings.claude_settings",
        # a session, and the API client with it (`agent`; `%agent status` for the key)
        "jupyter_toolhost.agent.session",
        "jupyter_toolhost.model.anthropic_model",
        # libraries: widgets when a prompt is shown, and what only some paths need
        "ipywidgets",
        "ipykernel.connect",
        "mistune",
        "nh3",
        "PIL",
    }
)
"""The modules the front end imports inside a function, and only those: `%load_ext` loads
none of them (see above)."""


def load_ipython_extension(ipython: Any) -> None:
    """Register `%agent`/`%%agent`, the input transformer, and the kernel's host."""
    from . import cell
    from .config import ToolHost
    from .host import AgentHost
    from .kernel.results_comm import register as register_results_comm
    from .magic.magics import ToolHostMagics
    from .magic.transformer import make_transformer

    unload_ipython_extension(ipython)
    host = AgentHost(ipython, ToolHost(parent=ipython))
    cell.set_host(host)
    ipython.register_magics(ToolHostMagics(ipython, host))
    ipython.input_transformers_cleanup.append(make_transformer(ipython))
    register_results_comm(ipython)  # "Open full output" reads saved results through it


def unload_ipython_extension(ipython: Any) -> None:
    """Remove the input transformer (the magics stay registered, as IPython has no API to
    remove them; they are replaced on the next load)."""
    from . import cell

    transforms = ipython.input_transformers_cleanup
    transforms[:] = [t for t in transforms if not getattr(t, "toolhost", False)]
    cell.set_host(None)
