"""How a `Session` is put together: its permissions, side models, settings watch and MCP
servers from the settings files, and the approver wrapper that reports each approval."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.types import PermissionMode, RuleBehavior, ToolPermissionContext
from ..hooks.hooks import Hooks
from ..model.anthropic_model import AnthropicModel
from ..model.base import Model
from ..permissions.api import ApprovalDecision, ApprovalRequest, Approver, CanUseTool
from ..permissions.engine import Classifier, PermissionEngine, no_classifier, with_session_rules
from ..permissions.rules.ruleset import RuleSource
from ..permissions.settings.managed import SOURCE as MANAGED
from ..permissions.settings.managed import Budgets, Policy, load_policy
from .events import LoopEvent, PermissionAnswered, PermissionRequested

if TYPE_CHECKING:
    from ..mcp import McpManager
    from ..model.small import SmallModel
    from ..permissions.settings.claude_settings import ClaudeImport
    from ..permissions.settings.settings_watch import SettingsWatch
    from ..permissions.settings.trust import FolderTrust


def web_search_for(model: Model, model_id: str) -> Any:
    """WebSearch on the API's server-side search tool, for models that speak the Messages
    API (the Anthropic client, or a cassette of it); None for anything else."""
    from ..model.cassette import CassetteModel
    from ..model.web_search import ServerWebSearch

    if isinstance(model, AnthropicModel | CassetteModel):
        return ServerWebSearch(model=model, model_id=model_id)
    return None


def thinking_options(
    thinking: object, context_management: object
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The session's `thinking` and `context_management`, checked now (`ThinkingConfigError`,
    a `ValueError`, in the API's words) so a malformed one never costs a request."""
    from ..model.thinking import ThinkingConfigError, check_context_management, check_thinking

    try:
        checked = check_thinking(thinking)
        return checked, check_context_management(context_management, checked)
    except ThinkingConfigError as exc:
        raise ThinkingConfigError(f"Session: {exc}") from None


def cassette_session(model: Model) -> str | None:
    """The session id a cassette holds (or will hold, when recording); None for any other
    model, and for a cassette that cannot be used (its run then says why)."""
    from ..model.cassette import CassetteError, CassetteModel

    if not isinstance(model, CassetteModel):
        return None
    try:
        return model.session_id
    except CassetteError:
        return None


def side_models(model: Model, small_model: str | None) -> SmallModel | None:
    """The session's small model (WebFetch's `prompt`; id from `small_model`, then
    `JUPYTER_TOOLHOST_SMALL_MODEL`, then a Haiku), on the session's client."""
    from ..model.small import small_model_for, small_model_name

    return small_model_for(model, small_model_name(small_model))


class ReportingApprover:
    """Reports each approval request as a `PermissionRequested` event, asks, and reports
    the answer (or that none came) as a `PermissionAnswered` event, through `emit` (the
    session's loop)."""

    def __init__(
        self, inner: Approver | None, emit: Callable[[LoopEvent], None] | None = None
    ) -> None:
        self.inner = inner
        self.emit = emit

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        asked = PermissionRequested(request)
        if self.emit is not None:
            self.emit(asked)
        decision: ApprovalDecision | None = None
        try:
            if self.inner is None:
                decision = ApprovalDecision("deny", "no one is available to approve this call")
            else:
                decision = await self.inner.ask(request)
            return decision
        finally:
            if self.emit is not None:
                answered = time.perf_counter()
                self.emit(PermissionAnswered(request, decision, asked.asked_at, answered))


@dataclass(frozen=True, slots=True)
class StartingPermissions:
    context: ToolPermissionContext
    problems: tuple[object, ...] = ()
    claude_imports: tuple[ClaudeImport, ...] = ()
    policy: Policy = field(default_factory=lambda: Policy())
    allowed_domains: tuple[str, ...] = ()
    """The sandbox's network allow-list: the settings files', within the policy's."""
    denied_domains: tuple[str, ...] = ()
    budgets: Budgets = field(default_factory=lambda: Budgets())
    budget_sources: dict[str, str] = field(default_factory=dict[str, str])


def starting_permissions(
    cwd: Path,
    mode: PermissionMode | None,
    approver: Approver,
    can_use_tool: CanUseTool | None,
    hooks: Hooks,
    load: bool,
    rules: Iterable[tuple[str, RuleBehavior]] = (),
    classifier: Classifier = no_classifier,
    trusted: bool = False,
) -> tuple[StartingPermissions, CanUseTool]:
    """The starting permission context (with `rules` added as the session's own) and the
    decision function of a new session (a `PermissionEngine` judging auto mode's calls
    with `classifier`, unless `can_use_tool` is given). The folder's own settings files
    give only what narrows unless the folder is `trusted` (see `settings.trust`)."""
    from ..permissions.settings.settings import Settings, load_settings

    settings = load_settings(cwd=cwd, trusted=trusted) if load else Settings()
    if load:
        settings.register_hooks(hooks)
    policy = load_policy()  # the managed settings hold whether or not the files are read
    problems: list[object] = list(settings.problems)
    context = settings.permission_context(mode=mode)  # may note a bad mode variable
    context = with_session_rules(context, rules)
    refused = policy.refuse_mode(context.mode)
    if refused is not None:
        problems.append(refused.replace("the cell kept its mode", "the session starts in default"))
        context = replace(context, mode="default")
    if policy.files:
        managed = {"allow": policy.allow, "ask": policy.ask, "deny": policy.deny}
        context = replace(context, rules={**context.rules, MANAGED: managed})
    allowed = settings.allowed_domains
    if policy.allowed_domains is not None:  # the policy's list is the widest it may be
        allowed = tuple(d for d in allowed if d in policy.allowed_domains)
    budgets = policy.budgets.lowest(Budgets.model_validate(settings.budgets))
    sources = {name: f"policy:{policy.files[-1]}" for name in policy.budgets.caps()}
    for name, cap in settings.budgets.items():
        if policy.budgets.caps().get(name, float("inf")) > cap:
            sources[name] = settings.budget_files[name]
    starting = StartingPermissions(
        context,
        tuple(problems),
        tuple(settings.claude_imports),
        policy,
        allowed,
        (*settings.denied_domains, *policy.denied_domains),
        budgets,
        sources,
    )
    engine = can_use_tool or PermissionEngine(
        approver=approver,
        sources={**settings.sources, MANAGED: RuleSource(", ".join(policy.files), str(cwd))},
        classifier=classifier,
        policy=policy,
    )
    return starting, engine


def watch_settings(cwd: Path) -> SettingsWatch:
    """Watch the settings files the session read, to say when one changes on disk."""
    from ..permissions.settings.settings import settings_files
    from ..permissions.settings.settings_watch import SettingsWatch

    return SettingsWatch(path for _, path, _ in settings_files(cwd=cwd))


def mcp_from_settings(cwd: Path, load: bool, trusted: bool = False) -> McpManager | None:
    """The MCP servers the settings files configure (the folder's own only when it is
    `trusted`); None when there are none (the `mcp` SDK is then never imported)."""
    if not load or not _mentions_mcp_servers(cwd, trusted):
        return None
    from ..mcp import McpManager

    return McpManager.from_settings(cwd, trusted=trusted)


def folder_trust_for(cwd: Path, load: bool, decided: bool | None) -> FolderTrust | None:
    """Whether the session's folder is trusted (`settings.trust`); None when the settings
    files are not read at all."""
    if not load:
        return None
    from ..permissions.settings.trust import folder_trust

    return folder_trust(cwd, decided=decided)


def _mentions_mcp_servers(cwd: Path, trusted: bool) -> bool:
    user = Path.home() / ".toolhost" / "settings.json"
    for path in (user, cwd / ".toolhost" / "settings.json") if trusted else (user,):
        try:
            if "mcpServers" in path.read_text(encoding="utf-8"):
                return True
        except OSError:
            continue
    return False
