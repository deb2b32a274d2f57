"""`check_permission`: what the permission engine decides for one call in every mode, without
running the call and without asking anyone.

It runs the engine a real call goes through (`PermissionEngine.__call__`: `decide()` with the
session's rules and settings files, the tool's own `check_permissions`, dontAsk's denial,
auto mode's classifier step, the approver step) once per mode, on a copy of the engine whose
approver records the "ask" and answers deny (so "Always allow" adds nothing) and whose
classifier records that it was consulted and answers "unsure" (auto mode without a
classifier answer: the model call is never made). PreToolUse hooks are not run: they are
user code with side effects; the report names the ones that would run first.

The caller (`Session.check`) finds the tool and validates the input the way the pipeline
does; `input_for` maps a bare string to the tool's primary field.
"""

from __future__ import annotations

import asyncio
import copy
import difflib
import os
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ..core.context import AppStateStore, ToolUseContext
from ..core.errors import ToolhostError
from ..core.types import (
    PERMISSION_MODES,
    DecisionReason,
    PermissionAllow,
    PermissionDeny,
    PermissionMode,
    PermissionResult,
)
from ..hooks.hooks import HookOutput, Hooks
from .api import ApprovalDecision, ApprovalRequest, CanUseTool, PermissionRequest
from .engine import PermissionEngine
from .facts import CallFacts, CommandFacts, PathRef, call_facts
from .rules.ruleset import LOCAL, PROJECT, SESSION, USER, default_sources

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..core.tool import Tool

Behavior = Literal["allow", "ask", "deny"]
_T = TypeVar("_T")
_SCOPES = {USER: "user", PROJECT: "project", LOCAL: "local", SESSION: "session"}
HOOKS_NOT_RUN = (
    "PreToolUse hooks are not run by a check (they are user code with side effects); "
    "in a real call they run first, and a hook's deny, ask, allow or rewritten input "
    "comes before everything shown here."
)
SANDBOXED_NOTE = (
    "{tool} runs sandboxed here: files a Read deny rule protects are hidden from it, so a "
    "command that might reach them is not stopped for that."
)
AUTO_NOTE = (
    "auto: the classifier is a model call and is not made by a check; shown is what auto "
    "does without its answer (unsure, offline or slow): it asks as default does."
)


class CheckError(ToolhostError, ValueError):
    """The call cannot be checked as given (unknown tool, a string for several fields...)."""


@dataclass(frozen=True, slots=True)
class ModeCheck:
    """What one permission mode decides for the call."""

    mode: PermissionMode
    behavior: Behavior
    message: str
    """What the approver would be shown (ask) or the model told (deny); empty for allow."""
    reason: DecisionReason | None
    rule: str | None = None
    """The rule that decided (``Bash(npm run test:*)``), when a rule did."""
    settings_file: str | None = None
    """Where that rule came from: a settings file path, or ``session``."""
    scope: str | None = None
    """``user``, ``project``, ``local`` or ``session`` (None when no rule decided)."""
    suggested_rules: tuple[str, ...] = ()
    """For an ask: the allow rules "Always allow" would add (none for a safety check)."""
    classifier_consulted: bool = False
    """auto only: the engine would have put the call to the classifier."""
    updated_input: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ShellCommandCheck:
    """One sub-command of a shell line, as the permission rules see it."""

    text: str
    """The command after wrappers and assignments (what prefix rules match)."""
    source_text: str
    program: str
    paths: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    """Redirection targets written (``> file``)."""
    reads: tuple[str, ...] = ()
    """Redirection sources read (``< file``)."""
    trees: tuple[str, ...] = ()
    globs: tuple[str, ...] = ()
    read_only: bool = False
    notes: tuple[str, ...] = ()
    """Why a rule or a mode may not allow it on its own: risks, unknown operands, paths
    outside the working directories."""


@dataclass(frozen=True, slots=True)
class CheckReport:
    """The decision of every permission mode for one call, and what the call touches."""

    tool: str
    input: Mapping[str, Any]
    current_mode: PermissionMode
    modes: tuple[ModeCheck, ...]
    path: str | None = None
    url: str | None = None
    command: str | None = None
    """The command line of a shell tool."""
    shell: tuple[ShellCommandCheck, ...] | None = None
    """The sub-commands of a shell tool's command line (None for other tools)."""
    shell_error: str | None = None
    """Why the command line could not be analysed (then it is asked, never auto-allowed)."""
    refused: str | None = None
    """Why the pipeline stops the call before the permission step (invalid input...)."""
    sandboxed: bool = False
    """The call runs where paths a Read deny rule protects are hidden (Bash's sandbox)."""
    hooks: tuple[str, ...] = ()
    """The PreToolUse hooks that match the tool (not run by the check)."""
    notes: tuple[str, ...] = ()

    def mode(self, mode: PermissionMode) -> ModeCheck:
        """The decision of `mode`."""
        return next(m for m in self.modes if m.mode == mode)

    @property
    def current(self) -> ModeCheck:
        """The decision of the session's mode now."""
        return self.mode(self.current_mode)

    def __str__(self) -> str:
        rows = [
            f"{m.mode:<18} {m.behavior:<5}  {reason_text(m)}"
            + (f"  [{m.rule} in {m.settings_file}]" if m.rule else "")
            for m in self.modes
        ]
        lines = [f"{self.tool} {dict(self.input)}", *rows]
        for command in self.shell or ():
            shown = command.source_text or "(a redirection of the line)"
            lines.append(f"  $ {shown}: {', '.join(shell_details(command))}")
        if self.shell_error:
            lines.append(f"  the command line could not be analysed: {self.shell_error}")
        return "\n".join([*lines, *self.notes])


def reason_text(check: ModeCheck) -> str:
    """A short reason for one mode's decision."""
    reason = check.reason
    text = reason.detail if reason is not None else check.message
    if reason is not None and reason.kind == "mode" and reason.detail in PERMISSION_MODES:
        text = f"{reason.detail} mode"
        if reason.detail == "plan":
            text += ": only read-only calls run"
    if check.behavior == "deny" and f"permission mode is {check.mode}" in check.message:
        text = f"{text} ({check.mode} denies what would ask)"  # the engine's own words
    if check.classifier_consulted:
        text = f"{text} (no classifier answer)"
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())


def shell_details(command: ShellCommandCheck) -> list[str]:
    """What one sub-command touches and why it may be asked, in short phrases."""
    details = [f"program {command.program or '(none)'}"]
    for label, values in (
        ("paths", command.paths),
        ("writes", command.writes),
        ("reads", command.reads),
        ("reads trees", command.trees),
        ("globs", command.globs),
    ):
        if values:
            details.append(f"{label} {' '.join(values)}")
    details.append("read-only" if command.read_only else "may change things")
    return [*details, *command.notes]


# ── the check ───────────────────────────────────────────────────────────────────────────


async def check_permission(
    *,
    tool: Tool[Any],
    input: Mapping[str, Any],
    parsed: BaseModel | None,
    context: ToolUseContext,
    engine: CanUseTool,
    hooks: Hooks | None = None,
    refused: str | None = None,
    modes: Sequence[PermissionMode] = PERMISSION_MODES,
) -> CheckReport:
    """Run the engine's real decision for `parsed` in each of `modes`; nothing runs, no one
    is asked. `refused` (with `parsed` None) is why the pipeline stops the call earlier."""
    if not isinstance(engine, PermissionEngine):
        raise CheckError(
            "This session decides with its own can_use_tool, not the PermissionEngine: its "
            "decisions cannot be checked without possibly asking someone."
        )
    matching = tuple(h.source for h in hooks.for_event("PreToolUse", tool.name)) if hooks else ()
    current = context.permission_context.mode
    if parsed is None:
        why = refused or "the input could not be read"
        checks = tuple(ModeCheck(m, "deny", why, None) for m in modes)
        return CheckReport(tool.name, dict(input), current, checks, refused=why, hooks=matching)
    checks = tuple([await _in_mode(engine, tool, parsed, input, context, m) for m in modes])
    facts = _facts(engine, tool, parsed, context)
    notes = _suggestion_notes(checks)
    if matching:
        notes.append(f"PreToolUse hooks for {tool.name}: {', '.join(matching)}. {HOOKS_NOT_RUN}")
    else:
        notes.append(f"No PreToolUse hook matches {tool.name}.")
    if any(c.mode == "auto" for c in checks):
        notes.append(AUTO_NOTE)
    sandboxed = tool.runs_sandboxed(context)
    if sandboxed and _has_read_deny_rules(context):
        notes.append(SANDBOXED_NOTE.format(tool=tool.name))
    shell = tuple(_shell_view(facts, c) for c in facts.commands) if facts.is_shell else None
    return CheckReport(
        tool.name,
        dict(input),
        current,
        checks,
        path=facts.path.written if facts.path else None,
        url=facts.url,
        command=facts.shell_text,
        shell=shell,
        shell_error=facts.unverifiable if facts.is_shell else None,
        hooks=matching,
        notes=tuple(notes),
        sandboxed=sandboxed,
    )


class _Probe:
    """Stands in for the approver and the classifier: records, decides nothing."""

    def __init__(self) -> None:
        self.asked: list[ApprovalRequest] = []
        self.classified = False

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        self.asked.append(request)
        return ApprovalDecision("deny")

    async def classify(self, _request: PermissionRequest) -> None:
        self.classified = True
        return None


async def _in_mode(
    engine: PermissionEngine,
    tool: Tool[Any],
    parsed: BaseModel,
    input: Mapping[str, Any],
    context: ToolUseContext,
    mode: PermissionMode,
) -> ModeCheck:
    probe = _Probe()
    copied = copy.copy(engine)
    copied.approver = probe
    copied.classifier = probe.classify
    copied.problems = []
    state = context.get_app_state()
    permission = replace(state.tool_permission_context, mode=mode)
    moded = replace(
        context, app_state=AppStateStore(replace(state, tool_permission_context=permission))
    )
    request = PermissionRequest(tool, parsed, dict(input), moded, "toolu_check", HookOutput())
    result: PermissionResult = await copied(request)
    classified = probe.classified
    if probe.asked:
        asked = probe.asked[0]
        safety = asked.reason is not None and asked.reason.kind == "safety"
        rules = () if safety else (asked.suggested_rules or (tool.name,))
        check = ModeCheck(mode, "ask", asked.message, asked.reason, suggested_rules=rules)
        return _with_rule(replace(check, classifier_consulted=classified), engine, context)
    if isinstance(result, PermissionAllow):
        check = ModeCheck(mode, "allow", "", result.reason, updated_input=result.updated_input)
    else:
        assert isinstance(result, PermissionDeny), "the engine returns allow or deny"
        check = ModeCheck(mode, "deny", result.message, result.reason)
    return _with_rule(replace(check, classifier_consulted=classified), engine, context)


def _with_rule(check: ModeCheck, engine: PermissionEngine, context: ToolUseContext) -> ModeCheck:
    """Fill in the rule and its settings file when a rule decided."""
    reason = check.reason
    if reason is None or reason.kind != "rule":
        return check
    _behavior, _sep, rule = reason.detail.partition(" rule ")
    label = reason.source
    cwd = os.fspath(context.cwd)
    sources = {**default_sources(cwd=cwd, home=engine.resolver.home()), **engine.sources}
    scope = next((_SCOPES.get(n, n) for n, s in sources.items() if s.label == label), None)
    return replace(check, rule=rule or reason.detail, settings_file=label, scope=scope)


def _facts(
    engine: PermissionEngine, tool: Tool[Any], parsed: BaseModel, context: ToolUseContext
) -> CallFacts:
    """What the call touches, exactly as `decide()` computes it for the engine."""
    state = context.get_app_state()
    cwd = os.fspath(context.cwd)
    shell_cwd = state.shell_cwd if tool.shell_command is not None else None
    return call_facts(
        tool,
        parsed,
        cwd=cwd,
        resolver=engine.resolver,
        working_dirs=(cwd, *state.tool_permission_context.additional_working_directories),
        shell_cwd=shell_cwd if isinstance(shell_cwd, str) else None,
    )


def _shell_view(facts: CallFacts, item: CommandFacts) -> ShellCommandCheck:
    command = item.command
    traits = item.traits
    notes: list[str] = []
    if command.risky:
        notes.append(f"{command.risk_reason or 'risky'}: only an exact rule can allow it")
    if command.nested:
        notes.append("runs inside a command substitution")
    if item.dynamic or item.dynamic_target:
        notes.append("an operand or target is only known when it runs")
    outside = [
        ref.written
        for ref in (*item.paths, *item.write_targets, *item.read_targets, *item.trees)
        if not facts.inside(ref)
    ]
    if outside:
        notes.append(f"outside the working directories: {' '.join(outside)}")
    if command.changes_directory:
        notes.append("changes the directory for the commands after it")
    return ShellCommandCheck(
        text=command.text,
        source_text=command.source_text,
        program=command.name,
        paths=_written(item.paths),
        writes=_written(item.write_targets),
        reads=_written(item.read_targets),
        trees=_written(item.trees),
        globs=item.globs,
        read_only=bool(command.parts) and traits is not None and traits.read_only,
        notes=tuple(notes),
    )


def _written(refs: Iterable[PathRef]) -> tuple[str, ...]:
    return tuple(ref.written for ref in refs)


def _suggestion_notes(checks: Sequence[ModeCheck]) -> list[str]:
    """One "Always allow would add" line per distinct suggestion, naming its modes."""
    by_rules: dict[tuple[str, ...], list[str]] = {}
    for check in checks:
        if check.behavior == "ask":
            by_rules.setdefault(check.suggested_rules, []).append(check.mode)
    lines: list[str] = []
    for rules, modes in by_rules.items():
        added = ", ".join(rules) if rules else "nothing (a safety check: allow it once)"
        lines.append(f"Always allow would add: {added} ({', '.join(modes)})")
    return lines


# ── the input and the tool ──────────────────────────────────────────────────────────────


def find_tool_named(name: str, tools: Sequence[Tool[Any]]) -> Tool[Any]:
    """The tool called `name`; an unknown name raises `CheckError` listing close names."""
    for tool in tools:
        if tool.name == name:
            return tool
    names = sorted({t.name for t in tools})
    close = difflib.get_close_matches(name, names, n=4, cutoff=0.5)
    close += [n for n in names if n.lower() == name.lower() and n not in close]
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    raise CheckError(f"Unknown tool {name!r}.{hint} Tools: {', '.join(names) or '(none)'}.")


def input_for(tool: Tool[Any], value: Mapping[str, Any] | str) -> dict[str, Any]:
    """The input as a dict; a string goes to the tool's single required text field, or (among
    several) to the one its path, command or URL predicate reads — the others are left empty."""
    if not isinstance(value, str):
        return dict(value)
    fields = _required_text_fields(tool)
    if len(fields) == 1:
        return {fields[0]: value}
    read = [f for f in fields if _predicate_reads(tool, f, fields)]
    if len(read) == 1:
        return {f: value if f == read[0] else "" for f in fields}
    if not fields:
        raise CheckError(f"{tool.name} has no required text field: give its input as JSON.")
    raise CheckError(
        f"{tool.name} takes several text fields ({', '.join(fields)}): give its input as JSON, "
        f'e.g. {{"{fields[0]}": "..."}}.'
    )


def _required_text_fields(tool: Tool[Any]) -> list[str]:
    schema = tool.input_schema
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    return [name for name in required if properties.get(name, {}).get("type") == "string"]


def _predicate_reads(tool: Tool[Any], name: str, fields: Sequence[str]) -> bool:
    """Whether the tool's declared path/command/URL predicate returns field `name`."""
    marker = f"/check-probe-{name}"
    predicates = [p for p in (tool.get_path, tool.shell_command, tool.get_url) if p is not None]
    try:
        parsed = tool.input_model.model_validate({f: marker if f == name else "" for f in fields})
        return any(p(parsed) == marker for p in predicates)
    except Exception:
        return False


def run_blocking(work: Coroutine[Any, Any, _T]) -> _T:
    """Run `work` to its end from sync code, also inside a running loop (a kernel's cell):
    then in a worker thread with its own loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="permission-check") as pool:
        return pool.submit(asyncio.run, work).result()


def _has_read_deny_rules(context: ToolUseContext) -> bool:
    """Whether any source denies reading a path (what the sandbox note is about)."""
    rules = context.permission_context.rules.values()
    return any(rule.startswith("Read(") for by in rules for rule in by.get("deny", ()))
