"""The `%agent` subcommands: each returns something to display (or None).

status, reset, stop (background agents and commands, as the stop button does), mode,
allow/ask/deny, rules, tools, history [--timeline], cost, request [N]
(`request_view`), compact, resume, mcp, check TOOL INPUT (`check_display`),
import-claude-settings (Claude Code's settings files into this conversation), cwd [PATH]
(the working folder, `workdir`), key (asks for an API key without echo and keeps it in this
kernel's environment only), debug [on|off] (a failed run shows its full traceback instead of
one line), help. Rules
go to the session's permission state; `--save` writes them to the project settings file
(`.toolhost/settings.json`). `compact` and the `mcp` actions that await a server run
through `run_async_command` (a cell of their own).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from getpass import getpass
from typing import Any

from IPython.core.error import UsageError as IPythonUsageError
from IPython.display import display

from ...core.context import toolhost_home
from ...core.numbers import format_number
from ...model.pricing import billed_equivalent
from ...permissions.settings.managed import load_policy
from ..agent import resume_session, set_mode
from ..host import (
    STOP_GRACE,
    AgentHost,
    AgentInterrupted,
    background_notice,
    stop_task,
    wait_in_slices,
)
from ..kernel.results_comm import saved_result
from ..views.render import (
    Rendered,
    notice_display,
    output_display,
    short,
    shown_path,
    stacked,
    table_display,
)
from ..views.timeline import timeline_display
from .help_text import TOPICS, short_help, topic_help
from .options import Command, UsageError, parse_command, parse_turn

OUTPUT_LINES = 1_000
"""The lines of a saved result one `%agent output` shows (a page: `--from` shows the next)."""
OUTPUT_BYTES = 100_000
"""The most bytes of a saved result one `%agent output` shows, whatever its lines' length."""


def run_line(host: AgentHost, line: str) -> Rendered | None:
    """The `%agent LINE` magic: `run_command`, its usage errors shown as IPython's."""

    try:
        return run_command(host, line)
    except UsageError as exc:
        raise IPythonUsageError(str(exc)) from None


async def run_command_cell(host: AgentHost, line: str) -> None:
    """A cell holding only `%agent compact` or `%agent mcp ...`: awaited, interruptible."""

    task: asyncio.Future[Rendered | None] = asyncio.ensure_future(run_async_command(host, line))
    try:
        await wait_in_slices(task)
    except asyncio.CancelledError:
        await stop_task(task, grace=STOP_GRACE)
        raise AgentInterrupted(f"%agent {line} was interrupted") from None
    try:
        shown = task.result()
    except UsageError as exc:
        raise IPythonUsageError(str(exc)) from None
    if shown is not None:
        display(shown)


def run_command(host: AgentHost, line: str) -> Rendered | None:
    """Parse and run one `%agent` line."""
    command = parse_command(line)
    handler = _HANDLERS[command.name]
    return handler(host, command)


AWAITING = "runs as a cell of its own (it awaits {what}): put it alone in a cell."


async def run_async_command(host: AgentHost, line: str) -> Rendered | None:
    """Run one `%agent` line that may await (compact, mcp); others run as usual."""
    command = parse_command(line)
    match command.name:
        case "compact":
            return await _compact_now(host)
        case "mcp":
            from .mcp_command import run_mcp

            return await run_mcp(host, command)
        case "undo":
            from .undo import run_undo

            return await run_undo(host, command)
        case _:
            return _HANDLERS[command.name](host, command)


async def _compact_now(host: AgentHost) -> Rendered:
    if host.session is None:
        return notice_display("No session yet: nothing to compact.")
    boundary = await host.session.compact()
    return notice_display(
        "Nothing to compact yet." if boundary is None else "Conversation compacted."
    )


def _status(host: AgentHost, command: Command) -> Rendered:
    session = host.session
    rows: list[tuple[str, Any]] = [
        ("model", host.model or "(default)"),
        ("permission mode", host.mode or "default"),
        ("cassette", host.cassette or ""),
        ("cassette mode", (host.cassette_mode or "auto") if host.cassette else ""),
        *_key_rows(host),
        (
            "thinking",
            f"budget {format_number(host.think, 'tokens')} tokens" if host.think else "off",
        ),
        ("session", session.session_id if session else "(none yet)"),
        ("messages", len(session.messages) if session else 0),
        ("tool calls", len(host.history)),
        ("approval timeout", _seconds_or_off(host.approver().timeout)),
        *_folder_rows(host),
        *_policy_rows(host),
    ]
    return table_display("status", ("setting", "value"), rows, title="jupyter_toolhost")


def _policy_rows(host: AgentHost) -> list[tuple[str, Any]]:
    """The managed policy in force and the budgets (`permissions.settings.managed`)."""
    session = host.session
    policy = session.policy if session is not None else load_policy()
    rows: list[tuple[str, Any]] = [("policy", line.strip()) for line in policy.summary()]
    guard = session.settings.budget if session is not None else None
    if guard is not None:
        caps = ", ".join(f"{name} {cap:g}" for name, cap in guard.budgets.caps().items())
        spent = f"this session ${guard.session.usd or 0:,.4f}, {guard.session.tokens:,} tokens"
        rows += [("budgets", caps), ("spent", spent)]
    return rows


def _key_rows(host: AgentHost) -> list[tuple[str, Any]]:
    """Whether an API key is set and where it comes from (what the client reads), with at
    most a fingerprint of it ("…a1b2"); never the key."""
    from ...model.anthropic_model import AnthropicModel, credential_sources, fingerprint

    model = getattr(host.session, "model", None)
    given = model.given_api_key if isinstance(model, AnthropicModel) else None
    found = credential_sources(given)
    rows: list[tuple[str, Any]] = []
    for where, secret in found:
        kind = "auth token" if "AUTH_TOKEN" in where else "API key"
        typed = " (typed with %agent key)" if host.key_typed == secret else ""
        mark = fingerprint(secret)
        rows.append((kind, f"set{f' ({mark})' if mark else ''}, from {where}{typed}"))
    if not found:
        replay = " (a cassette replays without one)" if host.cassette else ""
        rows.append(("API key", f"none{replay}: %agent key asks for one"))
    return rows


def _seconds_or_off(seconds: float | None) -> str:
    return "off" if not seconds else format_number(seconds, "seconds")


def _tokens(count: float) -> str:
    return format_number(count, "tokens")


def _trust_summary(host: AgentHost) -> str:
    """Whether the working folder's own settings act, and what is held back: as the running
    conversation found it, else as a new one would (see `permissions.settings.trust`)."""
    from ...permissions.settings.trust import folder_trust

    found = getattr(host.session, "folder_trust", None)
    if found is None or found.folder != host.cwd.resolve():
        found = folder_trust(host.cwd, decided=host.kernel_answer(folder_trust(host.cwd)))
        if found.undecided:
            return found.summary() + " (a new conversation asks first)"
    return found.summary()


def _folder_rows(host: AgentHost) -> list[tuple[str, Any]]:
    """The working folder, where it came from, the notebook's folder and the settings files
    in force (see `workdir`)."""
    from ...permissions.settings.settings import settings_in_force

    folder = host.workdir
    moved = folder.path != host.cwd.resolve()
    source = "%cd in the notebook" if moved else folder.source
    if folder.notebook is None:
        notebook = "(not told: no JPY_SESSION_NAME or KERNEL_WORKING_DIR)"
    elif folder.notebook_here:
        notebook = str(folder.notebook)
    else:
        notebook = f"{folder.notebook} (not on the kernel's machine)"
    files = settings_in_force(host.cwd)
    rows: list[tuple[str, Any]] = [
        ("working folder", str(host.cwd)),
        ("folder from", source),
        ("notebook folder", notebook),
        ("settings files", ", ".join(str(path) for path in files) or "none"),
        ("folder trust", _trust_summary(host)),
    ]
    notice = host.folder_notice()
    if notice is not None:
        rows.append(("note", notice))
    return rows


def _cwd(host: AgentHost, command: Command) -> Rendered:
    """`%agent cwd [PATH]`: show the working folder, or move the agent and the kernel."""
    if command.argument is None:
        rows = _folder_rows(host)
        return table_display("cwd", ("setting", "value"), rows, title="working folder")
    had_session = host.session is not None
    host.set_working_folder(command.argument)
    from ...permissions.settings.settings import settings_in_force

    files = settings_in_force(host.cwd)
    found = ", ".join(str(path) for path in files) if files else "none"
    restarted = " The conversation starts anew there." if had_session else ""
    return notice_display(f"Working folder: {host.cwd}. Settings files: {found}.{restarted}")


def _reset(host: AgentHost, command: Command) -> Rendered:
    stopped = host.reset()
    more = f"\n{stopped}" if stopped else ""
    return notice_display(f"Conversation reset: the next %%agent cell starts a new one.{more}")


def _stop(host: AgentHost, command: Command) -> Rendered:
    """What the stop button does to background work, for when no cell runs (the button then
    has no prompt to stop): background agents and commands stop, schedules go on."""

    if host.session is None:
        return notice_display("No conversation: nothing runs in the background.")
    stopped = host.session.stop_background("stopped with %agent stop")
    text = background_notice(stopped)
    return notice_display(text or "Nothing of this conversation runs in the background.")


def _mode(host: AgentHost, command: Command) -> Rendered:
    if command.argument is None:
        return notice_display(f"Permission mode: {host.mode or 'default'}")
    refused = host.refuse_mode(command.argument)
    if refused is not None:
        raise UsageError(refused)
    host.mode = command.argument
    if host.session is not None:
        set_mode(host.session, command.argument)
    return notice_display(f"Permission mode set to {command.argument}.")


def _rule(host: AgentHost, command: Command) -> Rendered:
    from ...permissions.rules.rules import RuleError, parse_rule
    from ...permissions.settings.settings import SettingsError, save_rule

    rule = command.argument or ""
    behavior = command.name
    assert behavior in ("allow", "ask", "deny")
    try:
        parse_rule(rule)
    except RuleError as exc:
        raise UsageError(f"Not a valid rule: {exc}") from None
    later = ""
    if host.session is None:
        host.pending_rules.append((rule, behavior))
        later = " (it applies from the first %%agent cell)"
    else:
        host.session.add_rule(rule, behavior)
    saved = ""
    if "--save" in command.flags:
        try:
            path = save_rule(rule, behavior, scope="project", cwd=host.cwd)
        except SettingsError as exc:
            raise UsageError(str(exc)) from None
        saved = f" and saved to {path}"
    return notice_display(f"Added {behavior} rule {rule}{saved}{later}.")


def _rules(host: AgentHost, command: Command) -> Rendered:
    from ...permissions.rules.inactive import inactive_reason

    rows = []
    if host.session is not None:
        session = host.session
        tools = {t.name: t.rule_content is not None for t in session.tools}
        for source, by_behavior in session.rules.items():
            for behavior, listed in by_behavior.items():
                rows.extend(
                    (behavior, rule, source, inactive_reason(rule, tools) or "") for rule in listed
                )
    columns = ("behavior", "rule", "source", "note")
    return table_display("rules", columns, rows, title="permission rules")


def _flag(tool: Any, predicate: Callable[[Any], bool]) -> str:
    try:
        return "yes" if predicate(None) else "no"
    except Exception:
        return "depends"


def _tools(host: AgentHost, command: Command) -> Rendered:
    rows = []
    for tool in host.tool_pool():
        try:
            enabled = bool(tool.is_enabled())
        except Exception:
            enabled = False
        rows.append(
            (
                tool.name,
                _flag(tool, tool.is_read_only),
                _flag(tool, tool.is_concurrency_safe),
                tool.should_defer,
                enabled,
            )
        )
    columns = ("name", "read-only", "concurrency-safe", "deferred", "enabled")
    return table_display("tools", columns, rows, title="tools offered to the model")


def _history(host: AgentHost, command: Command) -> Rendered:
    if "--timeline" in command.flags:
        return timeline_display(host.history)
    rows = [
        (
            card.batch,
            card.name,
            card.summary,
            card.status,
            format_number(card.duration or 0, "seconds"),
        )
        for card in host.history
    ]
    columns = ("batch", "tool", "input", "status", "duration")
    calls = table_display("history", columns, rows, title="tool calls", timed=("duration",))
    from .undo import with_checkpoints

    return with_checkpoints(calls, host)


def _undo(host: AgentHost, command: Command) -> Rendered:
    raise UsageError(AWAITING.format(what="your confirmation"))


COSTLIEST = 10
"""How many calls `%agent cost` ranks."""


def _cost(host: AgentHost, command: Command) -> Rendered:
    session = host.session
    if session is None:
        return notice_display("No session yet.")
    usage = session.usage.to_dict()
    thinking = usage.pop("thinking_tokens", 0)
    cost = session.cost_usd
    rows: list[tuple[str, object]] = [(name, _tokens(value)) for name, value in usage.items()]
    if thinking:  # billed as output: already counted in output_tokens
        rows.append(("thinking_tokens (in output_tokens)", _tokens(thinking)))
    weighed = billed_equivalent(session.usage)
    rows.append(
        (
            "input weighed by price (uncached + 1.25 × written for 5 min + 2 × written for "
            "1 h + 0.1 × read)",
            _tokens(weighed),
        )
    )
    if session.last_cache_expiry:
        rows.append(("latest pause", session.last_cache_expiry))
    rows.append(("estimated cost", "unknown" if cost is None else format_number(cost, "usd")))
    table = table_display("cost", ("measure", "value"), rows, title=f"session {session.session_id}")
    calls = session.result_tokens.ranked()[:COSTLIEST]
    if not calls:
        return table
    summaries = {card.tool_use_id: card.summary for card in host.history}
    ranked = [
        (
            call.tool_name,
            short(summaries.get(call.tool_use_id, ""), 60),
            call.text,
            call.requests,
            "unknown" if call.cost_usd is None else format_number(call.cost_usd, "usd"),
        )
        for call in calls
    ]
    columns = ("tool", "input", "result adds", "requests since", "its share of cost")
    title = "the calls that cost most (what their results add to every later request)"
    return stacked(table, table_display("cost-calls", columns, ranked, title=title))


def _request(host: AgentHost, command: Command) -> Rendered:
    if host.session is None:
        return notice_display("No session yet: run an %%agent cell first.")
    from ..views.request_view import request_view

    turn = None if command.argument is None else parse_turn(command.argument)
    return request_view(host.session, turn)


def _compact(host: AgentHost, command: Command) -> Rendered:
    raise UsageError("%agent compact " + AWAITING.format(what="the model"))


def _mcp(host: AgentHost, command: Command) -> Rendered:
    from .mcp_command import list_servers

    if command.argument not in (None, "list"):
        raise UsageError(f"%agent mcp {command.argument} " + AWAITING.format(what="the server"))
    return list_servers(host)


def _resume(host: AgentHost, command: Command) -> Rendered:
    sessions = toolhost_home(host.cwd) / "sessions"
    if command.argument is None:
        found = sorted(
            (p.parent for p in sessions.glob("*/transcript.jsonl")),
            key=lambda p: p.stat().st_mtime,
            reverse=True,
        )
        rows = [
            (p.name, format_number((p / "transcript.jsonl").stat().st_size, "bytes")) for p in found
        ]
        return table_display("sessions", ("session", "transcript"), rows, title="sessions")

    resumed = resume_session(host, command.argument, tools=host.tool_pool())
    host.end_session("another conversation was resumed (%agent resume)")
    host.session = resumed
    count = len(host.session.messages)
    return notice_display(f"Resumed session {command.argument} ({count} messages).")


def _check(host: AgentHost, command: Command) -> Rendered:

    from ...permissions.check import CheckError
    from ..views.check_display import check_display

    text = command.words[0]
    value: dict[str, Any] | str = json.loads(text) if "--json" in command.flags else text
    try:
        report = host.ensure_session().check(command.argument or "", value)
    except CheckError as exc:
        raise UsageError(str(exc)) from None
    return check_display(report, cwd=str(host.cwd))


def _import_claude_settings(host: AgentHost, command: Command) -> Rendered:
    from ...permissions.settings.claude_settings import claude_settings_files

    session = host.ensure_session()
    found = session.import_claude_settings()
    files = [str(path) for _, path, _ in claude_settings_files(cwd=session.context.cwd)]
    problems = [p for p in session.settings_problems if any(p.startswith(f) for f in files)]
    if found:
        lines = ["Imported Claude Code settings into this conversation:"]
        lines += [f"  {done.summary()}" for done in found]
        lines.append('("importClaudeCodeSettings": true in .toolhost/settings.json: always.)')
    elif session.claude_imports:
        lines = ["Claude Code settings are already imported:"]
        lines += [f"  {done.summary()}" for done in session.claude_imports]
    else:
        lines = ["Nothing imported: no Claude Code settings file was found or could be read."]
    if problems:
        lines += ["Problems:", *(f"  {problem}" for problem in problems)]
    return notice_display("\n".join(lines), level="warning" if problems else "info")


def _key(host: AgentHost, command: Command) -> Rendered:

    try:
        key = getpass("Anthropic API key (kept in this kernel only): ").strip()
    except Exception:  # no stdin (nbclient, nbval): the front end cannot ask
        return notice_display(
            "This front end cannot ask for input here: set the key with "
            "%env ANTHROPIC_API_KEY=... or in the environment that starts Jupyter.",
            level="warning",
        )
    if not key:
        return notice_display("No key given: nothing changed.")
    os.environ["ANTHROPIC_API_KEY"] = key
    host.key_typed = key
    return notice_display(
        "ANTHROPIC_API_KEY is set for this kernel (not saved anywhere): run the %%agent cell "
        "again. It is gone when the kernel restarts."
    )


def _debug(host: AgentHost, command: Command) -> Rendered:
    if command.argument is not None:
        host.debug = command.argument == "on"
    state = "on: a failed run shows its traceback" if host.debug else "off: one line per failure"
    return notice_display(f"Debug {state}.")


def _output(host: AgentHost, command: Command) -> Rendered:
    """A page of a saved result (`OUTPUT_LINES` lines from `--from`, at most `OUTPUT_BYTES`),
    from the file the lab extension reads too: in a box that scrolls, with what is left and
    the command for the next page under it, so a 30,000-line result never floods the cell
    or the saved notebook."""

    try:
        real = saved_result(command.argument or "", cwd=str(host.cwd))
    except ValueError as exc:
        return notice_display(str(exc), level="error")
    first = int(command.words[0]) if command.words else 1
    lines, total = _page(real, first)
    shown = shown_path(str(real), str(host.cwd))
    if not lines and total:
        return notice_display(f"{shown} has {_lines(total)}: --from {first} is past its end.")
    size = format_number(real.stat().st_size, "bytes")
    last = first + len(lines) - 1
    if first == 1 and last >= total:
        note, cut = f"{size}, {_lines(total)}", ""
    else:
        note = f"{size}, lines {_count(first)}–{_count(last)} of {_count(total)}"
        left = total - last
        more = f"{format_number(left)} more line" + ("" if left == 1 else "s")
        cut = f"… {more}: %agent output {shown} --from {last + 1}"
        if last >= total:
            cut = f"end of the file; the start: %agent output {shown}"
    return output_display(shown, "".join(lines).rstrip("\n"), note, cut)


def _page(path: Any, first: int) -> tuple[list[str], int]:
    """The lines of the page that starts at line `first` (from 1) and the file's line count."""
    lines: list[str] = []
    taken = 0
    total = 0
    with open(path, encoding="utf-8", errors="replace") as file:
        for total, line in enumerate(file, start=1):
            if total >= first and len(lines) < OUTPUT_LINES and taken < OUTPUT_BYTES:
                lines.append(line)
                taken += len(line.encode())
    return lines, total


def _count(number: int) -> str:
    return format_number(number)


def _lines(number: int) -> str:
    return f"{format_number(number)} line" + ("" if number == 1 else "s")


def _help(host: AgentHost, command: Command) -> Rendered:
    """`%agent help`: the short usage; `%agent help NAME`: one subcommand or topic in full."""

    if command.argument is None:
        return notice_display(short_help())
    found = topic_help(command.argument)
    if found is None:
        names = ", ".join(sorted([*_HANDLERS, *TOPICS]))
        raise UsageError(f"No help for {command.argument!r}. Try one of: {names}.")
    return notice_display(found)


_HANDLERS: dict[str, Callable[[AgentHost, Command], Rendered | None]] = {
    "status": _status,
    "reset": _reset,
    "stop": _stop,
    "mode": _mode,
    "allow": _rule,
    "ask": _rule,
    "deny": _rule,
    "rules": _rules,
    "tools": _tools,
    "history": _history,
    "cost": _cost,
    "request": _request,
    "compact": _compact,
    "resume": _resume,
    "mcp": _mcp,
    "check": _check,
    "import-claude-settings": _import_claude_settings,
    "cwd": _cwd,
    "key": _key,
    "debug": _debug,
    "output": _output,
    "undo": _undo,
    "help": _help,
}
