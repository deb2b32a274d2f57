"""Building a `Session`'s parts in one pass: `assemble()` is the one way a session is made.

Each part is made with everything it needs, in dependency order: the permission state and
decision function from the settings files, the context with every typed option the session
provides to tools (small model, web search, sandbox settings, a way to run prompts), the
pipeline, then the loop, which installs its own subagent runner. Nothing is set on a part
after it is made. The two back references (the approver's reports and the auto-mode
classifier need the loop's events and conversation) are closures over the loop.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
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
from ..core.redaction import Redactor
from ..core.results import ResultStore
from ..core.tool import Tool
from ..core.types import PermissionMode, RuleBehavior
from ..hooks.hooks import Hooks
from ..model.base import Model
from ..orchestration.checkpoints import CheckpointStore
from ..orchestration.pipeline import Pipeline
from ..permissions.api import Approver, CanUseTool
from ..permissions.engine import PermissionEngine, no_classifier
from .events import EventSink, LoopEvent
from .loop import AgentLoop
from .loop_state import LoopSettings
from .session_setup import (
    ReportingApprover,
    cassette_session,
    folder_trust_for,
    mcp_from_settings,
    sandbox_environment,
    side_models,
    starting_permissions,
    watch_settings,
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


def assemble(
    *,
    pool: Sequence[Tool[Any]],
    model: Model,
    model_id: str,
    web_search: Any,
    root: Path,
    settings: LoopSettings,
    permission_mode: PermissionMode | None,
    approver: Approver | None,
    can_use_tool: CanUseTool | None,
    hooks: Hooks,
    session_id: str | None,
    on_event: EventSink[LoopEvent] | None,
    write_transcript: bool,
    load_settings: bool,
    mcp: McpManager | None,
    small_model: str | None,
    rules: Iterable[tuple[str, RuleBehavior]],
    sandbox: SandboxOptions | None,
    run_prompt: RunPrompt,
    secrets: Mapping[str, str] | None = None,
    trust_folder: bool | None = None,
) -> SessionParts:
    """Every part of a session, made once (see the module docstring)."""
    loop: AgentLoop | None = None

    def emit(event: LoopEvent) -> None:
        if loop is not None:
            loop.emit(event)

    reporter = ReportingApprover(approver, emit=emit)
    # Auto mode: the session's own model judges what would ask (unsure -> ask).
    judge = _classifier(model, model_id, lambda: loop)
    trust = folder_trust_for(root, load_settings, trust_folder)
    trusted = trust is not None and trust.trusted
    permissions, decide = starting_permissions(
        root, permission_mode, reporter, can_use_tool, hooks, load_settings, rules, judge, trusted
    )
    engine = decide if isinstance(decide, PermissionEngine) else None
    if engine is not None and engine.classifier is no_classifier:
        engine.classifier = judge  # the caller's own engine, made without a judge
    small = side_models(model, small_model)
    sandbox = sandbox if sandbox is not None else SandboxOptions()
    if sandbox.environment is None:  # read once for the session (see `tools.bash.sandbox`)
        sandbox.environment = sandbox_environment()
    # A session on a cassette takes its id from it, so the paths it shows
    # (`.toolhost/sessions/<id>/...`) are the same when it is recorded and replayed.
    session_id = session_id or cassette_session(model) or new_session_id()
    context = ToolUseContext(
        options=ToolUseOptions(
            tools=tuple(pool),
            main_loop_model=model_id,
            small_model=small,
            web_search=web_search,
            sandbox=sandbox,
            run_prompt=run_prompt,
            redactor=session_redactor(model, secrets),
        ),
        app_state=AppStateStore(AppState(tool_permission_context=permissions.context)),
        cwd=root,
        project_root=root,
        state_home=toolhost_home(root),
        session_id=session_id,
    )
    pipeline = Pipeline(
        results=ResultStore(context.session_dir() / "tool-results"),
        checkpoints=CheckpointStore(context.session_dir() / "checkpoints"),
        can_use_tool=decide,
        hooks=hooks,
    )
    transcript = Transcript(transcript_path(context)) if write_transcript else None
    manager = mcp if mcp is not None else mcp_from_settings(root, load_settings, trusted)
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
        sinks=[on_event] if on_event is not None else [],
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
    )


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

    extra = list(loop.extra_tools()) if loop.extra_tools is not None else []
    tool = find_tool_named(tool_name, [*loop.tool_pool(), *loop.tools, *extra])
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
