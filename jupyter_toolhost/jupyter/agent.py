"""The seam between the notebook host and `Session`: making, updating and running one.

Everything the Jupyter side needs from the session goes through these few functions, so
the rest of `jupyter/` does not depend on the session's internals.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from IPython import get_ipython

from ..core.context import SandboxOptions
from .magic.options import parse_cassette_mode, thinking_param

if TYPE_CHECKING:
    from ..agent.session import Session
    from ..core.tool import Tool
    from ..core.types import RuleBehavior
    from ..mcp import McpManager
    from ..permissions.api import Approver
    from .views.live import LiveView

DEFAULT_MAX_TURNS = 100


class SessionOptions(Protocol):
    """What a session is made from: the options of `host.AgentHost` this module reads.

    A protocol, so that `host` (which owns the state) imports this module and not the
    other way round; named for what it reads, not after the class that provides it.
    """

    model: str | None
    mode: str | None
    cassette: str | None
    cassette_mode: str | None
    disclosure: str | None
    think: int | None
    small_model: str | None
    settings_problems: list[str]
    pending_rules: list[tuple[str, RuleBehavior]]
    """Rules added with `%agent allow|ask|deny` before the first session: it starts with them."""

    @property
    def cwd(self) -> Path: ...

    def approver(self) -> Approver: ...

    def run_scheduled(self, session: Any, prompt: str) -> Awaitable[Any]:
        """Run a scheduled prompt in `session`, shown where the host shows them."""
        ...


def make_model(host: SessionOptions) -> Any:
    """The model the session talks to: a cassette when one is set, else the API client."""
    if host.cassette:
        from ..model.cassette import CassetteModel

        mode = parse_cassette_mode(host.cassette_mode or "auto")
        return CassetteModel(host.cassette, cassette_mode=mode)
    return host.model


def new_session(
    host: SessionOptions, *, tools: list[Tool[Any]], trust_folder: bool | None = None
) -> Session:
    """A fresh session for the kernel (its working directory is the kernel's); `trust_folder`
    as `Session` takes it (None: what is kept decides)."""
    from ..agent.session import Session

    return _configured(host, Session, tools=tools, trust_folder=trust_folder)


def resume_session(host: SessionOptions, session_id: str, *, tools: list[Tool[Any]]) -> Session:
    """The session `session_id`, read back from its transcript."""
    from ..agent.session import Session

    return _configured(host, Session.resume, tools=tools, session_id=session_id)


def _configured(host: SessionOptions, make: Callable[..., Session], **options: Any) -> Session:
    """A session with the settings files' rules, mode and hooks (Session loads them), the
    rules added with `%agent allow|ask|deny` before it began, this kernel's connection
    file hidden from the Bash sandbox, its signing key redacted from every tool result, and
    scheduled prompts shown by the host."""

    model = make_model(host)
    session = make(
        model=model,
        model_id=host.model if not isinstance(model, str | None) else None,
        cwd=host.cwd,
        approver=host.approver(),
        permission_mode=host.mode or None,
        small_model=host.small_model,
        disclosure=host.disclosure or "auto",
        thinking=thinking_param(host.think),
        rules=host.pending_rules,
        sandbox=SandboxOptions(hidden_paths=connection_file()),
        run_scheduled=host.run_scheduled,
        secrets=kernel_secrets(),
        **options,
    )
    host.pending_rules.clear()
    host.settings_problems = list(session.settings_problems)
    return session


def connection_file() -> tuple[str, ...]:
    """This kernel's connection file (its signing key and ports), for the Bash sandbox to
    hide wherever it lies (the Jupyter runtime folder is hidden in any case); none outside
    a kernel (plain IPython)."""
    try:
        from ipykernel.connect import get_connection_file

        return (get_connection_file(),)
    except Exception:  # not in a kernel
        return ()


KERNEL_KEY_LABEL = "kernel signing key"


def kernel_secrets() -> dict[str, str]:
    """This kernel's message-signing key (whoever has it can send the kernel code to run),
    labelled for redaction; none outside a kernel (plain IPython)."""
    try:
        key: object = get_ipython().kernel.session.key  # type: ignore[union-attr]
    except Exception:  # not in a kernel
        return {}
    if isinstance(key, bytes):
        key = key.decode("utf-8", errors="replace")
    return {KERNEL_KEY_LABEL: key} if isinstance(key, str) and key else {}


def update_session(session: Session, host: SessionOptions, *, tools: list[Tool[Any]]) -> None:
    """Carry the host's current tools and mode into an existing session."""
    session.set_tools(tools)
    if host.disclosure:
        session.settings.disclosure = host.disclosure  # type: ignore[assignment]
    if host.think is not None:
        session.settings.thinking = thinking_param(host.think)
    if host.mode:
        set_mode(session, host.mode)


def set_mode(session: Session, mode: str) -> None:
    """Change the session's permission mode (it lives in the app state)."""
    session.set_mode(mode)  # type: ignore[arg-type]


def attach_question_asker(session: Session, asker: Any | None) -> None:
    """Let AskUserQuestion reach a person through `asker` (None: no one to ask): who can
    answer depends on the cell (a front end that shows widgets, a mode that asks)."""
    context = session.context
    context.options = replace(context.options, question_asker=asker)


def permission_mode(session: Session) -> str:
    return session.permission_mode


def ensure_mcp(session: Session) -> McpManager:
    """The session's MCP manager, made (empty) when it has none yet."""
    return session.mcp if session.mcp is not None else session.attach_mcp()


def session_tools(session: Session) -> list[Tool[Any]]:
    return list(session.tools)


def replaying(session: Session) -> bool:
    """Whether the session's answers come from a cassette it replays (nothing is paid)."""
    from ..model.cassette import CassetteError, CassetteModel

    model = session.model
    try:
        return isinstance(model, CassetteModel) and model.mode == "replay"
    except CassetteError:  # no cassette and no key: the run fails and says so
        return False


def cassette_kind(session: Session) -> str | None:
    """ "recorded" or "scripted": where the answers of the session's cassette come from
    (a file without a source was recorded); None when the session has no cassette file.
    Read after a run, when a cassette being recorded has its file."""
    from ..model.cassette import CassetteError, CassetteModel

    model = session.model
    if not isinstance(model, CassetteModel):
        return None
    try:
        source = model.source
    except CassetteError:
        return None
    if source is None:  # nothing written yet, or a file from before sources were kept
        return "recorded" if model.path.exists() else None
    return "scripted" if source.get("kind") == "scripted" else "recorded"


async def run_session(
    session: Session,
    prompt: str,
    *,
    view: LiveView,
    max_turns: int | None,
    attachments: Sequence[str] = (),
) -> Any:
    """Run one prompt (with `attachments`, blocks of their own), rendering its events into
    `view`."""
    from ..agent.events import (
        Compacted,
        Notice,
        TextDelta,
        ThinkingDelta,
        ThinkingStarted,
        TurnEnd,
        UsageReported,
    )

    session.settings.max_turns = max_turns or DEFAULT_MAX_TURNS
    view.summary.replayed = replaying(session)
    # Names the cell's Thinking sections the same on every replay of the conversation.
    view.thinking_key = f"{session.session_id}:{len(session.messages)}"

    def sink(event: Any) -> None:
        match event:
            case TextDelta(text=text):
                view.text(text)
            case ThinkingStarted(redacted=redacted):
                view.thinking_started(redacted=redacted)
            case ThinkingDelta(text=text):
                view.thinking_delta(text)
            case UsageReported(run_usage=usage, run_cost_usd=cost):
                view.end_thinking()
                view.summary.usage = usage.to_dict()
                view.summary.cost_usd = cost
            case TurnEnd(stop_reason=stop_reason):
                view.end_thinking()
                view.summary.model_requests += 1
                view.summary.stop_reason = stop_reason
            case Notice(kind="budget", text=text):
                view.notice(text, level="warning")  # which cap, what was spent, who raises it
                view.summary.stop_reason = text.split(" (", 1)[0]  # the footer names the cap
            case Notice(text=text):
                view.notice(text, level="warning")
            case Compacted():
                view.notice("Older turns were summarised (compacted).")
            case _:
                view.on_tool_event(event)

    try:
        return await session.run(prompt, on_event=sink, attachments=attachments)
    finally:
        view.summary.cassette = cassette_kind(session)
