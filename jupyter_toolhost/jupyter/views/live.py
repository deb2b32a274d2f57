"""What one `%%agent` cell shows while it runs, driven by the session's events.

- Assistant text is Markdown, drawn as it arrives and shown final when each piece ends
  (`answer`); records of decisions are set apart from it.
- Extended thinking streams into a collapsed "Thinking" section (`thinking`) in a transient
  display of its own, redrawn at most every `THINKING_INTERVAL`; when the response goes on
  to text or calls (or ends) that display is emptied and the section is shown once, final,
  right there: above the cards of its response.
- Running calls live in one display (the "live panel") that is updated in place and reset
  to empty at the end, so a stored notebook and a fresh run leave the same output behind.
  It stays below what the cell has shown: when text, cards or notices were shown after it,
  the next call's event empties it and opens a new one at the bottom (on events only, never
  on a clock tick, so the outputs' order follows the run's events).
- While calls run, the live panel is redrawn at least once a second (elapsed times tick),
  and on progress: a running command's newest output lines, a progress bar, the cell's
  latest checklist, and a sub-agent's calls as cards nested in its Agent card.
- When a batch is over, its cards are displayed once, grouped, in the order the model sent
  the calls, batches counted from 1; nothing that varies between runs (ids, completion
  order) is in their text, and durations only in the HTML's `toolhost-time` spans. Right
  under the cards come the rich outputs the calls made for people (plots, tables, widgets)
  as ordinary display outputs, so every front end draws them natively.
- A wait for a person is shown as a wait, wherever it comes from: an approval prompt
  (`PermissionRequested` / `PermissionAnswered`) or a question a call asked
  (`CallProgress.wait`, from `ToolUseContext.waiting_for_person`). The card says "waiting
  for you" (or "waiting for your answer") with the wait's own clock, the status line
  "Waiting for you · 8 s", and the time is kept out of the call's run time, out of the
  cell's "running" clock and out of the footer's duration, which names it apart.
- After an interrupt, a "block" call that is let finish is named in the live panel with its
  grace counting down ("Finishing Sleep(…) — 3 s…2 s…"): transient, like every live update.
- A footer closes the cell.

This class only renders; it never decides anything about the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict
from typing import Any, assert_never

from ...agent.events import PermissionAnswered, PermissionRequested, ResultSize
from ...agent.result_tokens import estimate_tokens
from ...orchestration.events import (
    CallFinished,
    CallFinishing,
    CallProgress,
    CallQueued,
    CallStarted,
    ChildEvent,
)
from ..kernel.captured import INTERRUPTED_LINE, ipython_display
from .answer import AnswerStream
from .cards import (
    APPROVAL,
    EMPTY_LIVE,
    CallCard,
    CallStatus,
    Wait,
    batch_display,
    decision_json,
    live_display,
    saved_path_in,
)
from .previews import blocks_text, strip_error_tags
from .render import (
    KernelOutput,
    TurnSummary,
    footer_display,
    notice_display,
    relative_text,
)
from .thinking import EMPTY_THINKING, ThinkingPart, ThinkingSection, thinking_display

_PROGRESS_INTERVAL = 0.25
TICK_SECONDS = 1.0
"""How often the live panel is redrawn while calls run, so elapsed times move."""
THINKING_INTERVAL = 0.2
"""The most often a streaming Thinking section is redrawn (a delta that comes sooner is
shown when the interval is up)."""

Display = Callable[..., Any]


def _status(finished: CallFinished) -> CallStatus:
    match finished.status:
        case "ok":
            return "done"
        case "error" | "denied" | "cancelled":
            return finished.status
        case _:
            assert_never(finished.status)


class LiveView:
    """Renders the events of one cell's run; keeps every card for history and timeline."""

    def __init__(
        self,
        *,
        describe: Callable[[str, Any], tuple[str, str]],
        language: Callable[[str, Any], str | None] | None = None,
        code: Callable[[str, Any], tuple[str, str, bool] | None] | None = None,
        display: Display | None = None,
        cwd: str | None = None,
        write: Callable[[str], None] | None = None,
    ) -> None:
        """`describe(tool_name, raw_input)` gives a call's (display name, summary);
        `language(tool_name, raw_input)` the language of its result, when known;
        `code(tool_name, raw_input)` the (language, source, insertable) of the code the
        call runs, when its tool declares it. Paths under `cwd` (default: the working
        directory) are shown relative to it, in summaries and results alike."""
        self._describe = describe
        self._cwd = cwd or os.getcwd()
        self._language = language
        self._code = code
        self._display = display or ipython_display
        self._write = write or _stdout_write
        self.cards: dict[str, CallCard] = {}
        self.order: list[str] = []
        self._batch_base: dict[int, int] = {}
        """Per model response of the cell, the batch number its first batch follows."""
        self._last_batch = 0
        self._batches_before = 0
        self.summary = TurnSummary()
        self._panel: Any = None
        self._last_progress = 0.0
        self._answer = AnswerStream(self._display)
        self._below = False
        """Something was shown after the live panel (it moves down on the next event)."""
        self._flushed: set[str] = set()
        self._shown: dict[str, tuple[Any, int, list[CallCard]]] = {}
        """call id → (the display handle, the batch, its cards) of the batch it is shown in,
        so a figure learnt later (the tokens its result added) updates it in place."""
        self._countdowns: dict[str, list[int]] = {}
        """call id → the seconds of grace shown so far, for calls let finish after an interrupt."""
        self._started = time.perf_counter()
        self._ticker: asyncio.Task[None] | None = None
        self.checklist: tuple[dict[str, Any], ...] | None = None
        """The newest checklist a call of this cell reported (shown in the live panel)."""
        self.thinking_key = "cell"
        """What names this cell's Thinking sections (`ThinkingSection.key`), set by the
        runner from the session and its length, so a replay names them the same."""
        self.thinking: list[ThinkingSection] = []
        """Every Thinking section of the cell, in order (the last may still stream)."""
        self._thinking_open: ThinkingSection | None = None
        self._thinking_panel: Any = None
        self._thinking_drawn = 0.0
        self._thinking_due: asyncio.TimerHandle | None = None

    # ── text ───────────────────────────────────────────────────────────────────────────

    def text(self, delta: str) -> None:
        """A piece of assistant text, drawn at once (as Markdown)."""
        if delta:
            self.end_thinking()
            self._answer.add(delta)
            self._below = True

    def _end_text(self) -> None:
        self._answer.end()

    def line(self, text: str) -> None:
        """A record of what happened (an approval's decision): a plain line of the cell's
        stdout, set apart from the model's words (Markdown) in every front end."""
        self.end_thinking()
        self._end_text()
        self._write(text + "\n")
        self._below = True

    # ── thinking ───────────────────────────────────────────────────────────────────────

    def thinking_started(self, *, redacted: bool) -> None:
        """A thinking (or redacted_thinking) block began: it joins the open section, or
        opens one below what the cell has shown."""
        section = self._thinking_open
        if section is None:
            self._end_text()
            response = self.summary.model_requests + 1
            key = f"{self.thinking_key}:{len(self.thinking) + 1}"
            section = ThinkingSection(key=key, response=response)
            self.thinking.append(section)
            self._thinking_open = section
            self._thinking_panel = self._display(EMPTY_THINKING, display_id=True)
            self._below = True
        section.parts.append(ThinkingPart(redacted=redacted))
        self._draw_thinking(now=True)
        self._thinking_drawn = 0.0  # the block's first text is drawn at once, too

    def thinking_delta(self, text: str) -> None:
        """A piece of thinking text (of the open section's last block)."""
        if not text:
            return
        section = self._thinking_open
        if section is None or section.parts[-1].redacted:
            self.thinking_started(redacted=False)
            section = self._thinking_open
        assert section is not None
        section.parts[-1].text += text
        self._draw_thinking(now=False)

    def end_thinking(self) -> None:
        """The open section is complete: empty its live display and show it, final."""
        section = self._thinking_open
        if section is None:
            return
        self._thinking_open = None
        if self._thinking_due is not None:
            self._thinking_due.cancel()
            self._thinking_due = None
        if self._thinking_panel is not None:
            self._thinking_panel.update(EMPTY_THINKING)
            self._thinking_panel = None
        self._display(thinking_display(section))
        self._below = True

    def _draw_thinking(self, *, now: bool) -> None:
        section, panel = self._thinking_open, self._thinking_panel
        if section is None or panel is None:
            return
        wait = THINKING_INTERVAL - (time.perf_counter() - self._thinking_drawn)
        if not now and wait > 0:
            if self._thinking_due is None:
                try:
                    loop = asyncio.get_running_loop()
                except RuntimeError:  # no loop: drawn on the next delta or at the end
                    return
                self._thinking_due = loop.call_later(wait, self._thinking_is_due)
            return
        if self._thinking_due is not None:
            self._thinking_due.cancel()
            self._thinking_due = None
        self._thinking_drawn = time.perf_counter()
        panel.update(thinking_display(section, live=True))

    def _thinking_is_due(self) -> None:
        self._thinking_due = None
        self._draw_thinking(now=True)

    # ── tool calls ─────────────────────────────────────────────────────────────────────

    @property
    def batches_before(self) -> int:
        """Batches the conversation ran in earlier cells: this cell's count on from there,
        as the timeline of `%agent history --timeline` counts them."""
        return self._batches_before

    @batches_before.setter
    def batches_before(self, count: int) -> None:
        self._batches_before = count
        self._last_batch = max(self._last_batch, count)

    def on_tool_event(self, event: Any) -> None:
        """Handle one orchestration event (queued, started, progress, finished), or one of
        a sub-agent's, wrapped in a `ChildEvent` of the call that started it; an answered
        approval prompt (`PermissionAnswered`) adds the wait to its call's card. The
        response has gone past its thinking: an open Thinking section is complete."""
        self.end_thinking()
        self._apply(event, parent=None)

    def _apply(self, event: Any, *, parent: CallCard | None) -> None:
        match event:
            case ChildEvent(parent_call_id=parent_id, event=inner):
                owner = self.cards.get(parent_id)
                if owner is not None:
                    self._apply(inner, parent=owner)
            case CallQueued(call=call, tool_name=tool_name):
                card = self._new_card(call.id, tool_name, call.input)
                if parent is None:
                    self.order.append(call.id)
                    self.summary.tool_calls += 1
                else:
                    parent.children.append(card)
                self._refresh()
            case CallStarted(call_id=call_id, started_at=started_at):
                card = self.cards.get(call_id)
                if card is not None:
                    card.status = "running"
                    card.started = started_at
                    self._refresh()
            case CallProgress(call_id=call_id):
                card = self.cards.get(call_id)
                if card is not None:
                    self._progress(card, event)
            case CallFinishing(call_id=call_id, remaining_s=remaining):
                self._countdowns.setdefault(call_id, []).append(remaining)
                self._refresh()
            case PermissionRequested(request=request, asked_at=asked):
                card = self.cards.get(request.tool_use_id)
                if card is not None:
                    card.asked, card.asked_for = asked, APPROVAL
                    self._refresh()
            case PermissionAnswered(request=request, asked_at=asked, answered_at=answered):
                # A sub-agent's prompts come here too, unwrapped: its cards are in `cards`.
                card = self.cards.get(request.tool_use_id)
                if card is not None:
                    card.waits.append(Wait(asked, answered, APPROVAL))
                    card.asked = None
                    self._refresh()
            case CallFinished() if parent is not None:
                card = self.cards.get(event.call_id)
                if card is None:
                    card = self._new_card(event.call_id, event.result.tool_name, None)
                    parent.children.append(card)
                self._record_result(card, event)
                self._refresh()
            case CallFinished():
                self._finish(event)
            case ResultSize(tool_use_id=call_id):
                self._sized(call_id, event)
            case _:
                pass

    def _sized(self, call_id: str, size: ResultSize) -> None:
        """The tokens a result added, measured: the card, and the batch shown, say so."""
        card = self.cards.get(call_id)
        if card is None:
            return
        card.tokens, card.tokens_measured = size.tokens, size.measured
        card.image_sizes = size.images or card.image_sizes
        shown = self._shown.get(call_id)
        if shown is not None and shown[0] is not None:
            handle, batch, cards = shown
            handle.update(batch_display(cards, batch=batch))

    def _new_card(self, call_id: str, tool_name: str, raw_input: Any) -> CallCard:
        name, summary = self._describe(tool_name, raw_input)
        card = CallCard(call_id, name or tool_name, relative_text(summary, self._cwd), batch=-1)
        card.response = self.summary.model_requests + 1  # counted at each TurnEnd
        if raw_input is not None and self._language is not None:
            card.language = self._language(tool_name, raw_input)
        if raw_input is not None and self._code is not None:
            code = self._code(tool_name, raw_input)
            if code is not None:
                card.code, card.insertable = (code[0], code[1]), code[2]
        self.cards[call_id] = card
        return card

    def _progress(self, card: CallCard, event: CallProgress) -> None:
        wait = event.wait
        if wait is not None:  # a wait for a person began or ended: shown at once
            if wait.answered_at is None:
                card.asked, card.asked_for = wait.asked_at, wait.what
            else:
                card.waits.append(Wait(wait.asked_at, wait.answered_at, wait.what))
                card.asked = None
            self._refresh()
            return
        card.progress = event.text or card.progress
        card.fraction = event.fraction if event.fraction is not None else card.fraction
        card.tail = tuple(relative_text(line, self._cwd) for line in event.tail) or card.tail
        urgent = False
        if event.checklist is not None:
            items = tuple(_item_dict(item) for item in event.checklist)
            card.checklist = items
            self.checklist = items
            urgent = True
        now = time.perf_counter()
        if urgent or now - self._last_progress >= _PROGRESS_INTERVAL:
            self._last_progress = now
            self._refresh()

    def _finish(self, event: CallFinished) -> None:
        card = self.cards.get(event.call_id)
        if card is None:
            card = self._new_card(event.call_id, event.result.tool_name, None)
            self.order.append(event.call_id)
        self._record_result(card, event)
        # Batches count from 1 for people, on through the cell and the conversation's earlier
        # cells (each model response numbers its own from 0); a call that never started
        # keeps a negative one.
        if event.batch >= 0:
            base = self._batch_base.setdefault(card.response, self._last_batch)
            card.batch = base + event.batch + 1
            self._last_batch = max(self._last_batch, card.batch)
        else:
            card.batch = event.batch
        self._flush(done_below=card.batch)
        self._refresh()

    def _record_result(self, card: CallCard, event: CallFinished) -> None:
        card.status = _status(event)
        card.stopped_by = event.stopped_by
        if card.started is None:
            card.started = time.perf_counter() - event.duration_s
        card.ended = card.started + event.duration_s
        if card.asked is not None:  # stopped while it waited for a person
            card.waits.append(Wait(card.asked, max(card.asked, card.ended), card.asked_for))
        content = event.result.content
        text = content if isinstance(content, str) else blocks_text(content)
        card.interrupted = event.stopped_by == "interrupt" or (
            event.status == "error" and INTERRUPTED_LINE in text
        )
        card.result = relative_text(strip_error_tags(text), self._cwd)
        card.asked = None
        # The payload keeps the full path (the lab extension reads the file through the
        # kernel); text and HTML show it relative to the working directory.
        card.persisted_path = event.result.persisted_path or saved_path_in(text)
        card.original_size = event.result.original_size
        card.decision = decision_json(event.result.decision)
        card.displays = tuple(getattr(event.result, "displays", ()) or ())
        # Estimated now; the loop measures it once the next request has carried it.
        card.tokens, card.image_sizes = estimate_tokens(event.result.to_block())
        card.tokens_measured = False
        # A stopped call keeps the newest lines it printed (its result may not hold them).
        if not (card.status == "cancelled" or card.interrupted):
            card.tail = ()
        card.fraction = None

    def _pending(self) -> list[CallCard]:
        return [self.cards[i] for i in self.order if i not in self._flushed]

    def _flush(self, *, done_below: int | None = None) -> None:
        """Show the finished batches: those before `done_below`, or all when none is
        outstanding (a batch ends before the next one starts)."""
        pending = self._pending()
        if not pending:
            return
        outstanding = any(not card.final for card in pending)
        ready = [
            card
            for card in pending
            if card.final
            and (not outstanding or (done_below is not None and card.batch < done_below))
        ]
        if not ready:
            return
        self._end_text()
        batches = sorted({card.batch for card in ready}, key=lambda b: (b < 0, b))
        for batch in batches:
            cards = [card for card in ready if card.batch == batch]
            handle = self._display(batch_display(cards, batch=batch), display_id=True)
            self._shown.update((card.tool_use_id, (handle, batch, cards)) for card in cards)
            self._flushed.update(card.tool_use_id for card in cards)
            for card in cards:
                self._show_displays(card)
        self._below = True

    def _show_displays(self, card: CallCard) -> None:
        """The rich outputs of a call and of its sub-agent's calls, as display outputs."""
        for child in card.children:
            self._show_displays(child)
        for shown in card.displays:
            data = shown.get("data")
            if isinstance(data, Mapping) and data:
                metadata = shown.get("metadata")
                self._display(
                    KernelOutput(data, metadata if isinstance(metadata, Mapping) else None)
                )

    # ── the live panel ─────────────────────────────────────────────────────────────────

    def start(self) -> None:
        """Create the live panel (empty), and its clock when an event loop runs."""
        self._panel = self._display(EMPTY_LIVE, display_id=True)
        with contextlib.suppress(RuntimeError):  # no running loop: redraw on events only
            self._ticker = asyncio.get_running_loop().create_task(self._tick())

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(TICK_SECONDS)
            if any(not card.final for card in self._pending()):
                self._refresh(move=False)

    def _refresh(self, *, move: bool = True) -> None:
        if self._panel is None:
            return
        running = [card for card in self._pending() if not card.final]
        if running and move and self._below:
            self._end_text()
            self._panel.update(EMPTY_LIVE)
            self._panel = self._display(EMPTY_LIVE, display_id=True)
            self._below = False
        if running:
            now = time.perf_counter()
            # A sub-agent's call that waits for a person makes the whole cell wait.
            waiting = [card for card in _with_children(running) if card.asked is not None]
            clock: float | None
            if waiting:  # the wait's own clock: the time the cell ran so far is beside it
                first = min(waiting, key=lambda card: card.asked or now)
                status = "Waiting for " + (
                    "you" if first.asked_for == APPROVAL else first.asked_for
                )
                clock = now - (first.asked or now)
            else:
                status, clock = "running", max(0.0, now - self._started - self.waited(now))
            finishing = self.finishing_status()
            if finishing:  # its own countdown is the clock
                status, clock = finishing, None
            self._panel.update(
                live_display(
                    running, status=status, elapsed=clock, now=now, checklist=self.checklist
                )
            )
        else:
            self._panel.update(EMPTY_LIVE)

    def waited(self, now: float) -> float:
        """Seconds of this cell spent waiting for a person up to `now`: every wait of every
        call (a sub-agent's included), overlapping waits counted once."""
        spans: list[tuple[float, float]] = []

        def collect(card: CallCard) -> None:
            spans.extend((w.asked, w.answered) for w in card.waits)
            if card.asked is not None:
                spans.append((card.asked, now))
            for child in card.children:
                collect(child)

        for card in self.cards.values():
            if card.tool_use_id in self.order:
                collect(card)
        total, reach = 0.0, float("-inf")
        for start, end in sorted(spans):
            start = max(start, reach)
            if end > start:
                total += end - start
                reach = end
        return total

    def finishing_status(self) -> str:
        """The countdown line of calls let finish after an interrupt ("" when none)."""
        parts = []
        for call_id, seconds in self._countdowns.items():
            card = self.cards.get(call_id)
            if card is None or card.final:
                continue
            label = f"{card.name}({card.summary})" if card.summary else card.name
            parts.append(f"Finishing {label} — " + "…".join(f"{n} s" for n in seconds) + "…")
        return "; ".join(parts)

    # ── the end ────────────────────────────────────────────────────────────────────────

    def notice(self, text: str, *, level: str = "info") -> None:
        self.end_thinking()
        self._end_text()
        self._display(notice_display(text, level=level))  # type: ignore[arg-type]
        self._below = True

    def finish(self, *, footer: bool = True) -> None:
        """Show what is left, reset the live panel and add the footer."""
        self.end_thinking()
        self._end_text()
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        for card in self._pending():
            if not card.final:
                card.status = "cancelled"
        self._flush()
        if self._panel is not None:
            self._panel.update(EMPTY_LIVE)
        now = time.perf_counter()
        self.summary.waited = self.waited(now)
        self.summary.duration = max(0.0, now - self._started - self.summary.waited)
        if footer:
            self.footer()

    def footer(self) -> None:
        """Show the footer (after `finish`, which measures the cell)."""
        self._display(footer_display(self.summary))

    def all_cards(self) -> list[CallCard]:
        return [self.cards[i] for i in self.order]


def _with_children(cards: list[CallCard]) -> list[CallCard]:
    """The cards and, nested at any depth, the calls their sub-agents made."""
    found: list[CallCard] = []
    for card in cards:
        found += [card, *_with_children(card.children)]
    return found


def _item_dict(item: Any) -> dict[str, Any]:
    """A checklist item (a `ChecklistItem` or a mapping) as a plain dict."""
    if isinstance(item, Mapping):
        return dict(item)
    return asdict(item)


def _stdout_write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()
