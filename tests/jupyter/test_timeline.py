"""The `%agent history --timeline` SVG, drawn from cards with known times: where bars,
approval waits and marks land, their tooltips, and that the same timings give the same SVG;
and the live view recording waits and why a call was cancelled from the session's events."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from jupyter_toolhost.agent.events import PermissionAnswered
from jupyter_toolhost.core.types import ToolCall, ToolResult
from jupyter_toolhost.jupyter.views.cards import CallCard, Wait
from jupyter_toolhost.jupyter.views.live import LiveView
from jupyter_toolhost.jupyter.views.render import MIME_TYPE
from jupyter_toolhost.jupyter.views.timeline import (
    MARKS,
    PLOT_W,
    PLOT_X,
    timeline_display,
    timeline_svg,
)
from jupyter_toolhost.orchestration.events import CallFinished, CallQueued, CallStarted
from jupyter_toolhost.permissions.api import ApprovalDecision, ApprovalRequest

SVG = "{http://www.w3.org/2000/svg}"
T0 = 5_000.0
"""A perf_counter-like origin: only times relative to the first start matter."""


def session_cards(t0: float = T0) -> list[CallCard]:
    """Three reads at once; a Bash call that waited 1.5 s for a click; a failing Bash call
    that cancelled its running sibling and one that never started; a denied Edit; an
    interrupted Sleep. Spans 2.5 s, so the axis ticks every 0.5 s."""
    sibling: dict[str, Any] = {"stopped_by": "sibling"}
    return [
        CallCard("r1", "Read", "notes.md", 1, "done", t0, t0 + 0.2),
        CallCard("r2", "Grep", "TODO in src", 1, "done", t0, t0 + 0.35),
        CallCard("r3", "Glob", "*.py", 1, "done", t0 + 0.01, t0 + 0.15),
        CallCard("b1", "Bash", "make build", 2, "done", t0 + 0.4, t0 + 2.1,
                 waits=[Wait(t0 + 0.4, t0 + 1.9)]),
        CallCard("b2", "Bash", "false", 3, "error", t0 + 2.1, t0 + 2.2),
        CallCard("b3", "Bash", "sleep 5", 3, "cancelled", t0 + 2.1, t0 + 2.25, **sibling),
        CallCard("w1", "Write", "out.txt", -1, "cancelled", t0 + 2.25, t0 + 2.25, **sibling),
        CallCard("e1", "Edit", "secret.txt", 4, "denied", t0 + 2.3, t0 + 2.4),
        CallCard("s1", "Sleep", "30 s", 5, "cancelled", t0 + 2.4, t0 + 2.5,
                 stopped_by="interrupt"),
    ]  # fmt: skip


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def calls(root: ET.Element) -> list[ET.Element]:
    return root.findall(f".//{SVG}g[@class='toolhost-call']")


def title_of(element: ET.Element) -> str:
    found = element.find(f"{SVG}title")
    assert found is not None, ET.tostring(element)
    return found.text or ""


def x_at(seconds: float, axis_end: float = 2.5) -> float:
    return round(PLOT_X + seconds * PLOT_W / axis_end, 1)


def bar(call: ET.Element) -> ET.Element:
    found = call.find(f"{SVG}rect[@class='toolhost-bar']")
    assert found is not None
    return found


def test_bars_sit_on_one_time_axis_with_ticks_in_seconds():
    root = parse(timeline_svg(session_cards()))
    rows = calls(root)
    assert len(rows) == 9
    starts = [float(bar(row).get("x", "")) for row in rows]
    widths = [float(bar(row).get("width", "")) for row in rows]
    assert starts[0] == x_at(0.0) and starts[3] == x_at(0.4) and starts[-1] == x_at(2.4)
    assert widths[3] == pytest.approx(x_at(2.1) - x_at(0.4), abs=0.11)
    assert widths[6] == 2.0  # a call that never ran is still a visible sliver
    ticks = [text.text for text in root.findall(f".//{SVG}g[@class='toolhost-tick']/{SVG}text")]
    assert ticks == ["0.0 s", "0.5 s", "1.0 s", "1.5 s", "2.0 s", "2.5 s"]


def test_a_batch_is_grouped_under_its_label_and_its_calls_overlap_in_time():
    root = parse(timeline_svg(session_cards()))
    headers = [
        "".join(g.find(f"{SVG}text").itertext())  # type: ignore[union-attr]
        for g in root.findall(f".//{SVG}g[@class='toolhost-batch']")
    ]
    assert headers == [
        "Batch 1 · 3 calls ran concurrently · 350 ms",
        "Batch 2 · 1 call ran alone · 1.7 s",
        "Batch 3 · 2 calls ran concurrently · 150 ms",
        "not started · 1 call answered without running",
        "Batch 4 · 1 call ran alone · 100 ms",
        "Batch 5 · 1 call ran alone · 100 ms",
    ]
    rows = calls(root)
    first_batch = rows[:3]
    assert {row.get("data-batch") for row in first_batch} == {"1"}
    ys = [float(bar(row).get("y", "")) for row in rows]
    assert ys == sorted(ys) and len(set(ys)) == len(ys)  # one row each, in order
    ends = [float(bar(r).get("x", "")) + float(bar(r).get("width", "")) for r in first_batch]
    starts = [float(bar(r).get("x", "")) for r in first_batch]
    assert max(starts) < min(ends)  # side by side in time
    assert float(bar(rows[3]).get("x", "")) >= max(ends)  # the unsafe call ran after them
    # Each batch has its own colour; the calls of one batch share it.
    fills = [bar(row).get("fill") for row in rows]
    assert len(set(fills[:3])) == 1 and fills[0] != fills[3] != fills[4]


def test_an_approval_wait_is_shaded_on_its_bar():
    root = parse(timeline_svg(session_cards()))
    waits = root.findall(f".//{SVG}rect[@class='toolhost-wait']")
    assert len(waits) == 1
    [wait] = waits
    assert float(wait.get("x", "")) == x_at(0.4)
    assert float(wait.get("width", "")) == pytest.approx(x_at(1.9) - x_at(0.4), abs=0.11)
    row = calls(root)[3]
    assert wait in list(row) and wait.get("y") == bar(row).get("y")
    assert "waited 1.5 s for approval" in title_of(wait)
    assert "waited 1.5 s for approval" in title_of(bar(row))


def test_failed_denied_sibling_aborted_and_interrupted_calls_are_marked():
    root = parse(timeline_svg(session_cards()))
    statuses = [row.get("data-status") for row in calls(root)]
    assert statuses == [
        "done", "done", "done", "done", "error", "sibling", "sibling", "denied", "interrupted",
    ]  # fmt: skip
    for row in calls(root):
        mark = row.find(f"{SVG}text[@class='toolhost-mark']")
        status = row.get("data-status")
        if status == "done":
            assert mark is None
            continue
        assert mark is not None
        symbol, _color, meaning = MARKS[status]  # type: ignore[index]
        assert "".join(mark.itertext()).endswith(symbol)
        assert title_of(mark).startswith(meaning)
        # The mark sits just after the bar's end.
        assert float(mark.get("x", "")) > float(bar(row).get("x", ""))
    legend = [title_of(item) for item in root.findall(f".//{SVG}g[@class='toolhost-legend-item']")]
    assert legend == [
        "waiting for you (approval, answer)",
        "failed",
        "denied",
        "cancelled: a sibling call failed",
        "interrupted",
        "cancelled",
    ]


def test_every_element_has_a_tooltip_with_name_summary_batch_duration_status():
    root = parse(timeline_svg(session_cards()))
    for row in calls(root):
        for element in (row, bar(row), row.find(f"{SVG}text")):
            assert element is not None
            title_of(element)
    tooltip = title_of(bar(calls(root)[5]))
    assert tooltip.splitlines()[:2] == [
        "Bash: sleep 5",
        "Batch 3 · 150 ms · cancelled: a sibling call failed",
    ]
    # The duration is the run time: the 1.5 s the prompt waited is not counted in it.
    assert "Batch 2 · 200 ms · done" in title_of(bar(calls(root)[3]))
    assert "not started · 0 ms · cancelled: a sibling call failed" in title_of(calls(root)[6])
    for group in ("toolhost-batch", "toolhost-tick", "toolhost-legend-item", "toolhost-axis"):
        found = root.findall(f".//{SVG}g[@class='{group}']")
        assert found and all(title_of(g) for g in found)


def test_text_is_at_least_12px_and_the_layout_depends_only_on_relative_times():
    svg = timeline_svg(session_cards())
    sizes = [int(size) for size in re.findall(r'font-size="(\d+)"', svg)]
    assert sizes and min(sizes) >= 12
    assert timeline_svg(session_cards(t0=123.456)) == svg
    assert timeline_svg(session_cards()) == svg
    root = parse(svg)
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"


def test_the_display_is_svg_with_inline_html_and_text():
    shown = timeline_display(session_cards())
    assert set(shown.data) == {"image/svg+xml", "text/html", "text/plain"}
    assert MIME_TYPE not in shown.data  # the lab renderer would draw its own bars instead
    svg = shown.data["image/svg+xml"]
    assert svg in shown.data["text/html"]
    plain = shown.data["text/plain"].splitlines()
    assert plain[:2] == ["Batch 1", "  Read: notes.md  200 ms  done"]
    assert "  Bash: make build  200 ms  done  (waited 1.5 s for approval)" in plain
    assert "  Bash: sleep 5  150 ms  cancelled: a sibling call failed" in plain
    empty = timeline_display([])
    assert "no tool calls yet" in empty.data["image/svg+xml"]
    assert empty.data["text/plain"] == "no tool calls yet"


# ── the live view records what the timeline draws ────────────────────────────────────────


def _request(call_id: str) -> ApprovalRequest:
    return ApprovalRequest(
        tool_name="Bash",
        display_name="Bash",
        summary="make",
        input={"command": "make"},
        message="Bash needs approval",
        reason=None,
        suggested_rules=(),
        tool_use_id=call_id,
    )


def test_the_live_view_records_approval_waits_and_why_calls_were_cancelled():
    shown: list[Any] = []
    view = LiveView(
        describe=lambda name, raw: (name, str(raw.get("command", ""))),
        display=lambda obj, **kwargs: shown.append(obj),
    )
    ids = ["b1", "b2", "b3"]
    for call_id in ids:
        call = ToolCall(call_id, "Bash", {"command": call_id})
        view.on_tool_event(CallQueued(call, "Bash", False))
        view.on_tool_event(CallStarted(call_id, 10.0))
    view.on_tool_event(PermissionAnswered(_request("b1"), ApprovalDecision("allow"), 10.1, 11.6))
    view.on_tool_event(PermissionAnswered(_request("b1"), None, 11.7, 11.8))
    view.on_tool_event(PermissionAnswered(_request("unknown"), None, 1.0, 2.0))  # ignored
    result = ToolResult("b1", "ok", tool_name="Bash")
    view.on_tool_event(CallFinished("b1", result, 2.0, "ok", 0))
    failed = ToolResult("b2", "boom", is_error=True, tool_name="Bash")
    view.on_tool_event(CallFinished("b2", failed, 0.5, "error", 0))
    stopped = ToolResult("b3", "Cancelled", is_error=True, tool_name="Bash")
    view.on_tool_event(CallFinished("b3", stopped, 0.5, "cancelled", 0, "sibling"))
    view.finish(footer=False)
    cards = view.all_cards()
    assert cards[0].waits == [Wait(10.1, 11.6), Wait(11.7, 11.8)]
    assert [c.stopped_by for c in cards] == [None, None, "sibling"]
    statuses = [row.get("data-status") for row in calls(parse(timeline_svg(cards)))]
    assert statuses == ["done", "error", "sibling"]


def test_batches_of_different_model_responses_are_different_groups():
    # Each model response numbers its batches from 1: the timeline tells them apart.
    first = CallCard("a", "Read", "a.txt", 1, "done", 0.0, 0.1, response=1)
    second = CallCard("b", "Read", "b.txt", 1, "done", 0.3, 0.4, response=2)
    third = CallCard("c", "Read", "c.txt", 1, "done", 0.3, 0.5, response=2)
    rows = calls(parse(timeline_svg([first, second, third])))
    assert [row.get("data-batch") for row in rows] == ["1", "2", "2"]
    assert "Batch 2 · 100 ms · done" in title_of(bar(rows[1]))
