"""The agent loop: model → tool_use → orchestrator → tool_result → model, until it stops.

One `AgentLoop` holds a session's conversation and runs prompts through it. Each model
response streams; each tool_use block goes to a `StreamingToolExecutor` as soon as its input
is known whole (`response.ResponseReader`): at its own `content_block_stop` when its JSON text
parsed strictly and the tool accepts it, else when the next event arrives. So safe calls start
while the message still streams. The last tool_use of a `max_tokens` response runs only if it
was already known whole; one held back then may be cut mid-input and is answered as not run.

Whatever happens, the stored conversation stays valid for the API:
- every committed tool_use gets exactly one tool_result, at the head of the next user
  message, followed by the hooks' `additional_context` as text blocks;
- a stream that breaks before any tool_use completed is requested again (bounded attempts,
  exponential backoff); one that breaks after some did is kept up to its last complete
  block: calls that ran keep their results, calls that had not started are answered as not
  run, and a note tells the model. So no call ever runs twice behind anyone's back;
- an interrupt (`CancelledError`, the time budget) stops the calls whose tools allow it,
  commits what completed with every call answered, and leaves the conversation ending on a
  user message; the next prompt joins that message after its tool_result blocks.

The loop holds the conversation (its messages and compact boundaries) and a
`RequestBuilder` that makes each request from it (`request_builder`). The session's loop
also runs the UserPromptSubmit and Stop hooks (see `turn_hooks`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.context import AbortSignal, ToolUseContext
from ..core.conversation import (
    Block,
    Message,
    add_assistant,
    add_user,
    error_result,
    storable,
    text_block,
    text_of,
    tool_uses,
)
from ..core.history import MessageList, conversation
from ..core.tool import Tool
from ..core.types import ToolResult
from ..hooks.hooks import HookEvent, Hooks
from ..hooks.turn_hooks import STOP_FEEDBACK, blocked_text, run_prompt_hooks, run_stop_hooks
from ..model.base import (
    AssistantMessage,
    Model,
    ModelError,
    StreamBroken,
    Usage,
)
from ..model.pricing import add_cost
from ..model.thinking import (
    only_thinking,
)
from ..orchestration.pipeline import Pipeline, redact_result
from ..orchestration.streaming import StreamingToolExecutor, interrupted_results
from .compaction import (
    CompactBoundary,
    CompactTrigger,
    compacted_conversation,
    summarise,
    summary_messages,
)
from .events import Compacted, EventSink, LoopEvent, Notice, TurnEnd, UsageReported, emit
from .loop_state import (
    CUT_BY_MAX_TOKENS,
    NOT_STARTED,
    STREAM_BROKE_NOTE,
    LoopSettings,
    RunResult,
    RunState,
)
from .request_builder import HiddenTools, RequestBuilder, working_directory
from .response import ResponseReader, max_tokens_notice, settle
from .result_tokens import ResultLedger
from .sent import SentLog, SentRequest
from .transcript import LoadedTranscript, Transcript

if TYPE_CHECKING:
    from ..core.runner import SubagentRunner


class AgentLoop:
    """A conversation with a model and a tool pool; `run(prompt)` drives it.

    `tools`, `extra_tools` (offered beside `tools`, asked for at every request: MCP
    servers'), `hidden_tools` (the tools never to offer, `request_builder.HiddenTools`),
    `finder` (added while any tool is deferred) and `system_head` (blocks the system prompt
    starts with) go to the loop's `RequestBuilder`, `requests`. `sinks` get every run's
    events; `subagent_runner` makes the runner this loop's tools start subagents with
    (`subagent_loop.LoopRunner`), installed in the context's options;
    `compact_boundaries` are boundaries the conversation starts with (a subagent's carry
    the deferred tools its parent found)."""

    def __init__(
        self,
        *,
        model: Model,
        model_id: str,
        tools: Sequence[Tool[Any]],
        pipeline: Pipeline,
        context: ToolUseContext,
        settings: LoopSettings,
        transcript: Transcript | None = None,
        messages: Sequence[Message] = (),
        hooks: Hooks | None = None,
        extra_tools: Callable[[], Sequence[Tool[Any]]] | None = None,
        hidden_tools: HiddenTools | None = None,
        finder: Tool[Any] | None = None,
        system_head: Sequence[Block] = (),
        sinks: Sequence[EventSink[LoopEvent]] = (),
        subagent_runner: Callable[[AgentLoop], SubagentRunner] | None = None,
        compact_boundaries: Sequence[CompactBoundary] = (),
    ) -> None:
        self.model = model
        self.model_id = model_id
        self.pipeline = pipeline
        self.context = context
        self.settings = settings
        self.transcript = transcript
        if transcript is not None and transcript.on_error is None:
            transcript.on_error = lambda text: self.emit(Notice("storage", text))
        self.requests = RequestBuilder(
            model=model,
            model_id=model_id,
            settings=settings,
            tools=tools,
            context=context,
            results=pipeline.results,
            notify=self.emit,
            transcript=transcript,
            extra_tools=extra_tools,
            hidden_tools=hidden_tools,
            finder=finder,
            system_head=system_head,
        )
        """Builds each request from the conversation (`request_builder`)."""
        self.messages = list(messages)  # a `MessageList` copy (see the property)
        self.compact_boundaries = list(compact_boundaries)
        self.usage = Usage()
        self.cost_usd: float | None = 0.0
        self.sinks: list[EventSink[LoopEvent]] = list(sinks)
        self.last_context_tokens = 0
        self.last_output_tokens = 0
        self._sent_upto = 0
        """How many messages the latest request carried (what was added since is new)."""
        self.last_cache_expiry: str | None = None
        """What the latest pause cost in cache writes (`%agent cost` shows it)."""
        self._running: RunState | None = None
        self.sent = SentLog()
        """The exact body and usage of each request of this conversation (not compaction's)."""
        self.ledger = ResultLedger()
        """What each tool result added to the conversation, and its share of the cost since."""
        self.hooks = hooks
        """The session's (a subagent's loop has none): UserPromptSubmit, Stop, and where
        the pipeline reports hook failures."""
        if hooks is not None and pipeline.on_hook_errors is None:
            pipeline.on_hook_errors = self.report_hook_errors
        if subagent_runner is not None:
            context.options = replace(context.options, subagent_runner=subagent_runner(self))

    @property
    def running(self) -> bool:
        """Whether a prompt is running now."""
        return self._running is not None

    @property
    def messages(self) -> MessageList:
        """The conversation in API format. Assigning a list (compaction, resume) stores a
        copy, and what is derived from the conversation starts over (see `history`)."""
        return self._messages

    @messages.setter
    def messages(self, messages: list[Message]) -> None:
        self._messages = conversation(messages)
        self.requests.new_conversation()

    def add_user(self, blocks: list[Block]) -> None:
        """Add user content to the conversation (joining a user message that ends it)."""
        add_user(self.messages, blocks)
        if self.transcript is not None and blocks:
            self.transcript.message("user", blocks)

    def discovered_tool_names(self) -> set[str]:
        """The deferred tools the conversation and its compact boundaries discovered."""
        return self.requests.discovered_names(self.messages, self.compact_boundaries)

    def working_directory(self) -> Path:
        """Where the session works now (`request_builder.working_directory`)."""
        return working_directory(self.context)

    def emit(self, event: LoopEvent) -> None:
        """Report an event to the running prompt's sinks (the session's when idle)."""
        emit(self._running.sinks if self._running else self.sinks, event)

    def restore(self, loaded: LoadedTranscript) -> None:
        """Continue a stored conversation (`Session.resume`): its messages, its compact
        boundaries and the usage and cost of its requests."""
        self.messages = loaded.messages
        self.compact_boundaries = [
            CompactBoundary.from_record(r) for r in loaded.compact_boundaries
        ]
        for model, usage in loaded.usage:
            self.usage += usage
            self.cost_usd = add_cost(self.cost_usd, model, usage)

    def report_hook(self, event: HookEvent, outcome: str, text: str) -> None:
        """Tell the user what a hook did (a ``hook`` `Notice`) and record it in the
        transcript; the model never sees this."""
        self.emit(Notice("hook", text))
        if self.transcript is not None:
            self.transcript.append(
                {"type": "hook", "hook_event_name": event, "outcome": outcome, "text": text}
            )

    def report_hook_errors(self, event: HookEvent, errors: Sequence[str]) -> None:
        for error in errors:
            self.report_hook(event, "error", error)

    # ── committing to the conversation ─────────────────────────────────────────────────

    def _commit(
        self, blocks: Sequence[Block], results: Sequence[ToolResult], *, unanswered: str
    ) -> list[Block]:
        """Store an assistant message and answer every tool_use in it; returns its blocks."""
        kept = storable(blocks)
        if not kept or only_thinking(kept):
            return []  # a thought alone (cut after it) may not end the conversation
        add_assistant(self.messages, kept)
        if self.transcript is not None:
            self.transcript.message("assistant", kept)
        uses = tool_uses(kept)
        if uses:
            # The pipeline redacted each result; this is the net for any result made
            # elsewhere (a call stopped before it ran), so none reaches the model unredacted.
            redactor = self.context.options.redactor
            by_id = {r.tool_use_id: redact_result(r, redactor) for r in results}
            answers = [
                by_id[u["id"]].to_block() if u["id"] in by_id else error_result(u["id"], unanswered)
                for u in uses
            ]
            extra = [
                text_block(text)
                for result in results
                for text in result.additional_context
                if text.strip()
            ]
            self.add_user([*answers, *extra])
        return kept

    def _over_budget(self) -> str | None:
        """Why the next request would pass a budget cap (None when none is set or passed).
        It is expected to read the context the previous request read, what that request
        wrote, and what was added since (about four characters a token)."""
        budget = self.settings.budget
        if budget is None:
            return None
        added = sum(len(json.dumps(m.get("content", ""))) for m in self.messages[self._sent_upto :])
        context = self.last_context_tokens + self.last_output_tokens + added // 4
        return budget.refusal(self.model_id, budget.expected(context))

    def _account(self, run: RunState, usage: Usage, model: str = "") -> None:
        model = model or self.model_id
        run.usage += usage
        self.usage += usage
        run.cost_usd = add_cost(run.cost_usd, model, usage)
        self.cost_usd = add_cost(self.cost_usd, model, usage)
        self.last_context_tokens = usage.context_tokens
        self.last_output_tokens = usage.output_tokens
        if self.settings.budget is not None:
            self.settings.budget.record(model or self.model_id, usage)
        if self.transcript is not None:
            self.transcript.usage(model, usage)
        emit(run.sinks, UsageReported(usage, run.usage, self.usage, run.cost_usd, self.cost_usd))
        for size in self.ledger.reported(self.messages, usage, model):
            emit(run.sinks, size)

    def _note_expired_cache(self, run: RunState, usage: Usage) -> None:
        """Tell, once per pause, what the pause cost (`RequestBuilder.cache_expiry`)."""
        text = self.requests.cache_expiry(usage)
        if text is not None:
            self.last_cache_expiry = text
            emit(run.sinks, Notice("cache", text))

    def _account_unfinished(self, run: RunState, sent: SentRequest, reader: ResponseReader) -> None:
        """A response that ended before its message was complete (an interrupt, a broken
        stream, an error) is still billed for what `MessageStarted` reported: count it, and
        keep it as the turn's usage."""
        if reader.started is not None:
            self._account(run, reader.started)
            self.sent.complete(sent, reader.started)

    # ── running ─────────────────────────────────────────────────────────────────────────

    async def run(
        self,
        prompt: str,
        *,
        on_event: EventSink[LoopEvent] | None = None,
        notes: Sequence[str] = (),
    ) -> RunResult:
        """Send `prompt` and loop until the model stops or a limit is reached; `notes` are
        text blocks joined after the prompt (what the person did meanwhile, e.g. an undo)."""
        if self._running:
            raise RuntimeError("this session is already running a prompt")
        run = RunState(sinks=[*self.sinks, *([on_event] if on_event else [])], abort=AbortSignal())
        self._running = run
        try:
            if prompt.strip():
                verdict = await run_prompt_hooks(self, prompt)
                if verdict.blocked is not None:
                    run.text = blocked_text(verdict.blocked)
                    return run.result("hook_blocked")
                if self.settings.budget is not None:
                    self.settings.budget.start_cell()
                before = len(self.messages)
                self.add_user(
                    [text_block(prompt), *map(text_block, verdict.context), *map(text_block, notes)]
                )
                self.requests.start_cell(self.messages, before)
            if not self.messages:
                raise ValueError("nothing to send: the prompt is empty")
            scope = asyncio.timeout(self.settings.time_budget_s)
            try:
                async with scope:
                    return await self._turns(run)
            except TimeoutError:
                if not scope.expired():
                    raise
                limit = self.settings.time_budget_s
                emit(run.sinks, Notice("limit", f"Stopped: the {limit:g} s budget is spent."))
                return run.result("time_budget")
        finally:
            self._running = None

    async def _turns(self, run: RunState) -> RunResult:
        while True:
            if run.turns >= self.settings.max_turns:
                limit = self.settings.max_turns
                emit(run.sinks, Notice("limit", f"Stopped after {limit} model turns."))
                return run.result("max_turns")
            threshold = self.settings.compact_threshold_tokens
            if threshold is not None and self.last_context_tokens > threshold:
                await self.compact(trigger="auto", run=run)
            refused = self._over_budget()
            if refused is not None:  # every tool_use already has its result: nothing is lost
                emit(run.sinks, Notice("budget", refused))
                return run.result("budget")
            stop_reason, again = await self._respond(run)
            run.turns += 1
            emit(run.sinks, TurnEnd(run.turns, stop_reason))
            if not again and stop_reason == "end_turn" and self.hooks is not None:
                verdict = await run_stop_hooks(self, continuations=run.stop_continuations)
                if verdict.ended is not None:
                    return run.result("hook_stopped")
                if verdict.go_on is not None:
                    run.stop_continuations += 1
                    self.add_user([text_block(STOP_FEEDBACK.format(reason=verdict.go_on))])
                    continue
            if not again:
                return run.result(stop_reason or "end_turn")

    async def _respond(self, run: RunState) -> tuple[str | None, bool]:
        """One model response with its tool calls; returns (stop reason, go on?)."""
        request, deferral = self.requests.next_request(self.messages, self.compact_boundaries)
        sent = self.sent.add(request, deferral, history=self.messages)
        self._sent_upto = len(self.messages)
        attempt = 0
        while True:
            attempt += 1
            context = self._message_context(run.abort)
            executor = StreamingToolExecutor(
                pipeline=self.pipeline, context=context, on_event=lambda e: emit(run.sinks, e)
            )
            reader = ResponseReader(executor, run.sinks)
            try:
                message = await reader.read(self.model.stream(request))
            except StreamBroken as broken:
                self._account_unfinished(run, sent, reader)
                executor.discard()
                results = await settle(executor)
                if tool_uses(broken.content):
                    self._commit(broken.content, results, unanswered=NOT_STARTED)
                    self.add_user([text_block(STREAM_BROKE_NOTE)])
                    text = f"The response stream broke after some tool calls ({broken.reason})."
                    emit(run.sinks, Notice("stream", text))
                    return None, True
                if attempt > self.settings.stream_retries:
                    raise ModelError(
                        f"The response stream broke {attempt} times; giving up: {broken.reason}"
                    ) from broken
                delay = min(30.0, self.settings.retry_backoff_s * 2 ** (attempt - 1))
                note = f"The response stream broke ({broken.reason}); retrying in {delay:g} s."
                emit(run.sinks, Notice("retry", note))
                await asyncio.sleep(delay)
                continue
            except asyncio.CancelledError:
                self._account_unfinished(run, sent, reader)
                executor.interrupt()
                self._commit(reader.blocks, await settle(executor), unanswered=NOT_STARTED)
                raise
            except BaseException:
                self._account_unfinished(run, sent, reader)
                executor.discard()
                self._commit(reader.blocks, await settle(executor), unanswered=NOT_STARTED)
                raise
            self.sent.complete(sent, message.usage)
            return await self._finish(run, executor, reader, message)

    async def _finish(
        self,
        run: RunState,
        executor: StreamingToolExecutor,
        reader: ResponseReader,
        message: AssistantMessage,
    ) -> tuple[str | None, bool]:
        self._account(run, message.usage, message.model)
        self._note_expired_cache(run, message.usage)
        try:
            results = await executor.results()
        except asyncio.CancelledError as exc:
            results = interrupted_results(exc) or executor.completed_results()
            self._commit(message.content, results, unanswered=NOT_STARTED)
            raise
        unanswered = CUT_BY_MAX_TOKENS if reader.cut is not None else NOT_STARTED
        kept = self._commit(message.content, results, unanswered=unanswered)
        run.text = text_of(kept)
        stop = message.stop_reason
        if stop == "max_tokens":
            emit(run.sinks, Notice("max_tokens", max_tokens_notice(reader.cut is not None)))
            return stop, False
        if stop == "refusal":
            emit(run.sinks, Notice("refusal", "The model declined to continue."))
            return stop, False
        if tool_uses(kept) or stop == "pause_turn":
            return stop, True
        return stop, False

    def _message_context(self, abort: AbortSignal) -> ToolUseContext:
        """The session's context with the run's abort signal (an interrupt of one message
        never leaves the session's own signal aborted)."""
        return replace(self.context, abort=abort, cwd=self.working_directory())

    # ── compaction ──────────────────────────────────────────────────────────────────────

    async def compact(
        self, *, trigger: CompactTrigger = "manual", run: RunState | None = None
    ) -> CompactBoundary | None:
        """Replace the conversation by a summary the model writes; None if there is nothing.

        Inside a run (`run` given) the summary's usage counts toward the run too."""
        sinks = self.sinks if run is None else run.sinks
        if len(self.messages) < 2:
            return None
        request = self.requests.summary_request(
            summary_messages(self.messages),
            self.compact_boundaries,
            max_tokens=self.settings.compact_max_tokens,
        )
        summary, usage, model = await summarise(self.model, request)
        self.usage += usage
        self.cost_usd = add_cost(self.cost_usd, model, usage)
        if run is not None:
            run.usage += usage
            run.cost_usd = add_cost(run.cost_usd, model, usage)
        known = {n for b in self.compact_boundaries for n in b.pre_compact_discovered_tools}
        boundary = CompactBoundary(
            trigger=trigger,
            pre_tokens=self.last_context_tokens,
            messages_summarised=len(self.messages),
            pre_compact_discovered_tools=tuple(
                sorted(known | self.requests.discovered_names(self.messages))
            ),
            summary=summary,
        )
        self.messages = compacted_conversation(summary, continuing=trigger == "auto")
        self.requests.disclosure.reset()  # the announcements went with the summarised turns
        self.compact_boundaries.append(boundary)
        self.last_context_tokens = 0
        self.last_output_tokens = 0
        self._sent_upto = 0
        """How many messages the latest request carried (what was added since is new)."""
        if self.transcript is not None:
            self.transcript.usage(model, usage)
            self.transcript.append(boundary.to_record(self.messages))
        emit(sinks, Compacted(boundary))
        return boundary
