"""What one `%%agent` cell shows while it runs, driven by the session's events.

- Assistant text is written to the cell's stdout as it arrives (a stream: nbval keeps it).
- Running calls live in one display (the "live panel") that is updated in place and reset
  to empty at the end, so a stored notebook and a fresh run leave the same output behind.
- When a batch is over, its cards are displayed once, grouped, in the order the model sent
  the calls; nothing that varies between runs (ids, durations, completion order) is in
  their text or HTML.
- After an interrupt, a "block" call that is let finish is named in the live panel with its
  grace counting down ("Finishing Sleep(…) — 3 s…2 s…"): transient, like every live update.
- A footer closes the cell.

This class only renders; it never decides anything about the run.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from ..orchestration.events import (
    CallFinished,
    CallFinishing,
    CallProgress,
    CallQueued,
    CallStarted,
)
from .render import (
    EMPTY_LIVE,
    CallCard,
    CallStatus,
    Rendered,
    TurnSummary,
    batch_display,
    decision_json,
    footer_display,
    live_display,
    notice_display,
)

_PROGRESS_INTERVAL = 0.25

Display = Callable[..., Any]


def _status(finished: CallFinished) -> CallStatus:
    match finished.status:
        case "ok":
            return "done"
        case "error" | "denied" | "cancelled":
            return finished.status


class LiveView:
    """Renders the events of one cell's run; keeps every card for history and timeline."""

    def __init__(
        self,
        *,
        describe: Callable[[str, Any], tuple[str, str]],
        language: Callable[[str, Any], str | None] | None = None,
        display: Display | None = None,
        write: Callable[[str], None] | None = None,
    ) -> None:
        """`describe(tool_name, raw_input)` gives a call's (display name, summary);
        `language(tool_name, raw_input)` the language of its result, when known."""
        self._describe = describe
        self._language = language
        self._display = display or _ipython_display
        self._write = write or _stdout_write
        self.cards: dict[str, CallCard] = {}
        self.order: list[str] = []
        self.summary = TurnSummary()
        self._panel: Any = None
        self._last_progress = 0.0
        self._text_open = False
        self._flushed: set[str] = set()
        self._countdowns: dict[str, list[int]] = {}
        """call id → the seconds of grace shown so far, for calls let finish after an interrupt."""
        self._started = time.perf_counter()

    # ── text ───────────────────────────────────────────────────────────────────────────

    def text(self, delta: str) -> None:
        """A piece of assistant text, shown at once."""
        if delta:
            self._write(delta)
            self._text_open = not delta.endswith("\n")

    def _end_text(self) -> None:
        if self._text_open:
            self._write("\n")
            self._text_open = False

    def line(self, text: str) -> None:
        """A whole line of plain output (approval records, notices)."""
        self._end_text()
        self._write(text + "\n")

    # ── tool calls ─────────────────────────────────────────────────────────────────────

    def on_tool_event(self, event: Any) -> None:
        """Handle one orchestration event (queued, started, progress, finished)."""
        match event:
            case CallQueued(call=call, tool_name=tool_name):
                name, summary = self._describe(tool_name, call.input)
                self.cards[call.id] = CallCard(call.id, name, summary, batch=-1)
                if self._language is not None:
                    self.cards[call.id].language = self._language(tool_name, call.input)
                self.order.append(call.id)
                self.summary.tool_calls += 1
                self._refresh()
            case CallStarted(call_id=call_id, started_at=started_at):
                card = self.cards.get(call_id)
                if card is not None:
                    card.status = "running"
                    card.started = started_at
                    self._refresh()
            case CallProgress(call_id=call_id, text=text):
                card = self.cards.get(call_id)
                if card is not None:
                    card.progress = text
                    now = time.perf_counter()
                    if now - self._last_progress >= _PROGRESS_INTERVAL:
                        self._last_progress = now
                        self._refresh()
            case CallFinishing(call_id=call_id, remaining_s=remaining):
                self._countdowns.setdefault(call_id, []).append(remaining)
                self._refresh()
            case CallFinished():
                self._finish(event)
            case _:
                pass

    def _finish(self, event: CallFinished) -> None:
        card = self.cards.get(event.call_id)
        if card is None:
            name, summary = self._describe(event.result.tool_name, None)
            card = CallCard(event.call_id, name or event.result.tool_name, summary, batch=-1)
            self.cards[event.call_id] = card
            self.order.append(event.call_id)
        card.status = _status(event)
        card.batch = event.batch
        if card.started is None:
            card.started = time.perf_counter() - event.duration_s
        card.ended = card.started + event.duration_s
        content = event.result.content
        card.result = content if isinstance(content, str) else _blocks_text(content)
        card.persisted_path = event.result.persisted_path
        card.original_size = event.result.original_size
        card.decision = decision_json(event.result.decision)
        self._flush(done_below=event.batch)
        self._refresh()

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
            self._display(batch_display(cards, batch=batch))
            self._flushed.update(card.tool_use_id for card in cards)

    # ── the live panel ─────────────────────────────────────────────────────────────────

    def start(self) -> None:
        """Create the live panel (empty)."""
        self._panel = self._display(EMPTY_LIVE, display_id=True)

    def _refresh(self) -> None:
        if self._panel is None:
            return
        running = [card for card in self._pending() if not card.final]
        if running:
            elapsed = time.perf_counter() - self._started
            status = self.finishing_status() or f"running… {elapsed:.1f} s"
            self._panel.update(live_display(running, status=status, elapsed=elapsed))
        else:
            self._panel.update(EMPTY_LIVE)

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
        self._end_text()
        self._display(notice_display(text, level=level))  # type: ignore[arg-type]

    def finish(self, *, footer: bool = True) -> None:
        """Show what is left, reset the live panel and add the footer."""
        self._end_text()
        for card in self._pending():
            if not card.final:
                card.status = "cancelled"
        self._flush()
        if self._panel is not None:
            self._panel.update(EMPTY_LIVE)
        self.summary.duration = time.perf_counter() - self._started
        if footer:
            self._display(footer_display(self.summary))

    def all_cards(self) -> list[CallCard]:
        return [self.cards[i] for i in self.order]


def _blocks_text(blocks: list[dict[str, Any]]) -> str:
    parts = []
    for block in blocks:
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        else:
            parts.append(f"[{block.get('type', 'block')}]")
    return "\n".join(parts)


def _ipython_display(obj: Rendered, **kwargs: Any) -> Any:
    from IPython.display import display

    return display(obj, **kwargs)


def _stdout_write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()
