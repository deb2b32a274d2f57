"""`%agent help`: a short usage made from the subcommand table, and a full reference per topic.

`SUBCOMMANDS_HELP` holds, for each `%agent` subcommand (`options.SUBCOMMANDS`, which a test
keeps equal to it), its grammar (what it takes, its ``--flags``: `options` builds the
subcommand's argparse parser from them), its group, usage, one-line summary and full
reference. `%agent help` prints the groups with one line per subcommand and a few examples
(under 50 lines); `%agent help NAME` prints the full reference of a subcommand or of a topic
(`TOPICS`: options, key, approvals, trust, questions, config); the magic's own docstring
(`%agent?`) holds all of it. `%agent help options` is argparse's text for the `%%agent` line's
parser (`cell_line`). `LINE_USAGE`, which a wrong subcommand is answered with, comes from the
same table; the usage lines the parser (`options`) quotes in its errors live here too, so
the parser imports this module and never the other way round."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from .cell_line import CELL_USAGE as CELL_USAGE
from .cell_line import OPTION_LIST

Takes: TypeAlias = Literal["nothing", "one", "words", "rule", "own"]
"""What a subcommand takes after its name: nothing; at most one word; any words, joined
with spaces (a folder's name may hold spaces); at least one word, joined (a rule may hold
spaces); or a grammar of its own (`options`: output, mcp, check)."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One subcommand: its grammar (what `options` builds its parser from) and its help."""

    group: str
    usage: str
    """What follows ``%agent`` ("allow|ask|deny RULE [--save]")."""
    summary: str
    details: str = ""
    """The full reference (`%agent help NAME`); the summary when empty."""
    takes: Takes = "nothing"
    flags: tuple[str, ...] = ()
    """The ``--flags`` it takes (each on or off)."""


OUTPUT_USAGE = (
    "%agent output PATH [--from LINE]: the path a card shows, e.g. %agent output "
    ".toolhost/sessions/<session>/tool-results/<file>.txt; --from shows the page that starts "
    "at that line"
)

CHECK_USAGE = (
    "%agent check TOOL INPUT: INPUT is JSON ({...}) or the text of the tool's main field, "
    'e.g. %agent check Bash "rm -rf build && ls" or %agent check Read secrets/key.txt'
)

MCP_USAGE = (
    "%agent mcp                            list the MCP servers\n"
    "%agent mcp add NAME -- COMMAND ARGS   start a stdio server and offer its tools\n"
    "%agent mcp restart NAME               restart a server\n"
    "%agent mcp remove NAME                stop a server and forget it"
)


GROUPS = ("Conversation", "Permissions", "Looking inside", "Setup")

SUBCOMMANDS_HELP: dict[str, Entry] = {
    "status": Entry(
        "Conversation",
        "status",
        "model, mode, API key, folder, session",
        "%agent status (or %agent alone) shows the model, the permission mode, whether an "
        "API key is set and where it comes from (never the key), the cassette, thinking, the "
        "session, the working folder, the settings files in force and the folder's trust.",
    ),
    "reset": Entry(
        "Conversation",
        "reset",
        "start the conversation over",
        "%agent reset ends the conversation: its scheduled prompts, background agents and "
        "background commands stop with it. The next %%agent cell starts a new one from the "
        "c.ToolHost defaults.",
    ),
    "stop": Entry(
        "Conversation",
        "stop",
        "stop background agents and commands",
        "%agent stop does what the kernel's stop button does to background work when no cell "
        "runs: background agents and commands stop; scheduled prompts go on.\n\n"
        "Prompts while one runs: a scheduled prompt (CronCreate) that fires while a cell runs "
        'waits for the running prompt to end, then runs; the running cell shows a "queued" '
        "notice saying so. It never interrupts the cell: the stop button does that. The stop "
        "button interrupts the agent: cancellable tools stop, the cell ends with its footer "
        "and one line, the conversation stays valid and the next cell continues it.",
    ),
    "compact": Entry(
        "Conversation",
        "compact",
        "summarise older turns (a cell of its own)",
        "%agent compact summarises the conversation's older turns now (it awaits the model: "
        "put it alone in a cell).",
    ),
    "resume": Entry(
        "Conversation",
        "resume [SESSION]",
        "list saved sessions, or continue one",
        "%agent resume lists the sessions saved under .toolhost/sessions; %agent resume "
        "SESSION continues that one, read back from its transcript.",
        takes="one",
    ),
    "mode": Entry(
        "Permissions",
        "mode [MODE]",
        "show or set the permission mode",
        "%agent mode shows the permission mode; %agent mode MODE sets it: default | "
        "acceptEdits | bypassPermissions | dontAsk | plan | auto (as --mode and "
        "Session(permission_mode=...)).",
        takes="one",
    ),
    "allow": Entry(
        "Permissions",
        "allow|ask|deny RULE [--save]",
        "add a rule (--save: into settings.json)",
        "%agent allow|ask|deny RULE adds a rule in Claude Code's syntax to this conversation, "
        "e.g. %agent allow 'Bash(ls *)'; --save also writes it to .toolhost/settings.json.",
        takes="rule",
        flags=("--save",),
    ),
    "ask": Entry("Permissions", "", "", takes="rule", flags=("--save",)),  # on allow's line
    "deny": Entry("Permissions", "", "", takes="rule", flags=("--save",)),
    "rules": Entry(
        "Permissions",
        "rules",
        "the rules in force, and from where",
        "%agent rules lists every rule in force, its behaviour, the file (or session) it "
        "comes from, and a note when it cannot match.",
    ),
    "check": Entry(
        "Permissions",
        "check TOOL INPUT",
        "what a call would get, without running it",
        f"{CHECK_USAGE}\n\n"
        "%agent check TOOL INPUT shows what the permission engine decides for one call in "
        "every mode (allow, ask or deny), the rule and settings file behind it, how a shell "
        'command was parsed, and what "Always allow" would add, without running the call or '
        "asking anyone. INPUT is JSON ({...}) or the tool's main field. PreToolUse hooks are "
        "not run; auto is shown as it is without a classifier answer. In Python: "
        'session.check("Bash", "ls > out.txt").',
        takes="own",
    ),
    "import-claude-settings": Entry(
        "Permissions",
        "import-claude-settings",
        "use Claude Code's rules here too",
        "Off by default: another program's allow rules would widen what runs here. "
        "%agent import-claude-settings reads ~/.claude/settings.json, .claude/settings.json "
        "and .claude/settings.local.json into this conversation; "
        '"importClaudeCodeSettings": true in .toolhost/settings.json does it for every '
        "session. Taken: permissions.allow/ask/deny (same tool names and rule syntax; deny and "
        "ask apply as written), additionalDirectories, and command hooks. Not taken: "
        "defaultMode (the mode stays this project's to choose). %agent rules shows each "
        "imported rule with its .claude file.",
    ),
    "undo": Entry(
        "Conversation",
        "undo [N] [--yes] [--force]",
        "undo a cell's file changes (asks first)",
        "%agent undo shows the diff of the last cell's file changes (checkpoint N with a "
        "number) and restores the files after you confirm; a file changed since the agent "
        "wrote it, or one in .git/, .claude/ or .toolhost/, needs a second confirmation "
        "(--force). Where nobody can click (nbclient, nbval) add --yes. What an undo replaces "
        "is kept as a checkpoint of its own; %agent history lists them. See docs/undo.md.",
        takes="one",
        flags=("--yes", "--force"),
    ),
    "history": Entry(
        "Looking inside",
        "history [--timeline]",
        "tool calls; --timeline: on a time axis",
        "%agent history lists the session's tool calls; --timeline draws them on one time "
        "axis (SVG): batches grouped, the time a call waited for you (an approval, an "
        "answer) hatched, failed, denied, interrupted and sibling-cancelled calls marked, a "
        "tooltip on everything.",
        flags=("--timeline",),
    ),
    "cost": Entry(
        "Looking inside",
        "cost",
        "tokens, dollars, the costliest calls",
        "%agent cost shows the session's tokens (input, output, cache reads and writes, "
        "thinking), the input weighed by price, and the estimated cost in dollars; then the "
        "ten calls whose results cost most: the tokens each adds to every later request, "
        "how many requests carried it since, and its share of their input cost.",
    ),
    "request": Entry(
        "Looking inside",
        "request [N]",
        "exactly what turn N sent to the model",
        "%agent request [N] shows exactly what turn N (default: the last; -1 counts from the "
        "end) sent to the model: the system prompt, the tools (deferred ones and the cache "
        "breakpoint marked), the messages (each tool_use linked to its tool_result) and the "
        "API parameters, each with its size in bytes and tokens, the turn's cache reads and "
        "writes, and what deferral saved. session.request(N) returns the body as a dict.",
        takes="one",
    ),
    "tools": Entry(
        "Looking inside",
        "tools",
        "the tools offered, and their flags",
        "%agent tools lists the tools offered to the model: read-only, concurrency-safe, "
        "deferred, enabled.",
    ),
    "output": Entry(
        "Looking inside",
        "output PATH [--from LINE]",
        "a saved tool result, a page at a time",
        f"{OUTPUT_USAGE}\n\n"
        "Shows a saved tool result (the path its card shows) through the kernel, 1,000 lines "
        "at a time in a box that scrolls; the line under it says what is left and the "
        "command for the next page. No server access to the hidden .toolhost/ folder is "
        'needed. In JupyterLab, "Open full output" on the card opens the whole file in a tab.',
        takes="own",
    ),
    "mcp": Entry(
        "Setup",
        "mcp [add|restart|remove ...]",
        "list, start or stop MCP servers",
        f"{MCP_USAGE}\n\n"
        "A server added here is for this conversation (its tools are offered from the next "
        'request). Servers for every session go in "mcpServers" of .toolhost/settings.json.',
        takes="own",
    ),
    "cwd": Entry(
        "Setup",
        "cwd [PATH]",
        "show or move the working folder",
        "Paths, Bash, settings files (.toolhost/settings.json) and saved results use the "
        "working folder: %agent cwd PATH, else c.ToolHost.root_dir, else the "
        "KERNEL_TOOLHOST_ROOT environment variable, else the notebook's folder "
        "(JPY_SESSION_NAME, or KERNEL_WORKING_DIR from a gateway) when it is on the kernel's "
        "machine, else the kernel's own folder. The kernel moves there too. %agent cwd shows "
        "it, where it came from and the settings files in force.",
        takes="words",
    ),
    "key": Entry(
        "Setup",
        "key",
        "ask for the API key (hidden, this kernel)",
        "Without ANTHROPIC_API_KEY (and without --cassette) a cell says so at once and sends "
        "nothing. %agent key asks for the key without showing it and keeps it in this "
        "kernel's environment only; %env ANTHROPIC_API_KEY=... does the same from a cell "
        "(which then holds the key). --cassette PATH replays a recorded conversation with no "
        "key at all. %agent status says whether a key is set and where it comes from.",
    ),
    "debug": Entry(
        "Setup",
        "debug [on|off]",
        "show a failed run's full traceback",
        "A failed run ends its cell with one line saying what failed; %agent debug on shows "
        "the full traceback instead (%agent debug off: one line again).",
        takes="one",
    ),
    "help": Entry(
        "Setup",
        "help [NAME]",
        "this; NAME: a subcommand or topic in full",
        "%agent help shows the short usage; %agent help NAME the full reference of a "
        "subcommand or of a topic: options, key, approvals, trust, questions, config.",
        takes="one",
    ),
}

OPTIONS = f"""{CELL_USAGE}

The cell body is the prompt; the conversation continues across %%agent cells until --new
or %agent reset, which also end its scheduled prompts, background agents and background
commands. --mode, --model, --cassette, --cassette-mode, --disclosure and --think stay in
effect for the rest of the conversation; a new one starts from the c.ToolHost defaults.

{OPTION_LIST}"""

TOPICS: dict[str, str] = {
    "options": OPTIONS,
    "approvals": (
        "A call that needs approval shows buttons in the cell: Allow, Always allow, Deny "
        "(Deny opens a field to tell the model what to do instead). While it waits, the card "
        'and the live line say "waiting for you"; the wait is not counted as the call\'s run '
        "time. Headless runs (nbclient, nbval, CI) should use --mode dontAsk with allow rules; "
        "c.ToolHost.approval_timeout (or the JUPYTER_TOOLHOST_APPROVAL_TIMEOUT environment "
        "variable) turns an unanswered prompt into a deny after that many seconds. A plan the "
        'model presents (ExitPlanMode) is shown rendered, under "Approve this plan?", with '
        "the same buttons."
    ),
    "trust": (
        "Before a conversation's first prompt, a folder whose own settings would run "
        "commands or allow more (hooks, MCP servers, allow rules, a wider mode) is asked "
        "about in the cell: Trust this folder / Don't trust, with each command listed. Until "
        "it is trusted only its deny and ask rules apply. A trust is kept in "
        "~/.toolhost/trusted-folders.json; headless runs trust only with --trust-folder or "
        '"trustedFolders" in ~/.toolhost/settings.json. %agent status says whether the '
        "folder is trusted and what is held back."
    ),
    "questions": (
        "When the model asks (AskUserQuestion), the cell shows each question with its "
        'options, an "Other" field and Submit; the card and the live line say "waiting for '
        'your answer" meanwhile. In --mode dontAsk nobody is asked: the model is told to go '
        "on with its best judgement; the approval timeout applies to questions too."
    ),
    "config": (
        "c.ToolHost.model, .permission_mode (--mode), .max_turns, .cassette, "
        ".cassette_mode (--cassette-mode), .tools, .kernel_tools, .approval_timeout, "
        ".disclosure (--disclosure), .think (--think), .root_dir (the working folder)"
    ),
}
TOPICS["key"] = SUBCOMMANDS_HELP["key"].details

EXAMPLES = (
    "%%agent --mode acceptEdits",
    "Clean data.csv and plot the monthly totals.",
    "",
    "%agent allow 'Bash(ls *)' --save",
    '%agent check Bash "rm -rf build && ls"',
    "%agent history --timeline",
)


def _listed() -> list[tuple[str, Entry]]:
    """The subcommands that have a line of their own (ask and deny share allow's)."""
    return [(name, entry) for name, entry in SUBCOMMANDS_HELP.items() if entry.usage]


LINE_USAGE = "%agent " + " | ".join(entry.usage for _, entry in _listed())
"""Every subcommand's usage on one line, from the table."""


def short_help() -> str:
    """`%agent help`: the cell's usage, the subcommands by group, examples (< 50 lines)."""
    width = max(len(entry.usage) for _, entry in _listed()) + len("  %agent ")
    lines = [
        "Run an agent whose tools execute in this kernel.",
        "",
        "%%agent [options]      the cell body is the prompt; the conversation goes on",
        "<prompt lines>         across cells (--new or %agent reset starts a new one)",
        "  --model M  --mode MODE  --new  --max-turns N  --tools A,B  --think N|off",
        "  --cassette PATH  --cassette-mode auto|record|replay",
        "  --trust-folder  --disclosure STYLE       (all of them: %agent help options)",
    ]
    for group in GROUPS:
        lines += ["", group]
        for _, entry in _listed():
            if entry.group == group:
                lines.append(f"  %agent {entry.usage}".ljust(width) + "  " + entry.summary)
    lines += ["", "Examples", *(f"  {example}" for example in EXAMPLES)]
    topics = ", ".join(TOPICS)
    lines += ["", "More: %agent help NAME, for a subcommand in full, or a topic:", f"  {topics}."]
    return "\n".join(lines)


def topic_help(name: str) -> str | None:
    """The full reference of a subcommand or a topic; None when there is no such name."""
    if name in TOPICS:
        return f"%agent help {name}\n\n{TOPICS[name]}"
    entry = SUBCOMMANDS_HELP.get(name)
    if entry is None:
        return None
    if not entry.usage:  # ask and deny share allow's line and reference
        entry = SUBCOMMANDS_HELP["allow"]
    return f"%agent {entry.usage}\n\n{entry.details or entry.summary}"


def full_reference() -> str:
    """Everything: the short help, then each topic and each subcommand in full (`%agent?`)."""
    parts = [short_help(), "", "Options", "-------", OPTIONS]
    for name, text in TOPICS.items():
        if name != "options":
            parts += ["", name.capitalize(), "-" * len(name), text]
    for _name, entry in _listed():
        title = f"%agent {entry.usage}"
        parts += ["", title, "-" * len(title), entry.details or entry.summary]
    return "\n".join(parts)
