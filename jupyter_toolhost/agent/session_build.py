"""Building a `Session`'s parts in one pass: `assemble()` is the one way a session is made.

It takes the `SessionConfig` whole and resolves what the options leave open (the model and
its id, the tool pool, the working folder). Each part is made with everything it needs, in
dependency order: the permission state and decision function from the settings files, the
context with every typed option the session provides to tools (small model, web search,
sandbox settings, a way to run prompts), then each tool's session-start hook
(`Tool.on_session_start`), the pipeline, then the loop, which installs its own subagent
runner. Nothing is set on a part after it is made. The two back references (the
approver's reports and the auto-mode classifier need the loop's events and conversation)
are closures over the loop.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..core.context import (
    AppState,
    AppStateStore,
    SandboxOptions,
    ToolUseContext,
    ToolUseOptions,
    new_session_id,
    toolhost_home,
)
from ..core.errors import ConfigurationError
from ..core.redaction import Redactor
from ..core.results import ResultStore
from ..core.tool import Tool, start_session
from ..hooks.hooks import Hooks
from ..model.anthropic_model import AnthropicModel, default_model_name
from ..model.base import Model
from ..orchestration.checkpoints import CheckpointStore
from ..orchestration.pipeline import Pipeline
from ..permissions.engine import PermissionEngine, no_classifier
from ..permissions.settings.managed import Policy
from .budget import BudgetGuard, DayCounter
from .events import LoopEvent
from .loop import AgentLoop
from .session_config import SessionConfig
from .session_setup import (
    ReportingApprover,
    cassette_session,
    folder_trust_for,
    mcp_from_settings,
    side_models,
    starting_permissions,
    watch_settings,
    web_search_for,
)
from .subagent_loop import LoopRunner
from .transcript import Transcript

if TYPE_CHECKING:
    from ..mcp import McpManager
    from ..permissions.check import CheckReport
    from ..permissions.settings.claude_settings import ClaudeImport
    from ..permissions.settings.settings_watch import SettingsWatch
    from ..permissions.settings.trust import FolderTrust

RunPrompt = Callable[[str], Awaitable[Any]]


@dataclass(slots=True)
class SessionParts:
    """What `assemble` made: the loop (which holds the context, pipeline and model) and
    what the session keeps beside it."""

    loop: AgentLoop
    engine: PermissionEngine | None
    """The rule engine deciding calls (None when `can_use_tool` is a function of the
    caller's that is not one): the session reads its rule sources."""
    settings_watch: SettingsWatch | None
    mcp: McpManager | None
    problems: list[str] = field(default_factory=list[str])
    claude_imports: list[ClaudeImport] = field(default_factory=list["ClaudeImport"])
    folder_trust: FolderTrust | None = None
    policy: Policy = field(default_factory=lambda: Policy())
    """The managed settings in force (`permissions.settings.managed`)."""


def assemble(config: SessionConfig, *, run_prompt: RunPrompt) -> SessionParts:
    """Every part of a session made from `config`, once (see the module docstring);
    `run_prompt` runs a scheduled prompt in the session."""
    settings = config.loop_settings()
    model, model_id = session_model(config.model, config.model_id)
    web_search = web_search_for(model, model_id)
    pool = session_pool(config.tools, config.cwd, web_search)
    root = session_root(config.cwd)
    hooks = config.hooks if config.hooks is not None else Hooks()  # an empty Hooks is falsy
    load_settings = config.load_settings
    loop: AgentLoop | None = None

    def emit(event: LoopEvent) -> None:
        if loop is not None:
            loop.emit(event)

    reporter = ReportingApprover(config.approver, emit=emit)
    # Auto mode: the session's own model judges what would ask (unsure -> ask).
    judge = _classifier(model, model_id, lambda: loop)
    trust = folder_trust_for(root, load_settings, config.trust_folder)
    trusted = trust is not None and trust.trusted
    permissions, decide = starting_permissions(
        root,
        config.permission_mode,
        reporter,
        config.can_use_tool,
        hooks,
        load_settings,
        config.rules,
        judge,
        trusted,
    )
    engine = decide if isinstance(decide, PermissionEngine) else None
    if engine is not None and engine.classifier is no_classifier:
        engine.classifier = judge  # the caller's own engine, made without a judge
    small = side_models(model, config.small_model)
    policy = permissions.policy
    if policy.broken is not None:
        raise ConfigurationError(f"The policy for this server cannot be used: {policy.broken}.")
    refused_model = policy.refuse_model(model_id)
    if refused_model is not None:
        raise ConfigurationError(refused_model)
    sandbox = config.sandbox if config.sandbox is not None else SandboxOptions()
    if not sandbox.allowed_domains:
        sandbox.allowed_domains = permissions.allowed_domains
    sandbox.denied_domains = (*sandbox.denied_domains, *permissions.denied_domains)
    if policy.require_sandbox:
        sandbox.enabled = True  # Bash refuses to run where bubblewrap cannot start
    if permissions.budgets.caps() and settings.budget is None:
        home = Path(os.environ.get("HOME") or Path.home())
        settings.budget = BudgetGuard(
            permissions.budgets, dict(permissions.budget_sources), day=DayCounter(home)
        )
    # A session on a cassette takes its id from it, so the paths it shows
    # (`.toolhost/sessions/<id>/...`) are the same when it is recorded and replayed.
    session_id = config.session_id or cassette_session(model) or new_session_id()
    context = ToolUseContext(
        options=ToolUseOptions(
            tools=tuple(pool),
            main_loop_model=model_id,
            small_model=small,
            web_search=web_search,
            sandbox=sandbox,
            run_prompt=run_prompt,
            redactor=session_redactor(model, config.secrets),
        ),
        app_state=AppStateStore(AppState(tool_permission_context=permissions.context)),
        cwd=root,
        project_root=root,
        state_home=toolhost_home(root),
        session_id=session_id,
    )
    start_session(pool, context)  # what each tool reads once per session (`Tool.on_session_start`)
    pipeline = Pipeline(
        results=ResultStore(context.session_dir() / "tool-results"),
        checkpoints=CheckpointStore(context.session_dir() / "checkpoints"),
        can_use_tool=decide,
        hooks=hooks,
    )
    transcript = Transcript(transcript_path(context)) if config.write_transcript else None
    manager = (
        config.mcp if config.mcp is not None else mcp_from_settings(root, load_settings, trusted)
    )
    loop = AgentLoop(
        model=model,
        model_id=model_id,
        tools=pool,
        pipeline=pipeline,
        context=context,
        settings=settings,
        transcript=transcript,
        hooks=hooks,  # UserPromptSubmit, Stop, and where hook failures are shown
        extra_tools=manager.tools if manager is not None else None,
        hidden_tools=engine.tools_denied_whole if engine is not None else None,
        finder=deferred_tool_finder(),
        sinks=[config.on_event] if config.on_event is not None else [],
        subagent_runner=LoopRunner,
    )
    return SessionParts(
        loop=loop,
        engine=engine,
        settings_watch=watch_settings(root) if load_settings else None,
        mcp=manager,
        problems=[str(p) for p in permissions.problems],
        claude_imports=list(permissions.claude_imports),
        folder_trust=trust,
        policy=policy,
    )


def session_model(model: str | Model | None, model_id: str | None) -> tuple[Model, str]:
    """The model and the id to send (`SessionConfig.model`): a `Model` as given, anything
    else the Anthropic client."""
    if isinstance(model, str) or model is None:
        return AnthropicModel(), default_model_name(model)
    return model, default_model_name(model_id)


def default_tools(
    cwd: str | os.PathLike[str] | None = None, *, web_search: Any = None
) -> list[Tool[Any]]:
    """The built-in tool pool (`jupyter_toolhost.tools.builtin_tools()`)."""
    from ..tools import builtin_tools

    return builtin_tools(cwd=cwd, web_search=web_search)


def deferred_tool_finder() -> Tool[Any]:
    """The tool the loop adds while any tool is deferred (`tools.deferred_tool_finder`)."""
    from ..tools import deferred_tool_finder

    return deferred_tool_finder()


def session_pool(
    tools: Sequence[Tool[Any]] | None, cwd: str | os.PathLike[str] | None, web_search: Any
) -> list[Tool[Any]]:
    """The session's tool pool: `tools`, else the built-in one; names must be unique."""
    pool = list(default_tools(cwd, web_search=web_search) if tools is None else tools)
    names = [t.name for t in pool]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"tool names must be unique; repeated: {', '.join(duplicates)}")
    return pool


def session_redactor(model: Model, secrets: Mapping[str, str] | None) -> Redactor:
    """What the session's tool results are redacted with: the credentials of the process's
    environment, the model's own (`credentials()`, when the model has it: a key given in
    code is in no environment variable) and `secrets` (label -> value, e.g. the kernel's
    signing key)."""
    named: dict[str, str] = {}
    credentials = getattr(model, "credentials", None)
    if callable(credentials):
        with contextlib.suppress(Exception):  # a model that cannot say: the environment's count
            named.update(cast(Mapping[str, str], credentials()))
    named.update(secrets or {})
    return Redactor.from_environment(named=named)


def transcript_path(context: ToolUseContext) -> Path:
    """Where a session's transcript lives: `transcript.jsonl` in its folder."""
    return context.session_dir() / "transcript.jsonl"


def session_root(cwd: str | os.PathLike[str] | None) -> Path:
    """The session's starting folder, resolved: `cwd`, else the process's."""
    return Path(cwd if cwd is not None else os.getcwd()).resolve()


def _classifier(model: Model, model_id: str, loop: Callable[[], AgentLoop | None]) -> Any:
    from ..model.classifier import ModelClassifier

    def transcript() -> Sequence[Any]:
        current = loop()
        return current.messages if current is not None else []

    return ModelClassifier(model=model, model_id=model_id, transcript=transcript)


def check_call(loop: AgentLoop, tool_name: str, input: Mapping[str, Any] | str) -> CheckReport:
    """`Session.check`: the engine's decision for one call in every mode, for the tools the
    loop offers now, in its working directory, without running the call."""
    from ..orchestration.pipeline import ToolInputValidationError, find_tool, parse_input
    from ..permissions.check import check_permission, find_tool_named, input_for, run_blocking

    requests = loop.requests
    extra = list(requests.extra_tools()) if requests.extra_tools is not None else []
    tool = find_tool_named(tool_name, [*requests.tool_pool(), *requests.tools, *extra])
    raw = input_for(tool, input)
    parsed, refused = None, f"{tool.name} is disabled: the pipeline answers 'No such tool'"
    if find_tool(tool.name, [tool]) is not None:
        try:
            parsed, refused = parse_input(tool, raw), None
        except ToolInputValidationError as exc:
            refused = str(exc)
    context = replace(loop.context, cwd=loop.working_directory())
    pipeline = loop.pipeline
    return run_blocking(
        check_permission(
            tool=tool,
            input=raw,
            parsed=parsed,
            context=context,
            engine=pipeline.can_use_tool,
            hooks=pipeline.hooks,
            refused=refused,
        )
    )
