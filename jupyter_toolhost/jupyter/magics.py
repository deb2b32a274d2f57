"""The `%agent` / `%%agent` magics: a thin shell that parses options and calls the host.

A `%%agent` cell normally never reaches the cell magic: the input transformer rewrites it
into an awaiting async cell (which is what lets approval clicks through while it runs). The
cell magic is the fallback for front ends that call `run_cell_magic` directly.
"""

from __future__ import annotations

from typing import Any

from IPython.core.magic import Magics, line_cell_magic, magics_class

from .options import CELL_USAGE, LINE_USAGE

HELP = f"""Run an agent whose tools execute in this kernel.

Usage
-----
{CELL_USAGE}

    The cell body is the prompt; the conversation continues across %%agent cells
    until --new or %agent reset. --mode, --model, --cassette and --cassette-mode stay in
    effect for the rest of the conversation; a new one starts from the c.ToolHost defaults.

{LINE_USAGE}

Options
-------
--model M        model name (else c.ToolHost.model, JUPYTER_TOOLHOST_MODEL, a default)
--mode MODE      the permission mode (as python -m jupyter_toolhost --mode and
                 Session(permission_mode=...)): default | acceptEdits |
                 bypassPermissions | dontAsk | plan | auto
--new            start a new conversation
--max-turns N    at most N model requests for this cell
--cassette PATH  replay (or record) model answers from a cassette file: works offline
--cassette-mode auto|record|replay
                 what the cassette does; auto (the default) replays when the file
                 exists and records (with ANTHROPIC_API_KEY) when it does not
--tools A,B      offer only these tools

Approvals
---------
A call that needs approval shows buttons in the cell: Allow, Always allow, Deny (Deny
opens a field to tell the model what to do instead). Headless runs (nbclient, nbval, CI)
should use --mode dontAsk with allow rules; c.ToolHost.approval_timeout (or the
JUPYTER_TOOLHOST_APPROVAL_TIMEOUT environment variable) turns an unanswered prompt into a
deny after that many seconds. A plan the model presents (ExitPlanMode) is shown rendered,
under "Approve this plan?", with the same buttons.

Questions
---------
When the model asks (AskUserQuestion), the cell shows each question with its options, an
"Other" field and Submit. In --mode dontAsk nobody is asked: the model is told to go on
with its best judgement; the approval timeout applies to questions too.

MCP servers
-----------
%agent mcp lists them; %agent mcp add NAME -- COMMAND ARGS... starts a stdio server for
this conversation (its tools are offered from the next request); restart NAME, remove NAME.
Servers for every session go in "mcpServers" of .toolhost/settings.json.

Configuration
-------------
c.ToolHost.model, .permission_mode (--mode), .max_turns, .cassette,
.cassette_mode (--cassette-mode), .tools, .kernel_tools, .approval_timeout

Prompts while one runs
----------------------
A scheduled prompt (CronCreate) that fires while a cell runs waits for the running
prompt to end, then runs; the running cell shows a "queued" notice saying so. It never
interrupts the cell: the stop button does that.

The kernel stop button interrupts the agent: cancellable tools stop, the conversation stays
valid and the next cell continues it.
"""


@magics_class
class ToolHostMagics(Magics):
    """Registers `%agent` and `%%agent` for one shell."""

    def __init__(self, shell: Any, host: Any) -> None:
        super().__init__(shell)
        self.host = host

    @line_cell_magic
    def agent(self, line: str, cell: str | None = None) -> Any:
        if cell is None:
            return self.host.command(line)
        return self.host.run_cell_blocking(line, cell)


ToolHostMagics.agent.__doc__ = HELP
