"""Parsing `%%agent` option lines and `%agent` subcommands into plain data.

Pure functions with clear errors (`UsageError` carries the text shown in the cell); no
IPython here, so the magic and the input transformer share exactly one parser.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Literal, TypeAlias, cast, get_args

from ..core.types import CASSETTE_MODES as CASSETTE_MODES
from ..core.types import CassetteMode, PermissionMode
from .run_options import DISCLOSURES as DISCLOSURES
from .run_options import RUN_OPTION_NAMES, read_options, split_words
from .run_options import THINK_MIN as THINK_MIN
from .run_options import THINK_OFF as THINK_OFF
from .run_options import UsageError as UsageError
from .run_options import parse_cassette_mode as parse_cassette_mode
from .run_options import parse_disclosure as parse_disclosure
from .run_options import parse_mode as parse_mode
from .run_options import parse_think as parse_think
from .run_options import thinking_param as thinking_param

Subcommand: TypeAlias = Literal[
    "status",
    "reset",
    "mode",
    "allow",
    "ask",
    "deny",
    "rules",
    "tools",
    "history",
    "cost",
    "compact",
    "resume",
    "mcp",
    "help",
    "request",
    "check",
    "import-claude-settings",
    "cwd",
    "key",
    "debug",
    "output",
    "stop",
    "undo",
]
SUBCOMMANDS: tuple[Subcommand, ...] = get_args(Subcommand)

CELL_USAGE = (
    "%%agent [--model M] [--mode MODE] [--new] [--trust-folder] [--max-turns N] [--cassette PATH] "
    "[--cassette-mode auto|record|replay] [--tools A,B] [--disclosure STYLE] [--think N|off]"
    "\n<prompt lines>"
)
LINE_USAGE = (
    "%agent status | reset | stop | mode [MODE] | allow|ask|deny RULE [--save] | rules | tools | "
    "history [--timeline] | cost | request [N] | compact | resume [SESSION] | "
    "mcp [add NAME -- COMMAND ARGS... | restart NAME | remove NAME] | check TOOL INPUT | "
    "output PATH | import-claude-settings | cwd [PATH] | key | debug [on|off] | "
    "undo [N] [--yes] [--force] | help"
)


@dataclass(frozen=True, slots=True)
class CellOptions:
    """The options of one `%%agent` cell (None: use the session's or the config's)."""

    model: str | None = None
    mode: PermissionMode | None = None
    new: bool = False
    max_turns: int | None = None
    cassette: str | None = None
    cassette_mode: CassetteMode | None = None
    tools: tuple[str, ...] | None = None
    disclosure: str | None = None
    think: int | None = None
    """The thinking budget in tokens (`THINK_OFF`, 0: off; None: not given)."""
    trust_folder: bool = False
    """``--trust-folder``: the working folder's own settings apply to the new conversation
    without asking (see `permissions.settings.trust`)."""


@dataclass(frozen=True, slots=True)
class Command:
    """One `%agent` line: a subcommand, its positional argument and its flags."""

    name: Subcommand
    argument: str | None = None
    flags: frozenset[str] = field(default_factory=frozenset)
    words: tuple[str, ...] = ()
    """Every word after the subcommand, as given (what `mcp` reads)."""


def parse_cell_line(line: str) -> CellOptions:
    """The `%%agent ...` line into `CellOptions` (the options as `run_options` reads them)."""
    words = split_words(line)
    values, flags = read_options(
        words, names=RUN_OPTION_NAMES, flags=("--new", "--trust-folder"), usage=CELL_USAGE
    )
    return CellOptions(
        model=cast(str, values.get("model")) or None,
        mode=cast("PermissionMode | None", values.get("mode")),
        new="--new" in flags,
        trust_folder="--trust-folder" in flags,
        max_turns=cast("int | None", values.get("max_turns")),
        cassette=cast(str, values.get("cassette")) or None,
        cassette_mode=cast("CassetteMode | None", values.get("cassette_mode")),
        tools=cast("tuple[str, ...] | None", values.get("tools")),
        disclosure=cast("str | None", values.get("disclosure")),
        think=cast("int | None", values.get("think")),
    )


def parse_command(line: str) -> Command:
    """The `%agent ...` line into a `Command` (empty means `status`)."""
    if line.split(maxsplit=1)[:1] == ["check"]:  # its input is read raw, not as options
        return parse_check(line.strip()[len("check") :])
    words = split_words(line)
    if not words:
        return Command("status")
    head, rest = words[0], words[1:]
    name: Subcommand | None = next((s for s in SUBCOMMANDS if s == head), None)
    if name is None:
        raise UsageError(f"Unknown subcommand {head!r}.\nUsage: {LINE_USAGE}")
    if name == "mcp":
        return parse_mcp(rest)
    flags = frozenset(w for w in rest if w.startswith("--"))
    positional = [w for w in rest if not w.startswith("--")]
    allowed_flags = {"allow": {"--save"}, "ask": {"--save"}, "deny": {"--save"}}.get(name, set())
    if name == "history":
        allowed_flags = {"--timeline"}
    if name == "undo":
        allowed_flags = {"--yes", "--force"}
    unknown = flags - allowed_flags
    if unknown:
        raise UsageError(f"%agent {name} does not take {', '.join(sorted(unknown))}.")
    if name in ("allow", "ask", "deny"):
        if not positional:
            raise UsageError(f"%agent {name} needs a rule, e.g. %agent {name} 'Bash(ls *)'.")
        return Command(name, " ".join(positional), flags)  # a rule may contain spaces
    if name == "cwd" and positional:
        return Command(name, " ".join(positional), flags)  # a folder's name may hold spaces
    if name == "output":
        if not positional:
            raise UsageError(
                "%agent output needs the path a card shows, e.g. %agent output "
                ".toolhost/sessions/<session>/tool-results/<file>.txt"
            )
        return Command(name, " ".join(positional), flags)  # a path may contain spaces
    with_argument = ("mode", "resume", "request", "debug", "cwd", "undo")
    if len(positional) > 1 or (positional and name not in with_argument):
        takes = "one argument" if name in with_argument else "no argument"
        raise UsageError(f"%agent {name} takes {takes}.")
    argument = positional[0] if positional else None
    if name == "mode" and argument is not None:
        parse_mode(argument)
    if name == "request" and argument is not None:
        parse_turn(argument)
    if name == "debug" and argument not in (None, "on", "off"):
        raise UsageError("%agent debug takes on or off.")
    return Command(name, argument, flags)


CHECK_USAGE = (
    "%agent check TOOL INPUT: INPUT is JSON ({...}) or the text of the tool's main field, "
    'e.g. %agent check Bash "rm -rf build && ls" or %agent check Read secrets/key.txt'
)


def parse_check(rest: str) -> Command:
    """`%agent check TOOL INPUT`: `argument` is the tool; `words` holds the input text, with
    the flag ``--json`` when it is a JSON object. Text quoted as one word is unquoted; any
    other text is the rest of the line as written (a shell command keeps its quotes)."""
    tool, _, text = rest.strip().partition(" ")
    text = text.strip()
    if not tool or not text:
        raise UsageError(f"%agent check needs a tool and its input.\n{CHECK_USAGE}")
    if not text.startswith("{"):
        # JSON is read as typed: shell-style unquoting would take the quotes out of
        # {"command":"ls"} (one word to a shell).
        try:
            words = shlex.split(text)
        except ValueError:
            words = []
        if len(words) == 1:
            text = words[0]
    if not text.startswith("{"):
        return Command("check", tool, words=(text,))
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"The input is not valid JSON ({exc}).\n{CHECK_USAGE}") from None
    if not isinstance(value, dict):
        raise UsageError(f"The JSON input must be an object.\n{CHECK_USAGE}")
    return Command("check", tool, frozenset({"--json"}), (text,))


def parse_turn(value: str) -> int:
    """A turn number for `%agent request N`: from 1, or negative to count from the end."""
    try:
        turn = int(value)
    except ValueError:
        turn = 0
    if turn == 0:
        raise UsageError(
            f"%agent request takes a turn number (1 is the first, -1 the last), not {value!r}."
        )
    return turn


MCP_USAGE = (
    "%agent mcp                            list the MCP servers\n"
    "%agent mcp add NAME -- COMMAND ARGS   start a stdio server and offer its tools\n"
    "%agent mcp restart NAME               restart a server\n"
    "%agent mcp remove NAME                stop a server and forget it"
)


def parse_mcp(words: list[str]) -> Command:
    """`%agent mcp ...`: list, `add NAME -- COMMAND ARGS...`, `restart NAME`, `remove NAME`.

    `argument` is the action ("list" when none is given); `words` are the server name and,
    for `add`, the command and its arguments (which may themselves start with `--`).
    """
    if not words or words == ["list"]:
        return Command("mcp", "list")
    action, rest = words[0], words[1:]
    if action == "add":
        if len(rest) < 3 or rest[1] != "--":
            raise UsageError(f"%agent mcp add needs NAME -- COMMAND [ARGS...].\n{MCP_USAGE}")
        return Command("mcp", "add", words=(rest[0], *rest[2:]))
    if action in ("restart", "remove"):
        if len(rest) != 1:
            raise UsageError(f"%agent mcp {action} needs one server name.\n{MCP_USAGE}")
        return Command("mcp", action, words=(rest[0],))
    raise UsageError(f"Unknown %agent mcp action {action!r}.\n{MCP_USAGE}")


HELP = f"""Run an agent whose tools execute in this kernel.

Usage
-----
{CELL_USAGE}

    The cell body is the prompt; the conversation continues across %%agent cells
    until --new or %agent reset, which also end its scheduled prompts, background agents
    and background commands (the stop button and %agent stop stop the agents and
    commands and keep the schedules). --mode, --model, --cassette, --cassette-mode,
    --disclosure and --think stay in effect for the rest of the conversation; a new
    one starts from the c.ToolHost defaults.

{LINE_USAGE}

Options
-------
--model M        model name (else c.ToolHost.model, JUPYTER_TOOLHOST_MODEL, a default)
--mode MODE      the permission mode (as python -m jupyter_toolhost --mode and
                 Session(permission_mode=...)): default | acceptEdits |
                 bypassPermissions | dontAsk | plan | auto
--new            start a new conversation
--trust-folder   trust the working folder's own settings (.toolhost/settings.json:
                 hooks, MCP servers, allow rules, a wider mode) for the conversation this
                 cell starts, without asking: the way for headless runs
--max-turns N    at most N model requests for this cell
--cassette PATH  replay (or record) model answers from a cassette file: works offline
--cassette-mode auto|record|replay
                 what the cassette does; auto (the default) replays when the file
                 exists and records (with ANTHROPIC_API_KEY) when it does not
--tools A,B      offer only these tools
--disclosure STYLE
                 how deferred (MCP) tools reach the model: auto (the default: the API's
                 defer_loading when the model supports it, so a discovery keeps the
                 prompt cache; else discovered) | defer_loading | discovered |
                 server_bm25 | server_regex (the API's own tool search)
--think N|off    extended thinking with a budget of N tokens (at least 1024), or off
                 (the default). The thinking streams into a collapsed "Thinking"
                 section above the turn's tool cards; its tokens are billed as output
                 tokens, up to N per model response

API key
-------
Without ANTHROPIC_API_KEY (and without --cassette) a cell says so at once and sends
nothing. %agent key asks for the key without showing it and keeps it in this kernel's
environment only; %env ANTHROPIC_API_KEY=... does the same from a cell (which then holds
the key). --cassette PATH replays a recorded conversation with no key at all.

Errors
------
A failed run ends its cell with one line saying what failed; %agent debug on shows the
full traceback instead (%agent debug off: one line again).

Approvals
---------
A call that needs approval shows buttons in the cell: Allow, Always allow, Deny (Deny
opens a field to tell the model what to do instead). Headless runs (nbclient, nbval, CI)
should use --mode dontAsk with allow rules; c.ToolHost.approval_timeout (or the
JUPYTER_TOOLHOST_APPROVAL_TIMEOUT environment variable) turns an unanswered prompt into a
deny after that many seconds. A plan the model presents (ExitPlanMode) is shown rendered,
under "Approve this plan?", with the same buttons.

Folder trust
------------
Before a conversation's first prompt, a folder whose own settings would run commands or
allow more (hooks, MCP servers, allow rules, a wider mode) is asked about in the cell:
Trust this folder / Don't trust, with each command listed. Until it is trusted only its
deny and ask rules apply. A trust is kept in ~/.toolhost/trusted-folders.json; headless
runs trust only with --trust-folder or "trustedFolders" in ~/.toolhost/settings.json.
%agent status says whether the folder is trusted and what is held back.

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

Checking permissions
--------------------
%agent check TOOL INPUT shows what the permission engine decides for one call in every
mode (allow, ask or deny), the rule and settings file behind it, how a shell command was
parsed, and what "Always allow" would add, without running the call or asking anyone.
INPUT is JSON ({{...}}) or the tool's main field: %agent check Bash "rm -rf build && ls",
%agent check Read secrets/key.txt. PreToolUse hooks are not run; auto is shown as it is
without a classifier answer. In Python: session.check("Bash", "ls > out.txt").

Claude Code settings
--------------------
Off by default: another program's allow rules would widen what runs here.
%agent import-claude-settings reads ~/.claude/settings.json, .claude/settings.json and
.claude/settings.local.json into this conversation; "importClaudeCodeSettings": true in
.toolhost/settings.json does it for every session. Taken: permissions.allow/ask/deny (same
tool names and rule syntax; deny and ask apply as written), additionalDirectories, and
command hooks. Not taken: defaultMode (the mode stays this project's to choose).
%agent rules shows each imported rule with its .claude file.

History
-------
%agent history lists the session's tool calls; --timeline draws them on one time axis
(SVG): batches grouped, time spent waiting for approval hatched, failed, denied,
interrupted and sibling-cancelled calls marked, a tooltip on everything. Below the calls it
lists the checkpoints: the files each cell's Write, Edit and NotebookEdit calls changed.

%agent undo [N] shows the diff of a cell's changes (the newest not undone, or checkpoint N)
and restores the files once you confirm; --yes confirms in the line (for unattended runs),
--force also overwrites files changed since the agent wrote them. What an undo replaces is
kept as a checkpoint too. Limit: JUPYTER_TOOLHOST_CHECKPOINT_LIMIT bytes (default 50 MB).

Working folder
--------------
Paths, Bash, settings files (.toolhost/settings.json) and saved results use the working
folder: %agent cwd PATH, else c.ToolHost.root_dir, else the KERNEL_TOOLHOST_ROOT
environment variable, else the notebook's folder (JPY_SESSION_NAME, or KERNEL_WORKING_DIR
from a gateway) when it is on the kernel's machine, else the kernel's own folder. The
kernel moves there too. %agent cwd shows it, where it came from and the settings files in
force; a new conversation's first cell says so in one line when it is not the notebook's
folder (a kernel behind a gateway).

Configuration
-------------
c.ToolHost.model, .permission_mode (--mode), .max_turns, .cassette,
.cassette_mode (--cassette-mode), .tools, .kernel_tools, .approval_timeout,
.disclosure (--disclosure), .think (--think), .root_dir (the working folder)

Requests
--------
%agent request [N] shows exactly what turn N (default: the last) sent to the model: the
system prompt, the tools (deferred ones and the cache breakpoint marked), the messages
(each tool_use linked to its tool_result) and the API parameters, each with its size in
bytes and tokens, the turn's cache reads and writes, and what deferral saved.
session.request(N) returns the body as a dict.

Saved results
-------------
%agent output PATH shows a saved tool result (the path its card shows) whole, in the cell,
read through the kernel: no server access to the hidden .toolhost/ folder is needed.

Prompts while one runs
----------------------
A scheduled prompt (CronCreate) that fires while a cell runs waits for the running
prompt to end, then runs; the running cell shows a "queued" notice saying so. It never
interrupts the cell: the stop button does that.

The kernel stop button interrupts the agent: cancellable tools stop, the conversation stays
valid and the next cell continues it.
"""
