"""`RequestBuilder`: what each request of a conversation sends.

An `AgentLoop` holds one builder and hands it the conversation (its messages and compact
boundaries) for each request. The builder decides everything else the request carries:

- the tool pool offered now: the session's tools and the extra ones (MCP servers'), less
  those a deny rule hides whole, plus the deferred-tool finder while any tool is deferred;
- deferred-tool disclosure: which tools travel, the announcement of the others, and the
  reload exchange that names again the tools a compaction carried over;
- thinking, paused while a tool-use chain that began without it is open;
- old tool results cleared when that pays for itself (`clearing`);
- the system prompt for the working directory (after a subagent's type prompt);
- the prompt cache: the cells' boundaries and the pauses that decide the breakpoints.

It edits the conversation only where a request needs it (the announcement, the reload
exchange, cleared results) and tells the person through `notify`. The loop runs turns and
commits their results (`loop`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeAlias

from ..core.context import ToolUseContext
from ..core.conversation import Block, Message, add_assistant, add_user
from ..core.results import ResultStore
from ..core.tool import Tool
from ..disclosure.deferral import (
    DisclosureState,
    DiscoveredTools,
    RequestTools,
    carried_unreferenced,
    is_deferred,
    reload_exchange,
    resolve_disclosure,
    searches_deferred_tools,
    tools_for_request,
    with_finder,
)
from ..model.base import Model, ModelRequest, Usage
from ..model.prompt_cache import PAUSE_S, CachePolicy
from ..model.thinking import (
    request_max_tokens,
    thinking_on,
    thought_missing,
    without_thinking_edits,
)
from .clearing import clear_old_results
from .compaction import CompactBoundary
from .events import LoopEvent, Notice
from .loop_state import LoopSettings
from .prompt import announce, cache_last, enabled_tools, system_prompt
from .sent import Deferral, deferral_of
from .transcript import Transcript

HiddenTools: TypeAlias = Callable[[Sequence[Tool[Any]], ToolUseContext], set[str]]
"""Names of the tools in a pool that the model must not be offered at all (a deny rule
naming a tool whole: `PermissionEngine.tools_denied_whole`)."""


def working_directory(context: ToolUseContext) -> Path:
    """Where a session works now: a tool (EnterWorktree) may move it, through the app
    state's `working_directory`; otherwise the directory the session started in."""
    moved = context.get_app_state().working_directory
    return moved if moved is not None else context.cwd


class RequestBuilder:
    """Builds the requests of one conversation (see the module docstring).

    `tools` is the session's pool (changed in place by `Session.set_tools`); `extra_tools`
    are asked for at every request (MCP servers'); `hidden_tools` names the tools never to
    offer; `finder` is added while any tool is deferred (`disclosure.with_finder`; None:
    never). `results` is where the pipeline saved full results, which clearing points the
    model to; `transcript` records the messages the builder adds; `system_head` are text
    blocks the system prompt starts with (a subagent's type prompt); `notify` reports to
    the person (the loop's `emit`)."""

    def __init__(
        self,
        *,
        model: Model,
        model_id: str,
        settings: LoopSettings,
        tools: Sequence[Tool[Any]],
        context: ToolUseContext,
        results: ResultStore,
        notify: Callable[[LoopEvent], None],
        transcript: Transcript | None = None,
        extra_tools: Callable[[], Sequence[Tool[Any]]] | None = None,
        hidden_tools: HiddenTools | None = None,
        finder: Tool[Any] | None = None,
        system_head: Sequence[Block] = (),
    ) -> None:
        self.model = model
        self.model_id = model_id
        self.settings = settings
        self.tools = list(tools)
        self.context = context
        self.results = results
        self.notify = notify
        self.transcript = transcript
        self.extra_tools = extra_tools
        self.hidden_tools = hidden_tools
        self.finder = finder
        self.system_head = tuple(system_head)
        self.disclosure = DisclosureState()
        """What the deferred-tools announcements have told the model so far."""
        self.pauses_seen = 0
        """How many pauses longer than a 5-minute cache entry lives this conversation had
        (the ``"auto"`` cache policy marks for an hour from the first one on)."""
        self._discovered = DiscoveredTools()
        self._cell_boundaries: list[int] = []
        self._last_request_at: float | None = None
        self._paused_s: float | None = None
        self._thinking_paused = False
        self._reloads = 0

    # ── the requests ──────────────────────────────────────────────────────────────────

    def next_request(
        self, messages: list[Message], boundaries: Sequence[CompactBoundary]
    ) -> tuple[ModelRequest, Deferral]:
        """The conversation's next request and what deferral kept out of it.

        It also refreshes the pool the pipeline finds tools in, clears old results, and
        adds the deferred-tools announcement (when it changed) to the last user message,
        where it stays in the history."""
        pool = self.tool_pool()
        if self.settings.clear_old_results:
            self._clear_old_results(messages)
        style, server_search = resolve_disclosure(self.settings.disclosure, self.model)
        if style == "defer_loading" and server_search is None:
            self._reload_carried_tools(pool, messages, boundaries)
        chosen = tools_for_request(
            pool,
            messages,
            state=self.disclosure,
            style=style,
            compact_boundaries=boundaries,
            server_search=server_search,
            discovered=self.discovered_names(messages, boundaries),
        )
        self.context.options = replace(self.context.options, tools=tuple(pool))
        deferral = deferral_of(pool, chosen.deferred_names)
        if chosen.attachment:
            announce(messages, chosen.attachment)
        thinking = self.settings.thinking
        context_management = self.settings.context_management
        if thinking_on(thinking) and thought_missing(messages):
            thinking, context_management = None, without_thinking_edits(context_management)
            self._note_thinking_paused()
        else:
            self._thinking_paused = False
        self._note_pause()
        request = self._request(
            messages,
            chosen,
            max_tokens=self.settings.max_tokens,
            thinking=thinking,
            context_management=context_management,
            cell_boundaries=tuple(self._cell_boundaries),
        )
        return request, deferral

    def summary_request(
        self,
        messages: Sequence[Message],
        boundaries: Sequence[CompactBoundary],
        *,
        max_tokens: int,
    ) -> ModelRequest:
        """A side request on other `messages` (compaction's summary): the same tools and
        system prompt, so the cache hits, but no tool may be called, nothing thinks, and
        nothing of the conversation's state changes."""
        style, server_search = resolve_disclosure(self.settings.disclosure, self.model)
        chosen = tools_for_request(
            self.tool_pool(),
            messages,
            state=self.disclosure.copy(),
            style=style,
            compact_boundaries=boundaries,
            server_search=server_search,
        )
        return self._request(
            messages,
            chosen,
            max_tokens=max_tokens,
            tool_choice={"type": "none"},
        )

    def _request(
        self,
        messages: Sequence[Message],
        chosen: RequestTools,
        *,
        max_tokens: int,
        thinking: dict[str, Any] | None = None,
        context_management: dict[str, Any] | None = None,
        tool_choice: dict[str, Any] | None = None,
        cell_boundaries: tuple[int, ...] = (),
    ) -> ModelRequest:
        cwd = working_directory(self.context)
        # The system prompt holds the always-sent tools only, so discovering a deferred tool
        # does not change it (the prompt cache keeps hitting).
        resident = [tool for tool in chosen.loaded if not is_deferred(tool)]
        return ModelRequest(
            model=self.model_id,
            messages=tuple(messages),
            max_tokens=request_max_tokens(max_tokens, thinking),
            system=[*self.system_head, *system_prompt(resident, cwd)],
            tools=cache_last(chosen.api_tools),
            tool_choice=tool_choice,
            cwd=str(cwd),
            thinking=thinking,
            context_management=context_management,
            cache_messages=True,
            cache_policy=self.cache_policy(),
            cell_boundaries=cell_boundaries,
        )

    # ── the tool pool ─────────────────────────────────────────────────────────────────

    def tool_pool(self) -> list[Tool[Any]]:
        """Every tool the model may use now: the session's and the extra ones that are
        enabled, less those a deny rule names whole, plus the finder while any is
        deferred."""
        extra = list(self.extra_tools()) if self.extra_tools is not None else []
        pool = enabled_tools([*self.tools, *extra])
        if self.hidden_tools is not None:
            denied = self.hidden_tools(pool, self.context)
            pool = [tool for tool in pool if tool.name not in denied]
        return with_finder(pool, self.finder)

    def discovered_names(
        self, messages: Sequence[Message], boundaries: Sequence[CompactBoundary] = ()
    ) -> set[str]:
        """`extract_discovered_tool_names` of the conversation and its compact boundaries,
        kept incrementally: a turn reads only the messages added or edited since the last."""
        return self._discovered.names(messages, boundaries)

    def _reload_carried_tools(
        self,
        pool: Sequence[Tool[Any]],
        messages: list[Message],
        boundaries: Sequence[CompactBoundary],
    ) -> None:
        """Load again, with a finder exchange at the end of the history, the deferred tools
        a compaction (or a parent, for a sub-agent) carried over but no reference in the
        conversation names: with `defer_loading` the model sees only referenced ones."""
        referenced = self._discovered.names(messages)
        names = carried_unreferenced(pool, messages, boundaries, referenced=referenced)
        finder = next((tool.name for tool in pool if searches_deferred_tools(tool)), None)
        if not names or finder is None or not messages:
            return
        if messages[-1].get("role") != "user":
            return  # a prefill: nothing can follow it
        self._reloads += 1
        call, result = reload_exchange(
            names, tool_use_id=f"toolu_reload_{self._reloads:02d}", search_tool=finder
        )
        add_assistant(messages, call["content"])
        add_user(messages, [result])
        if self.transcript is not None:
            self.transcript.message("assistant", call["content"])
            self.transcript.message("user", [result])

    # ── what changes the request's shape ──────────────────────────────────────────────

    def _clear_old_results(self, messages: list[Message]) -> None:
        cleared = clear_old_results(messages, self.results, working_directory(self.context))
        if cleared is not None:
            count = len(cleared.tool_use_ids)
            text = (
                f"Cleared {count} old tool result{'s' if count != 1 else ''} "
                f"({cleared.chars:,} characters) from the context; the model was told where "
                "each full text is saved."
            )
            self.notify(Notice("cleared", text))

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
            self.notify(Notice("thinking", text))

    # ── the prompt cache ──────────────────────────────────────────────────────────────

    def start_cell(self, messages: Sequence[Message], before: int) -> None:
        """A prompt (a cell) began; `before` is how many messages the conversation had
        then. Its last message that the prompt did not change is the *cell boundary*, where
        the ``"cell"`` cache policy puts a 1-hour breakpoint (`prompt_cache`): the prompt
        is a new message, or (after an interrupt) joined the last user message."""
        joined = len(messages) == before
        boundary = before - 2 if joined else before - 1
        if boundary >= 0:
            self._cell_boundaries = [*self._cell_boundaries[-1:], boundary]

    def new_conversation(self) -> None:
        """The conversation was replaced (compaction, resume): no cell boundary holds."""
        self._cell_boundaries = []

    def cache_policy(self) -> CachePolicy:
        """The policy this request's breakpoints follow: the settings', with ``"auto"``
        resolved (``"5m"`` until a pause was seen, then ``"cell"``)."""
        policy = self.settings.cache_policy
        if policy == "auto":
            return "cell" if self.pauses_seen else "5m"
        return policy

    def _note_pause(self) -> None:
        now = self.settings.clock()
        before, self._last_request_at = self._last_request_at, now
        gap = None if before is None else now - before
        self._paused_s = gap if gap is not None and gap > PAUSE_S else None
        self.pauses_seen += self._paused_s is not None

    def cache_expiry(self, usage: Usage) -> str | None:
        """What the pause before this request cost, told once per pause: the first request
        after more than 5 minutes finds the 5-minute cache entries gone and writes them
        again. None when there was no such pause or nothing was written."""
        if self._paused_s is None or not usage.cache_creation_input_tokens:
            return None
        minutes = self._paused_s / 60
        self._paused_s = None
        return (
            f"The prompt cache expired after a {minutes:.0f}-minute pause: "
            f"{usage.cache_creation_input_tokens:,} tokens written again"
            f" ({usage.cache_read_input_tokens:,} still read from the cache)."
        )
