"""The Thinking section as `LiveView` draws it (the real view, its display and write seams
given plain callables): where it goes, how often a streaming section is redrawn, how much a
live display carries, and what a hostile or odd stream of thinking events leaves behind."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from jupyter_toolhost.core.types import ToolCall, ToolResult
from jupyter_toolhost.jupyter.views.live import THINKING_INTERVAL, LiveView
from jupyter_toolhost.jupyter.views.render import MIME_TYPE, Rendered, TurnSummary, footer_parts
from jupyter_toolhost.jupyter.views.thinking import (
    EMPTY_THINKING,
    LIVE_TAIL_CHARS,
    OMITTED_LINE,
    REDACTED_LINE,
    ThinkingPart,
    ThinkingSection,
    thinking_display,
)
from jupyter_toolhost.orchestration.events import CallFinished, CallQueued, CallStarted


class Page:
    """What the view showed: ("display", id, bundle), ("update", id, bundle), ("text", s)."""

    def __init__(self) -> None:
        self.log: list[tuple[str, Any, Any]] = []
        self._ids = 0

    def display(self, obj: Rendered, **kwargs: Any) -> Any:
        self._ids += 1
        number = self._ids
        self.log.append(("display", number, obj))
        page = self

        class Handle:
            def update(self, new: Rendered) -> None:
                page.log.append(("update", number, new))

        return Handle() if kwargs.get("display_id") else None

    def view(self) -> LiveView:
        return LiveView(describe=lambda name, raw: (name, str(raw)), display=self.display)

    def kinds(self) -> list[str]:
        """Final outputs in order: "text" for the model's words (Markdown), and non-empty
        displays by payload kind."""
        out: list[str] = []
        for what, _, obj in self.log:
            if what == "display" and obj.data.get("text/plain"):
                kind = obj.data[MIME_TYPE]["kind"] if MIME_TYPE in obj.data else "text"
                out.extend([] if kind == "text" and out[-1:] == ["text"] else [kind])
        return out

    def final_thinking(self) -> list[Rendered]:
        return [
            obj
            for what, _, obj in self.log
            if what == "display"
            and obj.data.get(MIME_TYPE, {}).get("kind") == "thinking"
            and obj.data["text/plain"]
        ]

    def live_updates(self) -> list[dict[str, Any]]:
        return [
            obj.data[MIME_TYPE]
            for what, _, obj in self.log
            if what == "update" and obj.data.get(MIME_TYPE, {}).get("kind") == "thinking"
        ]


def _call(view: LiveView, call_id: str) -> None:
    call = ToolCall(call_id, "Read", {"file_path": "a.txt"})
    view.on_tool_event(CallQueued(call, "Read", True))
    view.on_tool_event(CallStarted(call_id, 1.0))
    result = ToolResult(call_id, "alpha", tool_name="Read")
    view.on_tool_event(CallFinished(call_id, result, 0.1, "ok", 0))


def test_a_section_sits_above_its_responses_cards_and_text() -> None:
    page = Page()
    view = page.view()
    view.thinking_key = "s:0"
    view.start()
    view.thinking_started(redacted=False)
    view.thinking_delta("Read a.txt first.")
    _call(view, "t1")
    view.summary.model_requests += 1
    view.thinking_started(redacted=True)
    view.thinking_started(redacted=False)
    view.thinking_delta("Now answer.")
    view.text("It says alpha.")
    view.finish()
    assert page.kinds() == ["thinking", "batch", "thinking", "text", "footer"]
    first, second = page.final_thinking()
    assert first.data[MIME_TYPE]["key"] == "s:0:1" and second.data[MIME_TYPE]["key"] == "s:0:2"
    assert second.data[MIME_TYPE]["response"] == 2
    assert second.data["text/plain"] == f"▸ Thinking · 11 characters\n{REDACTED_LINE}"
    # Every streaming display started empty and ended empty (what nbval and a saved
    # notebook see of it).
    for what, number, obj in page.log:
        if what == "display" and obj is EMPTY_THINKING:
            updates = [o for w, n, o in page.log if w == "update" and n == number]
            assert updates and updates[-1].data == EMPTY_THINKING.data


def test_hostile_thinking_text_stays_text() -> None:
    hostile = "</div></details><details open><script>alert(1)</script><img src=x onerror=1>"
    section = ThinkingSection("k", 1, [ThinkingPart(False, hostile)])
    html = thinking_display(section).data["text/html"]
    assert "<script" not in html and "<img" not in html
    assert html.count("<details") == 1 and not re.search(r"<details[^>]*\sopen", html)
    assert "&lt;script&gt;" in html


def test_redacted_and_omitted_blocks_say_so_without_a_section() -> None:
    section = ThinkingSection("k", 1, [ThinkingPart(True), ThinkingPart(False, "")])
    shown = thinking_display(section).data
    assert "<details" not in shown["text/html"]
    assert shown["text/plain"] == f"{REDACTED_LINE}\n{OMITTED_LINE}"
    assert [b["kind"] for b in shown[MIME_TYPE]["blocks"]] == ["redacted", "omitted"]
    # While it streams, a block with no text yet is not "omitted": it is coming.
    live = thinking_display(ThinkingSection("k", 1, [ThinkingPart(False)]), live=True).data
    assert live["text/plain"] == "▸ Thinking…" and OMITTED_LINE not in live["text/html"]


def test_a_flood_of_tiny_deltas_is_redrawn_a_few_times_and_nothing_is_lost() -> None:
    page = Page()
    view = page.view()
    view.start()
    view.thinking_started(redacted=False)
    for _ in range(5000):
        view.thinking_delta("x")
    view.text("done")
    updates = page.live_updates()
    assert len(updates) <= 5, len(updates)  # no loop here: drawn on deltas, at most 5 per s
    [final] = page.final_thinking()
    assert final.data[MIME_TYPE]["characters"] == 5000
    assert final.data[MIME_TYPE]["blocks"] == [{"kind": "text", "text": "x" * 5000}]


def test_a_huge_thought_streams_only_its_newest_part_but_ends_whole() -> None:
    page = Page()
    view = page.view()
    view.start()
    view.thinking_started(redacted=False)
    chunk = "0123456789" * 1000
    for index in range(30):  # 300,000 characters
        view._thinking_drawn = 0.0  # as if the interval had passed: draw every chunk
        view.thinking_delta(chunk if index else "START" + chunk)
    live = page.live_updates()[-1]
    carried = sum(len(b["text"]) for b in live["blocks"])
    assert carried <= LIVE_TAIL_CHARS + 1 and live["blocks"][0]["text"].startswith("…")
    assert live["characters"] == 300_005
    view.finish()
    [final] = page.final_thinking()
    assert final.data[MIME_TYPE]["blocks"][0]["text"].startswith("START")
    assert final.data["text/plain"] == "▸ Thinking · 300,005 characters"


async def test_a_delta_held_back_by_the_interval_is_drawn_when_it_is_up() -> None:
    page = Page()
    view = page.view()
    view.start()
    view.thinking_started(redacted=False)
    view.thinking_delta("first ")
    view.thinking_delta("second")  # too soon: held back
    assert page.live_updates()[-1]["blocks"][0]["text"] == "first "
    await asyncio.sleep(THINKING_INTERVAL * 2)
    assert page.live_updates()[-1]["blocks"][0]["text"] == "first second"
    view.finish()


async def test_ending_the_section_cancels_a_pending_redraw() -> None:
    page = Page()
    view = page.view()
    view.start()
    view.thinking_started(redacted=False)
    view.thinking_delta("a")
    view.thinking_delta("b")
    view.text("answer")
    count = len(page.log)
    await asyncio.sleep(THINKING_INTERVAL * 2)
    assert len(page.log) == count, page.log[count:]  # nothing drawn into the emptied display


def test_odd_event_orders_still_show_every_thought() -> None:
    page = Page()
    view = page.view()
    view.start()
    view.thinking_delta("no start event came")  # a delta alone opens a section
    view.thinking_started(redacted=True)
    view.thinking_delta("after a redacted block")  # a new part, never the redacted one's
    view.end_thinking()
    view.end_thinking()  # twice: nothing more
    view.thinking_delta("")  # nothing: no empty section
    view.finish()
    [shown] = page.final_thinking()
    blocks = shown.data[MIME_TYPE]["blocks"]
    assert [b["kind"] for b in blocks] == ["text", "redacted", "text"]
    assert blocks[2]["text"] == "after a redacted block"


def test_an_interrupted_thought_is_shown_as_far_as_it_came() -> None:
    page = Page()
    view = page.view()
    view.start()
    view.thinking_started(redacted=False)
    view.thinking_delta("half a tho")
    view.finish(footer=False)
    [shown] = page.final_thinking()
    assert shown.data[MIME_TYPE]["blocks"] == [{"kind": "text", "text": "half a tho"}]
    assert page.kinds() == ["thinking"]


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (
            {"input_tokens": 1200, "output_tokens": 2500, "thinking_tokens": 2000},
            "(incl. 2,000 thinking)",
        ),
        ({"input_tokens": 1, "output_tokens": 2}, None),
    ],
)
def test_the_footer_counts_thinking_within_the_output(
    usage: dict[str, int], expected: str | None
) -> None:
    text = " · ".join(footer_parts(TurnSummary(usage=usage)))
    assert "1,200 in / 2,500 out tokens" in text or expected is None
    assert (expected in text) if expected else ("thinking" not in text)
    # Scripted answers show no token counts; a recording from the API shows what it
    # recorded, the same whether this run records or replays it.
    scripted = " · ".join(footer_parts(TurnSummary(usage=usage, cassette="scripted")))
    assert "thinking" not in scripted and "scripted answers — no tokens spent" in scripted
    recorded, replayed = (
        " · ".join(footer_parts(TurnSummary(usage=usage, cassette="recorded", replayed=flag)))
        for flag in (False, True)
    )
    assert recorded == replayed and "as recorded — a replay spends nothing" in replayed
    assert (expected in replayed) if expected else ("thinking" not in replayed)
