"""The loop's requests: what the next request sends, and the conversation it grows.

`LoopRequests` is the half of `AgentLoop` that builds requests: the tool pool offered now
(less the tools a deny rule hides whole), deferred-tool disclosure, thinking, the system
prompt for the working directory, and adding user messages. The other half (`loop`) runs
turns and commits their results.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from ..core.context import ToolUseContext
from ..core.conversation import Block, Message, add_assistant, add_user
from ..core.history import MessageList, conversation
from ..core.tool import Tool
from ..disclosure.deferral import (
    DisclosureState,
    DiscoveredTools,
    carried_unreferenced,
    is_deferred,
    reload_exchange,
    resolve_disclosure,
    searches_deferred_tools,
    tools_for_request,
)
from ..model.base import Model, ModelRequest
from ..model.prompt_cache import PAUSE_S, CachePolicy
from ..model.thinking import (
    request_max_tokens,
    thinking_on,
    thought_missing,
    without_thinking_edits,
)
from .clearing import clear_old_results
from .compaction import CompactBoundary
from .events import EventSink, LoopEvent, Notice, emit
from .loop_state import LoopSettings, RunState
from .prompt import announce, cache_last, enabled_tools, system_prompt
from .sent import Deferral, deferral_of
from .transcript import Transcript

if TYPE_CHECKING:
    from ..orchestration.pipeline import Pipeline

HiddenTools: TypeAlias = Callable[[Sequence[Tool[Any]], ToolUseContext], set[str]]
"""Names of the tools in a pool that the model must not be offered at all (a deny rule
naming a tool whole: `PermissionEngine.tools_denied_whole`)."""


class LoopRequests:
    """Building the next request of a conversation (mixed into `AgentLoop`)."""

    model: Model
    model_id: str
    pipeline: Pipeline
    tools: list[Tool[Any]]
    context: ToolUseContext
    settings: LoopSettings
    transcript: Transcript | None
    compact_boundaries: list[CompactBoundary]
    sinks: list[EventSink[LoopEvent]]
    disclosure: DisclosureState
    extra_tools: Callable[[], Sequence[Tool[Any]]] | None
    hidden_tools: HiddenTools | None
    _discovered: DiscoveredTools
    _running: RunState | None
    _reloads: int
    _thinking_paused: bool
    _deferral: Deferral
    _messages: MessageList
    _cell_boundaries: list[int]
    _last_request_at: float | None = None
    paused_s: float | None = None
    """The pause (seconds since the request before) that the next response follows, when
    longer than a 5-minute cache entry lives; None otherwise."""
    pauses_seen: int = 0
    """How many such pauses this conversation had (the ``"auto"`` cache policy marks for
    an hour from the first one on)."""

    @property
    def messages(self) -> MessageList:
        """The conversation in API format. Assigning a list (compaction, resume) stores a
        copy, and what is derived from the conversation starts over (see `history`)."""
        return self._messages

    @messages.setter
    def messages(self, messages: list[Message]) -> None:
        self._messages = conversation(messages)
        self._cell_boundaries = []  # compaction or resume: a new conversation

    def start_cell(self, before: int) -> None:
        """A prompt (a cell) began; `before` is how many messages the conversation had
        then. Its last message that the prompt did not change is the *cell boundary*, where
        the ``"cell"`` cache policy puts a 1-hour breakpoint (`prompt_cache`): the prompt
        is a new message, or (after an interrupt) joined the last user message."""
        joined = len(self.messages) == before
        boundary = before - 2 if joined else before - 1
        if boundary >= 0:
            self._cell_boundaries = [*self._cell_boundaries[-1:], boundary]

    def discovered_tool_names(self) -> set[str]:
        """`extract_discovered_tool_names` of the conversation and its compact boundaries,
        kept incrementally: a turn reads only the messages added or edited since the last."""
        return self._discovered.names(self.messages, self.compact_boundaries)

    def emit(self, event: LoopEvent) -> None:
        """Report an event to the running prompt's sinks (the session's when idle)."""
        emit(self._running.sinks if self._running else self.sinks, event)

    def request(
        self,
        messages: Sequence[Message] | None = None,
        *,
        tool_choice: dict[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> ModelRequest:
        """The next request (or one with other `messages`, for compaction).

        The next request also refreshes the pool the pipeline finds tools in, and adds the
        deferred-tools announcement (when it changed) to the last user message, where it
        stays in the history."""
        pool = self.tool_pool()
        next_request = messages is None
        if next_request and self.settings.clear_old_results:
            self._clear_old_results()
        state = self.disclosure if next_request else self.disclosure.copy()
        style, server_search = resolve_disclosure(self.settings.disclosure, self.model)
        if next_request and style == "defer_loading" and server_search is None:
            self._reload_carried_tools(pool)
        chosen = tools_for_request(
            pool,
            self.messages if next_request else messages or [],
            state=state,
            style=style,
            compact_boundaries=self.compact_boundaries,
            server_search=server_search,
            discovered=self.discovered_tool_names() if next_request else None,
        )
        if next_request:
            self.context.options = replace(self.context.options, tools=tuple(pool))
            self._deferral = deferral_of(pool, chosen.deferred_names)
            if chosen.attachment:
                announce(self.messages, chosen.attachment)
        cwd = self.working_directory()
        # The system prompt holds the always-sent tools only, so discovering a deferred tool
        # does not change it (the prompt cache keeps hitting).
        resident = [tool for tool in chosen.loaded if not is_deferred(tool)]
        # Compaction's summary needs no thinking (and would pay for it).
        thinking = self.settings.thinking if next_request else None
        context_management = self.settings.context_management if next_request else None
        if next_request and thinking_on(thinking) and thought_missing(self.messages):
            thinking, context_management = None, without_thinking_edits(context_management)
            self._note_thinking_paused()
        elif next_request:
            self._thinking_paused = False
        if next_request:
            self._note_pause()
        return ModelRequest(
            model=self.model_id,
            messages=tuple(self.messages if next_request else messages or []),
            max_tokens=request_max_tokens(max_tokens or self.settings.max_tokens, thinking),
            system=system_prompt(resident, cwd),
            tools=cache_last(chosen.api_tools),
            tool_choice=tool_choice,
            cwd=str(cwd),
            thinking=thinking,
            context_management=context_management,
            cache_messages=True,
            cache_policy=self.cache_policy(),
            cell_boundaries=tuple(self._cell_boundaries) if next_request else (),
        )

    def _clear_old_results(self) -> None:
        cleared = clear_old_results(self.messages, self.pipeline.results, self.working_directory())
        if cleared is not None:
            count = len(cleared.tool_use_ids)
            text = (
                f"Cleared {count} old tool result{'s' if count != 1 else ''} "
                f"({cleared.chars:,} characters) from the context; the model was told where "
                "each full text is saved."
            )
            self.emit(Notice("cleared", text))

    def _note_pause(self) -> None:
        now = self.settings.clock()
        before, self._last_request_at = self._last_request_at, now
        gap = None if before is None else now - before
        self.paused_s = gap if gap is not None and gap > PAUSE_S else None
        self.pauses_seen += self.paused_s is not None

    def cache_policy(self) -> CachePolicy:
        """The policy this request's breakpoints follow: the settings', with ``"auto"``
        resolved (``"5m"`` until a pause was seen, then ``"cell"``)."""
        policy = self.settings.cache_policy
        if policy == "auto":
            return "cell" if self.pauses_seen else "5m"
        return policy

    def _note_thinking_paused(self) -> None:
        """Tell once per tool-use chain that thinking waits for it to end: the chain began
        without a thought (thinking was turned on inside it, after an interrupt), and the
        API refuses thinking until the model has answered it."""
        if not self._thinking_paused:
            self._thinking_paused = True
            text = (
                "Thinking resumes after this answer: the open tool calls were made without "
                "it, and the API takes thinking only from the start of a turn."
            )
            self.emit(Notice("thinking", text))

    def _reload_carried_tools(self, pool: Sequence[Tool[Any]]) -> None:
        """Load again, with a ToolSearch exchange at the end of the history, the deferred
        tools a compaction (or a parent, for a sub-agent) carried over but no reference in
        the conversation names: with `defer_loading` the model sees only referenced ones."""
        referenced = self._discovered.names(self.messages)
        names = carried_unreferenced(
            pool, self.messages, self.compact_boundaries, referenced=referenced
        )
        finder = next((tool.name for tool in pool if searches_deferred_tools(tool)), None)
        if not names or finder is None or not self.messages:
            return
        if self.messages[-1].get("role") != "user":
            return  # a prefill: nothing can follow it
        self._reloads += 1
        call, result = reload_exchange(
            names, tool_use_id=f"toolu_reload_{self._reloads:02d}", search_tool=finder
        )
        add_assistant(self.messages, call["content"])
        if self.transcript is not None:
            self.transcript.message("assistant", call["content"])
        self.add_user([result])

    def tool_pool(self) -> list[Tool[Any]]:
        """Every tool the model may use now: the session's and the extra ones that are
        enabled, less those a deny rule names whole, plus ToolSearch while any is deferred."""
        from ..tools.tool_search import with_tool_search

        extra = list(self.extra_tools()) if self.extra_tools is not None else []
        pool = enabled_tools([*self.tools, *extra])
        if self.hidden_tools is not None:
            denied = self.hidden_tools(pool, self.context)
            pool = [tool for tool in pool if tool.name not in denied]
        return with_tool_search(pool)

    def working_directory(self) -> Path:
        """Where the session works now: a tool (EnterWorktree) may move it, through the app
        state's `working_directory`; otherwise the directory the session started in."""
        moved = self.context.get_app_state().working_directory
        return moved if moved is not None else self.context.cwd

    def add_user(self, blocks: list[Block]) -> None:
        add_user(self.messages, blocks)
        if self.transcript is not None and blocks:
            self.transcript.message("user", blocks)
