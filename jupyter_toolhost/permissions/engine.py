"""`PermissionEngine`: the `CanUseTool` the pipeline calls, wrapping the pure `decide()`.

It reads the mode and the rules from the app state's permission context, compiles the rules
once per change, runs `decide()`, then the tool's own `check_permissions`, then — for what
is still "ask" — dontAsk's denial, auto mode's classifier, or the approver. "Always allow"
adds the suggested rules (one per sub-command of a compound command) as session rules, and
with `save` writes them to the local settings too (``.toolhost/settings.local.json``).
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from pydantic import ValidationError

from ..core.context import AppState
from ..core.types import (
    DecisionReason,
    PermissionAllow,
    PermissionAsk,
    PermissionDeny,
    PermissionResult,
    RuleBehavior,
    ToolPermissionContext,
)
from .api import Approver, PermissionRequest, ask_approver, tool_check
from .decision import PLAN_MODE_MESSAGE, decide
from .facts import call_facts, mcp_facts
from .paths import OsResolver, PathResolver, candidates
from .rules.ruleset import CELL, SESSION, CompiledRules, RuleSource, compiled_rules
from .settings.managed import SOURCE as MANAGED
from .settings.managed import Policy
from .settings.settings import SettingsError, save_rule
from .startup import warm_up
from .written import written_by

if TYPE_CHECKING:
    from ..core.context import ToolUseContext
    from ..core.tool import Tool

Classifier: TypeAlias = Callable[[PermissionRequest], Awaitable[Literal["allow", "deny"] | None]]
"""Auto mode's judge of calls that would ask: "allow", "deny", or None to ask after all."""

_FIRM = ("rule", "mode", "hook")

__all__ = [
    "PLAN_MODE_MESSAGE",
    "Classifier",
    "PermissionEngine",
    "add_session_rules",
    "decide",
    "edit_note",
    "end_cell_rules",
    "no_classifier",
    "nothing_hidden",
    "read_denied",
    "tools_denied_whole",
    "with_session_rules",
]


async def no_classifier(_request: PermissionRequest) -> Literal["allow", "deny"] | None:
    """The default classifier: never sure, so auto mode falls back to asking."""
    return None


class PermissionEngine:
    """Rules, modes, hooks, the tool's own check and the approver, combined."""

    def __init__(
        self,
        *,
        approver: Approver | None = None,
        classifier: Classifier = no_classifier,
        resolver: PathResolver | None = None,
        sources: Mapping[str, RuleSource] | None = None,
        home: str | None = None,
        policy: Policy | None = None,
    ) -> None:
        self.policy = policy or Policy()
        """The managed settings (`settings.managed`): a mode they forbid decides as
        ``default``, and with ``allowManagedPermissionRulesOnly`` only their allow rules
        count, whatever adds others later (Always allow, a cell's scope, `add_rule`)."""
        self.approver = approver
        self.classifier = classifier
        self.resolver: PathResolver = resolver or OsResolver(home=home)
        self.sources = dict(sources or {})
        self.problems: list[str] = []
        """Rules that did not compile and settings that could not be saved."""
        self._home = home
        warm_up()  # (what a kernel start imports, derived once per process: `startup`)

    def compiled(self, permission: ToolPermissionContext, cwd: str) -> CompiledRules:
        """The rules of `permission`, compiled once for each new rules mapping."""
        rules: Mapping[str, Mapping[RuleBehavior, Sequence[str]]] = permission.rules
        if self.policy.managed_rules_only:
            rules = {
                source: by if source == MANAGED else {b: r for b, r in by.items() if b != "allow"}
                for source, by in rules.items()
            }
        compiled = compiled_rules(rules, cwd=cwd, home=self.resolver.home(), sources=self.sources)
        self.problems.extend(p for p in compiled.problems if p not in self.problems)
        return compiled

    async def __call__(self, request: PermissionRequest) -> PermissionResult:
        context = request.context
        # The call's own view of the rules (`read_denied`, the sandbox) uses this home too.
        context.home = self.resolver.home()
        state = context.get_app_state()
        permission = state.tool_permission_context
        if self.policy.refuse_mode(permission.mode) is not None:
            permission = replace(permission, mode="default")  # however the mode was set
        cwd = os.fspath(context.cwd)
        tool = request.tool
        shell_cwd = state.shell_cwd if tool.shell_command is not None else None
        if isinstance(shell_cwd, str) and not os.path.isdir(shell_cwd):  # noqa: ASYNC240 (one stat)
            return _shell_folder_gone(context, shell_cwd, cwd)
        verdict = decide(
            tool=request.tool,
            input=request.input,
            rules=self.compiled(permission, os.fspath(context.rule_root)),
            mode=permission.mode,
            cwd=cwd,
            resolver=self.resolver,
            working_dirs=permission.additional_working_directories,
            hook=request.hook,
            shell_cwd=shell_cwd if isinstance(shell_cwd, str) else None,
            sandboxed=tool.runs_sandboxed(context),
            written=_written(state),
        )
        if isinstance(verdict, PermissionDeny) and not _mode_only(verdict):
            return verdict
        answer = await self._decided(request, verdict, permission, cwd)
        if isinstance(answer, PermissionAllow) and not _read_only(tool, request):
            self._record_writes(request, cwd, shell_cwd)
        return answer

    async def _decided(
        self,
        request: PermissionRequest,
        verdict: PermissionResult,
        permission: ToolPermissionContext,
        cwd: str,
    ) -> PermissionResult:
        """The tool's own check, dontAsk, auto's classifier and the approver, after
        `decide()`."""
        context = request.context
        checked = await tool_check(request)
        if _mode_only(verdict) and _vouched(checked):
            return checked
        if isinstance(verdict, PermissionDeny):
            return verdict
        result = _merge(verdict, checked, request)
        if not isinstance(result, PermissionAsk):
            return result
        if permission.mode == "dontAsk":
            return PermissionDeny(
                f"{result.message}. The permission mode is dontAsk, so it was denied.",
                DecisionReason("mode", "dontAsk"),
            )
        firm = result.reason is not None and result.reason.kind in ("rule", "safety")
        if permission.mode == "auto" and not firm:
            judged = await self._classify(request)
            if judged is not None:
                return judged
        answer, decision = await ask_approver(request, result, self.approver)
        if decision is None or not isinstance(answer, PermissionAllow):
            return answer
        if decision.edited_input is not None:
            return self._edited(request, decision.edited_input, permission, cwd)
        guarded = result.reason is not None and result.reason.kind == "safety"
        rules = result.suggested_rules or (request.tool.name,)
        if decision.choice == "cell" and not guarded:
            add_session_rules(context, rules, source=CELL)
        if decision.choice == "always" and not guarded:
            add_session_rules(context, rules)
            if decision.save:
                self._save(rules, os.fspath(context.rule_root))
        return answer

    def _edited(
        self,
        request: PermissionRequest,
        edited: Mapping[str, Any],
        permission: ToolPermissionContext,
        cwd: str,
    ) -> PermissionResult:
        """A call the person changed before allowing it: it runs as changed when the
        change is valid input and no deny refuses it (the person's approval stands for the
        rest), and the model is told what changed."""
        tool = request.tool
        try:
            parsed = tool.input_model.model_validate(dict(edited))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']}" for e in exc.errors()
            )
            return PermissionDeny(
                f"The person edited this {tool.name} call, but the edited input is not valid "
                f"({problems}), so it was not run.",
                DecisionReason("approver", "edited input not valid"),
            )
        verdict = decide(
            tool=tool,
            input=parsed,
            rules=self.compiled(permission, os.fspath(request.context.rule_root)),
            mode=permission.mode,
            cwd=cwd,
            resolver=self.resolver,
            working_dirs=permission.additional_working_directories,
            hook=request.hook,
            sandboxed=tool.runs_sandboxed(request.context),
            written=_written(request.context.get_app_state()),
        )
        if isinstance(verdict, PermissionDeny) and not _mode_only(verdict):
            return PermissionDeny(
                f"The person edited this {tool.name} call, and the edited call is denied: "
                f"{verdict.message}",
                verdict.reason,
            )
        values = parsed.model_dump(mode="json", exclude_unset=True)
        before = request.input.model_dump(mode="json", exclude_unset=True)
        return PermissionAllow(
            values,
            DecisionReason("approver", "edited and allowed once by the user"),
            context=(edit_note(tool.name, before, values),),
        )

    def _record_writes(self, request: PermissionRequest, cwd: str, shell_cwd: object) -> None:
        """Remember what the allowed call may write (see `written`)."""
        context = request.context
        state = context.get_app_state()
        permission = state.tool_permission_context
        facts = call_facts(
            request.tool,
            request.input,
            cwd=cwd,
            resolver=self.resolver,
            working_dirs=(cwd, *permission.additional_working_directories),
            shell_cwd=shell_cwd if isinstance(shell_cwd, str) else None,
        )
        paths = written_by(facts)
        if not paths:
            return

        def update(state: AppState) -> AppState:
            before = _written(state)
            added = tuple(p for p in dict.fromkeys(paths) if p not in before)
            return replace(state, written_paths=(*before, *added))

        context.set_app_state(update)

    async def _classify(self, request: PermissionRequest) -> PermissionResult | None:
        try:
            judged = await self.classifier(request)
        except Exception as exc:
            self.problems.append(f"auto-mode classifier failed: {type(exc).__name__}: {exc}")
            return None
        source = getattr(self.classifier, "__name__", type(self.classifier).__name__)
        if judged == "allow":
            return PermissionAllow(
                reason=DecisionReason("classifier", "allowed in auto mode", source)
            )
        if judged == "deny":
            return PermissionDeny(
                f"The auto-mode classifier did not allow this {request.tool.name} call.",
                DecisionReason("classifier", "denied in auto mode", source),
            )
        return None

    def _save(self, rules: Iterable[str], cwd: str) -> None:
        for rule in rules:
            try:
                save_rule(rule, "allow", scope="local", cwd=cwd, home=self._home)
            except (SettingsError, OSError, ValueError) as exc:
                self.problems.append(f"could not save {rule}: {exc}")

    def tools_denied_whole(self, tools: Iterable[Tool[Any]], context: ToolUseContext) -> set[str]:
        """Names of tools a deny rule removes entirely (see `tools_denied_whole`)."""
        permission = context.get_app_state().tool_permission_context
        compiled = self.compiled(permission, os.fspath(context.rule_root))
        return _denied_whole(tools, compiled)


def _written(state: AppState) -> tuple[str, ...]:
    return state.written_paths


def _read_only(tool: Tool[Any], request: PermissionRequest) -> bool:
    return tool.flag(tool.is_read_only, request.input)


def _shell_folder_gone(context: ToolUseContext, gone: str, cwd: str) -> PermissionResult:
    """The shell's remembered folder no longer exists: its relative paths can't be resolved
    as bash would, and silently starting elsewhere would run the command somewhere the
    check did not look. Nothing runs; the shell is put back in the session's folder, which
    the next call is checked against."""

    def reset(state: AppState) -> AppState:
        return replace(state, shell_cwd=None)

    context.set_app_state(reset)
    message = (
        f"The shell's folder {gone} no longer exists, so this command can't be checked before "
        f"it runs and was not run. The shell is back in {cwd}; run the command again from "
        "there (with paths from that folder)."
    )
    return PermissionDeny(message, DecisionReason("safety", "the shell's folder is gone", gone))


def _mode_only(verdict: PermissionResult) -> bool:
    """A verdict that comes from the mode alone (no rule or hook named this call)."""
    reason = verdict.reason
    return not isinstance(verdict, PermissionAllow) and (
        reason is None or reason.kind in ("mode", "default")
    )


def _vouched(checked: PermissionResult) -> bool:
    """The tool's own check allowed the call explicitly (a reason of kind "tool"): a tool that
    changes nothing outside the session (a checklist, a pause, a sub-agent whose own calls are
    checked) needs no approval in any mode; rules and hooks still apply."""
    return (
        isinstance(checked, PermissionAllow)
        and checked.reason is not None
        and checked.reason.kind == "tool"
    )


def _merge(
    verdict: PermissionResult, checked: PermissionResult, request: PermissionRequest
) -> PermissionResult:
    """Combine `decide()` with the tool's own check: its deny always wins; its ask wins over
    a default allow, not over a rule, a mode or a hook; its rewritten input is kept."""
    if isinstance(checked, PermissionDeny):
        return checked
    updated = checked.updated_input
    if isinstance(verdict, PermissionAllow):
        firm = verdict.reason is not None and verdict.reason.kind in _FIRM
        if isinstance(checked, PermissionAsk) and not firm:
            return replace(checked, suggested_rules=checked.suggested_rules or (request.tool.name,))
        return replace(verdict, updated_input=updated) if updated is not None else verdict
    if isinstance(verdict, PermissionAsk) and updated is not None:
        return replace(verdict, updated_input=updated)
    return verdict


def add_session_rules(
    context: ToolUseContext,
    rules: Iterable[str],
    behavior: RuleBehavior = "allow",
    *,
    source: str = SESSION,
) -> None:
    """Add rules to the session source of the permission context (atomically), or to
    `source` (``CELL``: until `end_cell_rules`)."""
    new = tuple(rules)

    def update(state: AppState) -> AppState:
        permission = state.tool_permission_context
        all_rules = {source: dict(by) for source, by in permission.rules.items()}
        session = all_rules.setdefault(source, {})
        current = tuple(session.get(behavior, ()))
        session[behavior] = current + tuple(r for r in new if r not in current)
        return replace(state, tool_permission_context=replace(permission, rules=all_rules))

    context.set_app_state(update)


def end_cell_rules(context: ToolUseContext) -> None:
    """Forget what was allowed "for this cell": the cell (or the run) has ended."""

    def update(state: AppState) -> AppState:
        permission = state.tool_permission_context
        if CELL not in permission.rules:
            return state
        kept = {source: by for source, by in permission.rules.items() if source != CELL}
        return replace(state, tool_permission_context=replace(permission, rules=kept))

    context.set_app_state(update)


def edit_note(tool: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """What the model is told about a call a person edited: each changed field, a text one
    as a diff."""
    lines = [f"The person edited this {tool} call's input before allowing it; it ran as edited."]
    for key in dict.fromkeys((*before, *after)):
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        if isinstance(old, str) and isinstance(new, str) and ("\n" in old or "\n" in new):
            diff = difflib.unified_diff(
                old.splitlines(), new.splitlines(), f"{key} (yours)", f"{key} (ran)", lineterm=""
            )
            lines.append("\n".join(diff))
        else:
            lines.append(f"{key}: {json.dumps(old)} → {json.dumps(new)}")
    return "\n".join(lines)


def with_session_rules(
    permission: ToolPermissionContext, rules: Iterable[tuple[str, RuleBehavior]]
) -> ToolPermissionContext:
    """`permission` with `(rule, behavior)` pairs added to its session source, as
    `add_session_rules` adds them (for a session's starting rules)."""
    new = tuple(rules)
    if not new:
        return permission
    all_rules = {source: dict(by) for source, by in permission.rules.items()}
    session = all_rules.setdefault(SESSION, {})
    for rule, behavior in new:
        current = tuple(session.get(behavior, ()))
        if rule not in current:
            session[behavior] = (*current, rule)
    return replace(permission, rules=all_rules)


def tools_denied_whole(
    tools: Iterable[Tool[Any]],
    permission: ToolPermissionContext,
    *,
    cwd: str,
    home: str | None = None,
) -> set[str]:
    """Names of tools a deny rule names whole (``Tool``, ``mcp__server``, bare ``Bash`` for
    every shell tool, bare ``WebFetch`` for every fetching tool): not sent to the model."""
    compiled = compiled_rules(permission.rules, cwd=cwd, home=home or os.path.expanduser("~"))
    return _denied_whole(tools, compiled)


def rules_home(context: ToolUseContext) -> str:
    """The home directory ``~`` stands for in the rules a call is checked against: the
    permission engine's, once it has decided the call; the user's before."""
    return context.home if context.home is not None else os.path.expanduser("~")


def nothing_hidden(path: str) -> bool:
    """What `read_denied` returns when no rule hides anything: a caller may skip the check."""
    return False


def read_denied(context: ToolUseContext) -> Callable[[str], bool]:
    """A predicate for tools that walk trees (Grep, Glob): True for a path a deny rule hides.

    A search over a directory is allowed even when a Read deny protects something inside
    it; the tool must drop what this predicate flags from what it returns.
    """
    cwd = os.fspath(context.cwd)
    resolver = OsResolver(home=rules_home(context))
    deny = _read_rules(context).deny
    if "read" in deny.classes:
        return lambda path: True
    if not deny.read:
        # No Read deny rule: nothing is hidden, and no path needs resolving (a search
        # with thousands of hits paid a realpath for each).
        return nothing_hidden

    def hidden(path: str) -> bool:
        found = candidates(path, cwd=cwd, resolver=resolver)
        return deny.read.match(found) is not None

    return hidden


def edit_denied(context: ToolUseContext) -> Callable[[str], bool]:
    """A predicate for tools that write: True for a path an Edit deny protects."""
    cwd = os.fspath(context.cwd)
    resolver = OsResolver(home=rules_home(context))
    deny = _read_rules(context).deny

    def protected(path: str) -> bool:
        found = candidates(path, cwd=cwd, resolver=resolver)
        return deny.edit.match(found) is not None or "edit" in deny.classes

    return protected


def reads_withheld_under(context: ToolUseContext, root: str) -> bool:
    """Whether a Read deny may protect something at or below the directory `root`: decided
    from the rules alone, never from what the files hold, so a note built on it tells the
    model nothing about a denied file's contents."""
    deny = _read_rules(context).deny
    if "read" in deny.classes:
        return True
    resolver = OsResolver(home=rules_home(context))
    for path in candidates(root, cwd=os.fspath(context.cwd), resolver=resolver):
        if deny.read.match((path,)) is not None or deny.read.reaching_tree(path)[0] is not None:
            return True
    return False


def _read_rules(context: ToolUseContext) -> CompiledRules:
    permission = context.get_app_state().tool_permission_context
    anchor = os.fspath(context.rule_root)
    return compiled_rules(permission.rules, cwd=anchor, home=rules_home(context))


def _denied_whole(tools: Iterable[Tool[Any]], compiled: CompiledRules) -> set[str]:
    deny = compiled.deny
    names: set[str] = set()
    for tool in tools:
        mcp = mcp_facts(tool)
        if (
            tool.name in deny.tools
            or (mcp is not None and deny.mcp_rule(mcp.server, mcp.tool, aliases=mcp.aliases))
            or (tool.shell_command is not None and "shell" in deny.classes)
            or (tool.get_url is not None and "web" in deny.classes)
        ):
            names.add(tool.name)
    return names
