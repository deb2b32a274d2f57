"""The permission decision for one call: a pure function of the call, the rules and the mode.

Order (first match wins): a hook's deny → deny rules → the guards (`guards`: protected
folders, trees that hold a denied path, commands that cannot be checked; here: a loopback or
private host without an allow rule, code no path rule reaches) → unverifiable input
asks → plan mode
denies what is not read-only → ask rules → a hook's ask → bypassPermissions → allow rules
(every sub-command, every path) → a hook's allow → acceptEdits → read-only calls inside the
working directories → ask. Under dontAsk what would ask is denied. Every result carries a
`DecisionReason`: which rule from which file, which mode, which hook.

No I/O happens here except through the resolver handed in (symlink resolution), and the
start-up places (`startup`: where the next kernel start looks), read once per environment
and cached.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.types import (
    DecisionReason,
    PermissionAllow,
    PermissionAsk,
    PermissionDeny,
    PermissionMode,
    PermissionResult,
)
from ..hooks.hooks import HookOutput
from ..shell.safety import creates_or_moves_files
from .facts import CallFacts, CommandFacts, PathRef, call_facts, operands_from_environment
from .guards import PROTECTED_DIRS, Guard, guard
from .hosts import internal
from .paths import PathResolver, glob_base, skeleton
from .rules.escapes import escape
from .rules.ruleset import BehaviorRules, CompiledRules, SourcedRule

SETTINGS_HINT = ".toolhost/settings.json"
"""The project's settings file, where the rule an ask or deny names would go."""

PLAN_MODE_MESSAGE = (
    "{tool} was not run: the session is in plan mode, where only read-only tools may run. "
    "Finish exploring, present your plan to the user, and wait for them to leave plan mode "
    "before changing anything."
)

# Reasons that never vary, built once (they are frozen, so every decision may share them).
_READ_INSIDE = DecisionReason("default", "read-only, inside the working directories")
_READ_ONLY_TOOL = DecisionReason("default", "read-only tool")
_NO_COMMAND = DecisionReason("default", "no command")
_CD_INSIDE = DecisionReason("default", "cd inside the working directories")
_READ_ONLY_COMMANDS = DecisionReason("default", "read-only commands inside the working directories")


@dataclass(frozen=True, slots=True)
class _Match:
    rule: SourcedRule
    what: str


def decide(
    *,
    tool: Any,
    input: Any,
    rules: CompiledRules,
    mode: PermissionMode,
    cwd: str,
    resolver: PathResolver,
    working_dirs: Sequence[str] = (),
    hook: HookOutput | None = None,
    shell_cwd: str | None = None,
    sandboxed: bool = False,
    written: Collection[str] = (),
) -> PermissionResult:
    """Decide one call from its tool's flags, the rules and the mode; the reason says why.

    `cwd` and `working_dirs` are the session's roots; `shell_cwd` is where a shell tool's
    command starts (its carried directory); `sandboxed` says the call runs where read-denied
    paths are not visible.
    """
    facts = call_facts(
        tool,
        input,
        cwd=cwd,
        resolver=resolver,
        working_dirs=(cwd, *working_dirs),
        shell_cwd=shell_cwd,
    )
    name = tool.name
    decision = hook.permission_decision if hook else None
    if hook and decision == "deny":
        detail = hook.reason.detail if hook.reason else "a PreToolUse hook"
        return PermissionDeny(f"{name} was blocked by a hook: {detail}", hook.reason)

    denied = _first(rules.deny, facts)
    if denied:
        return PermissionDeny(
            f"Permission to use {name}{denied.what} was denied by the rule "
            f"{denied.rule.rule.text} in {denied.rule.label}.",
            denied.rule.reason(),
        )
    # A Bash rule that names this whole line: the person read it and allowed exactly it.
    line = rules.allow.exact_line(facts.shell_text) if facts.shell_text is not None else None
    unseen = line if line is not None and not sandboxed and _writes_unseen(facts) else None
    if unseen is not None:
        line = None  # (it may write into a protected folder, which no rule waives)
    caught = guard(
        rules, facts, resolver=resolver, sandboxed=sandboxed, written=written, exact=bool(line)
    )
    if caught is not None:
        return _guarded(name, mode, caught, facts.shell_text)
    host = facts.host
    if host is not None and internal(host) and not rules.allow.domain(host, subdomains=False):
        return _guarded(name, mode, _internal_host(host))
    if getattr(tool, "unconfined", False):
        fenced = _unconfined(name, rules, mode)
        if fenced is not None:
            return fenced
    if facts.unverifiable and not (line and facts.is_shell and not _denies_in_force(rules)):
        reason = DecisionReason("other", facts.unverifiable, name)
        message = f"{name} needs approval: {facts.unverifiable}"
        if mode == "plan":
            return PermissionDeny(f"{message}. (Plan mode runs only what can be checked.)", reason)
        return _ask(name, mode, message, reason, ())
    if mode == "plan" and not facts.read_only:
        return PermissionDeny(PLAN_MODE_MESSAGE.format(tool=name), DecisionReason("mode", "plan"))

    asked = _first(rules.ask, facts) or _glob_reaching(rules, facts) or _lookalike(rules, facts)
    if asked:
        message = f"{name}{asked.what} needs approval (rule {asked.rule.rule.text})"
        return _ask(name, mode, message, asked.rule.reason(), ())
    if hook and decision == "ask":
        return _ask(name, mode, f"A hook asks for approval of {name}", hook.reason, ())
    if mode == "bypassPermissions":
        return PermissionAllow(reason=DecisionReason("mode", "bypassPermissions"))

    if line is not None:
        return PermissionAllow(reason=line.reason())
    code_ok = sandboxed and not rules.deny.shell
    reason, suggestions = _allowed(rules.allow, facts, mode, code_ok=code_ok)
    if reason is not None:
        return PermissionAllow(reason=reason)
    if hook and decision == "allow":
        return PermissionAllow(reason=hook.reason or DecisionReason("hook", "allowed by a hook"))
    if unseen is not None:
        detail = (
            f"the rule {unseen.rule.text} in {unseen.label} names this line, but the line names "
            "a protected folder and may write where the check can't see, which no rule waives "
            "outside the sandbox; run it with the sandbox on, or write the paths out"
        )
        suggestions = ()
    elif facts.is_shell and facts.commands:
        detail = _shell_detail(rules.allow, facts, mode, suggestions)
    else:
        detail = _ask_detail(facts)
    reason = DecisionReason("default", detail, None if mode == "default" else mode)
    return _ask(name, mode, f"{name} needs approval: {detail}", reason, suggestions)


def _names_protected(text: str) -> bool:
    """Whether `text` names a protected folder as a whole path component (``web/.git``,
    ``".claude"``), not inside a longer name (``.gitignore``)."""
    folded = text.casefold()
    return any(
        re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])", folded) for name in PROTECTED_DIRS
    )


def _writes_unseen(facts: CallFacts) -> bool:
    """Whether the line names a protected folder (``.git``, ``.toolhost``, ``.claude``) and
    may write where the protected-folder check can't see: a line that can't be split into
    its commands, a target only known when it runs, a path a link made earlier in the line
    may redirect (``ln -s .git g && echo x > g/hooks/pre-commit``). The sandbox keeps those
    folders read-only, so this matters only outside it. (A line that names none of them is
    judged as bypassPermissions judges it: by the writes that can be seen.)"""
    if not _names_protected(facts.shell_text or ""):
        return False
    if facts.unverifiable:
        return True
    for item in facts.commands:
        shifting = bool(item.unresolved or item.after_links)
        if item.dynamic_target or (item.write_targets and shifting):
            return True
        if item.writes and (item.dynamic or shifting or item.globs):
            return True
    return False


def _denies_in_force(rules: CompiledRules) -> bool:
    """Whether a deny rule could reach a shell line's parts (the same test the guards use)."""
    deny = rules.deny
    return bool(deny.shell or deny.read or deny.edit or "shell" in deny.classes)


def _ask(
    name: str,
    mode: PermissionMode,
    message: str,
    reason: DecisionReason | None,
    suggestions: tuple[str, ...],
) -> PermissionResult:
    if mode == "dontAsk":
        hint = (
            f" (for example {suggestions[0]} in permissions.allow of {SETTINGS_HINT})"
            if suggestions and "permissions.allow" not in message
            else ""
        )
        return PermissionDeny(
            f"{message}. The permission mode is dontAsk, so it was denied; an allow rule"
            f"{hint} would permit it.",
            reason or DecisionReason("mode", "dontAsk"),
        )
    return PermissionAsk(message, reason, tuple(dict.fromkeys(suggestions)))


def _guarded(
    name: str, mode: PermissionMode, caught: Guard, line: str | None = None
) -> PermissionResult:
    """A guard's ask (or deny, in the modes that can't ask). Where a rule naming the exact
    line would allow it, the message names that rule and "Always allow" offers it."""
    suggestions: tuple[str, ...] = ()
    message = caught.message
    if caught.exact_rule_allows and line is not None and line.strip():
        suggestions = (f"Bash({escape(line.strip())})",)
        message += (
            f"; or allow this exact line with {suggestions[0]} in permissions.allow of "
            f"{SETTINGS_HINT}"
        )
    if (
        mode == "dontAsk"
        or (mode == "bypassPermissions" and not caught.askable_in_bypass)
        or (mode == "plan" and (caught.unchecked or caught.protected_write))
    ):
        return PermissionDeny(
            f"{name} was not run: {message}. (The permission mode is {mode}, so it "
            "was denied instead of asked.)",
            caught.reason,
        )
    return PermissionAsk(f"{name} needs approval: {message}", caught.reason, suggestions)


def _internal_host(host: str) -> Guard:
    return Guard(
        f"{host} is a loopback or private address (the kernel's own ports and the local "
        f"network are there); it needs an explicit rule such as WebFetch(domain:{host})",
        DecisionReason("safety", "a loopback or private address", host),
        askable_in_bypass=True,
    )


def _unconfined(name: str, rules: CompiledRules, mode: PermissionMode) -> PermissionResult | None:
    """A tool whose code runs in this process (PythonExec) carries no path a rule can check.

    While a Read or Edit deny is in force it asks in every mode that asks, bypassPermissions
    and auto included, and is denied in dontAsk and plan; no allow rule waives that. Without
    such a deny, bypassPermissions and auto still ask, because the protected folders
    (``.toolhost/``, ``.git/``; the session's own results live under ``.toolhost/``) are
    always within its reach; the other modes decide as for any tool.
    """
    deny = rules.deny
    reachable = bool(deny.read or deny.edit) or "read" in deny.classes or "edit" in deny.classes
    if reachable:
        why = (
            "its code runs in the kernel's own process, where the Read and Edit deny rules "
            "in force can't be checked or enforced"
        )
        if mode in ("dontAsk", "plan"):
            return PermissionDeny(
                f"{name} was not run: {why}. (The permission mode is {mode}, so it was denied "
                "instead of asked.)",
                DecisionReason("safety", "code that deny rules can't reach", name),
            )
        return PermissionAsk(
            f"{name} needs approval: {why}",
            DecisionReason("safety", "code that deny rules can't reach", name),
            (),
        )
    if mode in ("bypassPermissions", "auto"):
        return PermissionAsk(
            f"{name} needs approval: its code runs in the kernel's own process and can change "
            "the protected folders (.toolhost/, .git/), so a person must approve it",
            DecisionReason("safety", "code that can reach the protected folders", name),
            (),
        )
    return None


# ── deny and ask: any part of the call matching is enough ────────────────────────────


def _first(rules: BehaviorRules, facts: CallFacts) -> _Match | None:
    if rules.empty:
        return None
    whole = _whole(rules, facts, aliases=True)
    if whole:
        return _Match(whole, "")
    if facts.content is not None:
        hit = rules.content(facts.tool_name, facts.content, folded=True)
        if hit:
            return _Match(hit, f" for {facts.content}")
    if facts.path is not None:
        ref = facts.path
        hit = rules.read.match(ref.candidates)
        if ref.write:
            hit = rules.edit.match(ref.candidates) or hit
        if hit:
            return _Match(hit, f" on {ref.written}")
    if facts.shell is not None:
        found = _shell_first(rules, facts)
        if found:
            return found
    if facts.host is not None:
        hit = rules.domain(facts.host, subdomains=True)
        if hit:
            return _Match(hit, f" for {facts.host}")
    return None


def _whole(rules: BehaviorRules, facts: CallFacts, *, aliases: bool = False) -> SourcedRule | None:
    """A rule naming the whole tool, its MCP server, or its class. With `aliases` (deny and
    ask), rules that name a renamed MCP server by its configured name count too."""
    hit = rules.tools.get(facts.tool_name)
    if hit is None and facts.server is not None:
        names = facts.server_aliases if aliases else ()
        hit = rules.mcp_rule(facts.server, facts.mcp_tool or "", aliases=names)
    if hit is None and rules.classes:
        classes = rules.classes
        if facts.is_shell:
            hit = classes.get("shell")
        if hit is None and facts.path is not None:
            hit = classes.get("edit" if facts.path.write else "read")
        if hit is None and facts.url is not None:
            hit = classes.get("web")
    return hit


def _shell_first(rules: BehaviorRules, facts: CallFacts) -> _Match | None:
    shell = rules.shell if rules.shell else None
    if facts.shell_text is not None and shell is not None:
        hit = shell.match((facts.shell_text,))
        if hit:
            return _Match(hit, f" for `{facts.shell_text}`")
    paths = bool(rules.read or rules.edit)
    for item in facts.commands:
        command = item.command
        if shell is not None:
            hit = shell.match((command.text, command.source_text))
            if hit:
                return _Match(hit, f" for `{command.text}`")
        for ref in (*item.paths, *item.write_targets, *item.read_targets) if paths else ():
            hit = rules.read.match(ref.candidates) or rules.edit.match(ref.candidates)
            if hit:
                return _Match(hit, f" on {ref.written}")
    return None


def _glob_reaching(rules: CompiledRules, facts: CallFacts) -> _Match | None:
    """A glob operand that may expand to a path an ask rule or an Edit deny protects: ask.
    (A glob that may reach a Read deny is stopped by the guards, unless sandboxed.)"""
    for item in facts.commands:
        for glob in item.globs:
            hit = (
                rules.deny.edit.reaches_into(glob)
                or rules.ask.read.reaches_into(glob)
                or rules.ask.edit.reaches_into(glob)
            )
            if hit:
                return _Match(hit, f" (the pattern {glob} may expand to a protected path)")
    return None


def _lookalike(rules: CompiledRules, facts: CallFacts) -> _Match | None:
    """A path or command that only differs from a denied one by look-alike letters: ask."""
    if facts.ascii:
        return None
    texts = [c for ref in _refs(facts) for c in ref.candidates]
    texts = [skeleton(t) for t in texts if not t.isascii()]
    if texts:
        hit = rules.deny.read.match(texts) or rules.deny.edit.match(texts)
        if hit:
            return _Match(hit, " (a path that looks like a protected one)")
    commands = [skeleton(c.command.text) for c in facts.commands if not c.command.text.isascii()]
    hit = rules.deny.shell.match(commands) if commands else None
    return _Match(hit, " (a command that looks like a denied one)") if hit else None


def _refs(facts: CallFacts) -> list[PathRef]:
    refs = [facts.path] if facts.path is not None else []
    for item in facts.commands:
        refs.extend((*item.paths, *item.write_targets, *item.read_targets))
    return refs


# ── allow: every part of the call must be allowed ────────────────────────────────────


def _allowed(
    rules: BehaviorRules, facts: CallFacts, mode: PermissionMode, *, code_ok: bool
) -> tuple[DecisionReason | None, tuple[str, ...]]:
    whole = _whole(rules, facts)
    if whole:
        return whole.reason(), ()
    content = rules.content(facts.tool_name, facts.content) if facts.content else None
    if content:
        return content.reason(), ()
    if facts.is_shell:
        return _shell_allowed(rules, facts, mode, code_ok=code_ok)
    if facts.path is not None:
        ref = facts.path
        hit = _all_match(rules, ref, read=not ref.write)
        if hit:
            return hit.reason(), ()
        inside = facts.inside(ref)
        if ref.write and mode == "acceptEdits" and inside:
            return DecisionReason("mode", "acceptEdits: an edit inside the working directories"), ()
        if not ref.write and inside:
            return _READ_INSIDE, ()
        kind = "Edit" if ref.write else "Read"
        return None, (f"{kind}({_rule_path(ref, facts)})",)
    if facts.url is not None:
        hit = rules.domain(facts.host, subdomains=False) if facts.host else None
        if hit:
            return hit.reason(), ()
        return None, (f"WebFetch(domain:{facts.host})",) if facts.host else ()
    if facts.read_only:
        return _READ_ONLY_TOOL, ()
    return None, (facts.tool_name,)


def _all_match(rules: BehaviorRules, ref: PathRef, *, read: bool) -> SourcedRule | None:
    first: SourcedRule | None = None
    for candidate in ref.candidates:
        hit = rules.edit.match((candidate,))
        if hit is None and read:
            hit = rules.read.match((candidate,))
        if hit is None:
            return None
        first = first or hit
    return first


def _shell_allowed(
    rules: BehaviorRules, facts: CallFacts, mode: PermissionMode, *, code_ok: bool
) -> tuple[DecisionReason | None, tuple[str, ...]]:
    suggestions: list[str] = []
    reasons: list[DecisionReason] = []
    whole_line = False
    for item in facts.commands:
        command = item.command
        reason = _command_allowed(rules, facts, item, mode, code_ok=code_ok)
        if reason is None:
            text = command.source_text if command.risky else command.text
            suggestions.append(f"Bash({escape(text)})")
            whole_line = whole_line or _needs_whole_line(item)
        else:
            reasons.append(reason)
        for ref in item.write_targets:
            hit = _all_match(rules, ref, read=False)
            if hit:
                reasons.append(hit.reason())
            elif mode == "acceptEdits" and facts.inside(ref):
                reasons.append(
                    DecisionReason("mode", "acceptEdits: a write inside the working dirs")
                )
            else:
                suggestions.append(f"Edit({_rule_path(ref, facts)})")
        for ref in item.read_targets:
            if not (facts.inside(ref) or _all_match(rules, ref, read=True)):
                suggestions.append(f"Read({_rule_path(ref, facts)})")
        if item.dynamic_target:
            suggestions.append(f"Bash({escape(command.source_text)})")
            whole_line = True
    if whole_line and facts.shell_text is not None and facts.shell_text.strip():
        # A command inside a loop or with expansions, written out on its own, means
        # something else (`echo "step $i"` as `echo 'step $i'`): offer the line as run.
        return None, (f"Bash({escape(facts.shell_text.strip())})",)
    if suggestions or not reasons:
        return None, tuple(suggestions)
    for kind in ("rule", "mode"):
        for reason in reasons:
            if reason.kind == kind:
                return reason, ()
    return reasons[0], ()


def _needs_whole_line(item: CommandFacts) -> bool:
    """Whether a rule for this command alone would not mean what runs: its words hold
    expansions (a loop's variable, a substitution), or it runs nested or hidden."""
    command = item.command
    return (
        item.dynamic
        or command.risky
        or command.nested
        or any(word.dynamic for word in command.parts)
    )


def _shell_detail(
    rules: BehaviorRules, facts: CallFacts, mode: PermissionMode, suggestions: tuple[str, ...]
) -> str:
    """Why a command line asks, and the rule that would allow it (and where it goes)."""
    why = "no allow rule names it"
    code_ok = False
    for item in facts.commands:
        command = item.command
        if _command_allowed(rules, facts, item, mode, code_ok=code_ok) is not None:
            continue
        prefix = rules.shell.match((command.text, command.source_text))
        outside = [ref.written for ref in (*item.paths, *item.trees) if not facts.inside(ref)]
        if command.risky and prefix is not None:
            why = (
                f"the rule {prefix.rule.text} in {prefix.label} names `{command.text}`, but "
                f"{_lower(command.risk_reason)}: a prefix rule does not vouch for that, a rule "
                "naming the exact command does"
            )
        elif outside:
            why = f"`{command.text}` reaches {outside[0]}, outside the working directories"
        else:
            why = f"no allow rule names `{command.source_text or command.text}`"
        break
    if not suggestions:
        return why
    return (
        f"{why}. To allow it from now on, add {suggestions[0]} to permissions.allow in "
        f'{SETTINGS_HINT} ("Always allow" saves it to the local one)'
    )


def _lower(text: str) -> str:
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


def _command_allowed(
    rules: BehaviorRules,
    facts: CallFacts,
    item: CommandFacts,
    mode: PermissionMode,
    *,
    code_ok: bool = False,
) -> DecisionReason | None:
    """Why one sub-command is allowed, or None. `code_ok`: an interpreter's inline program
    (``python3 -c``) counts as its script would, for a prefix rule (the sandbox holds and
    no Bash deny rule exists)."""
    command = item.command
    if not command.parts:
        return _NO_COMMAND
    if command.risky and not (code_ok and command.inline_only):
        hit = rules.shell.match((command.source_text,), exact_only=True)
    else:
        hit = rules.shell.match((command.text, command.source_text))
    if hit:
        return hit.reason()
    if item.dynamic and not operands_from_environment(facts.shell_text or "=", item):
        return None
    if not all(_inside_dir(facts, _glob_dir(g)) for g in item.globs):
        return None
    if not all(facts.inside(ref) for ref in (*item.paths, *item.trees)):
        return None
    if not facts.shell_inside():
        return None  # the shell is outside the roots: what it reads there is not allowed
    if command.changes_directory:
        return _CD_INSIDE
    if mode == "acceptEdits" and creates_or_moves_files(command):
        return DecisionReason("mode", f"acceptEdits: {command.name} inside the working dirs")
    if item.traits is not None and item.traits.read_only:
        return _READ_ONLY_COMMANDS
    return None


def _inside_dir(facts: CallFacts, directory: str) -> bool:
    return any(
        d == directory or directory.startswith(d.rstrip("/") + "/") for d in facts.working_dirs
    )


def _glob_dir(glob: str) -> str:
    return posixpath.normpath(glob_base(glob))


def _rule_path(ref: PathRef, facts: CallFacts) -> str:
    """The path of a suggested rule: relative to the working directory when the file lies
    inside it (`notes.md`, `data/raw.csv`), else absolute (`//etc/hosts`)."""
    path = ref.candidates[-1]
    cwd = facts.working_dirs[0] if facts.working_dirs else ""
    inside = cwd and path.startswith(cwd.rstrip("/") + "/")
    shown = path[len(cwd.rstrip("/")) + 1 :] if inside else path
    escaped = escape("".join("\\" + c if c in "*?[]\\" else c for c in shown))
    return escaped if inside else "/" + escaped


def _ask_detail(facts: CallFacts) -> str:
    if facts.is_shell:
        return "no allow rule names the command"
    if facts.path is not None:
        where = "outside the working directories" if not facts.inside(facts.path) else ""
        verb = "writes" if facts.path.write else "reads"
        return f"it {verb} {facts.path.written} {where}".rstrip()
    if facts.url is not None:
        return f"it fetches from {facts.host or facts.url}"
    return "it is not read-only and no rule allows it"
