"""Every wait for a person is shown as a wait, in a real kernel: an AskUserQuestion form and
an approval prompt each make the live panel say "Waiting for …" with the wait's own clock,
the card say "waiting for …", and the time stays out of the call's run time, the cell's
"running" clock and the footer's duration (which names it apart); the timeline draws it
hatched, named for what was waited for."""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from kernel_helpers import CellRun, Kernel

from jupyter_toolhost.core.numbers import format_number
from jupyter_toolhost.jupyter.views.render import MIME_TYPE
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

pytestmark = pytest.mark.timeout(120)

SVG = "{http://www.w3.org/2000/svg}"
WAIT = 2.5
"""Seconds the person takes to answer."""
QUESTION = {
    "question": "Which chart should I draw?",
    "header": "Chart",
    "options": [
        {"label": "Line chart (Recommended)", "description": "totals over time"},
        {"label": "Bar chart", "description": "totals per month"},
    ],
}


def live_panels(run: CellRun) -> list[dict[str, Any]]:
    """Every state of the live panel, in order: text and payload."""
    return [
        {"text": m["content"]["data"]["text/plain"], "payload": m["content"]["data"][MIME_TYPE]}
        for m in run.messages
        if m["msg_type"] == "update_display_data"
        and m["content"]["data"].get(MIME_TYPE, {}).get("kind") == "live"
        and m["content"]["data"][MIME_TYPE]["calls"]
    ]


def payloads(run: CellRun, kind: str) -> list[dict[str, Any]]:
    return [
        m["content"]["data"][MIME_TYPE]
        for m in run.messages
        if m["msg_type"] == "display_data"
        and m["content"]["data"].get(MIME_TYPE, {}).get("kind") == kind
    ]


def pump_for(kernel: Kernel, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        kernel.pump(timeout=0.05)


def seconds_of(text: str) -> float:
    """`2.5 s` or `850 ms` as seconds."""
    value, unit = text.split()
    return float(value.replace(",", "")) / (1000 if unit == "ms" else 1)


def check_the_wait(run: CellRun, *, label: str, status: str, waited_text: str) -> None:
    panels = live_panels(run)
    waiting = [p for p in panels if p["payload"]["calls"][0]["label"] == label]
    assert waiting, [p["text"] for p in panels]
    # The status line names the wait and counts its own seconds, never "running".
    assert all(p["text"].startswith(f"{status} · ") for p in waiting), [p["text"] for p in waiting]
    assert all(p["payload"]["status"] == status for p in waiting)
    longest = max(p["payload"]["elapsed"] for p in waiting)
    assert WAIT - 1.5 < longest < WAIT + 5, longest
    assert f"{status} · {int(longest)} s" in [p["text"].splitlines()[0] for p in waiting]
    [footer] = payloads(run, "footer")
    assert footer["waited"] > WAIT - 0.5, footer
    assert footer["times"][1].startswith("waited ") and footer["times"][1].endswith(" for you")
    assert footer["times"][0] == format_number(footer["duration"], "seconds")
    # The running clock, before and after the wait, leaves it out: it never runs ahead of
    # the cell's own run time.
    running = [p for p in panels if p["payload"]["status"] == "running"]
    assert running
    assert all(p["payload"]["elapsed"] <= footer["duration"] + 0.2 for p in running), [
        (p["payload"]["elapsed"], footer) for p in running
    ]
    assert all(p["text"].startswith("running · ") for p in running)

    [card] = [call for batch in payloads(run, "batch") for call in batch["calls"]]
    assert card["duration"] < WAIT - 0.5, card
    assert card["waited"] > WAIT - 0.5, card
    [shown] = card["waited_text"]
    assert shown.startswith("waited ") and shown.endswith(waited_text), shown
    assert WAIT - 0.5 < seconds_of(shown.removeprefix("waited ").removesuffix(waited_text)) < 10
    [batch_html] = [
        m["content"]["data"]["text/html"]
        for m in run.messages
        if m["msg_type"] == "display_data"
        and m["content"]["data"].get(MIME_TYPE, {}).get("kind") == "batch"
    ]
    assert f"· {shown}</span>" in batch_html


def test_a_question_is_waited_for_not_run(kernel: Kernel, server: MessagesServer) -> None:
    server.add_turns(
        Turn([tool_use("AskUserQuestion", {"questions": [QUESTION]})]),
        Turn([text("A line chart it is.")]),
    )
    run = kernel.submit("%%agent --new\nPlot the totals.")
    [submit] = kernel.wait_for_button(run, "Submit")
    pump_for(kernel, WAIT)
    kernel.set_value(kernel.toggles("Line chart (Recommended)", run)[0], True)
    kernel.click(submit)
    kernel.wait(run, timeout=30)
    assert run.status == "ok", run.text()
    assert "A line chart it is." in run.answer
    check_the_wait(
        run,
        label="waiting for your answer",
        status="Waiting for your answer",
        waited_text=" for your answer",
    )

    timeline = kernel.run("%agent history --timeline")
    [data] = [
        m["content"]["data"]
        for m in timeline.messages
        if m["msg_type"] in ("display_data", "execute_result")
    ]
    root = ET.fromstring(data["image/svg+xml"])
    [wait] = root.findall(f".//{SVG}rect[@class='toolhost-wait']")
    assert wait.get("data-what") == "your answer"
    assert "for your answer" in "".join(wait.itertext())
    assert "for your answer)" in data["text/plain"]


def test_an_approval_is_waited_for_not_run(kernel: Kernel, server: MessagesServer) -> None:
    server.add_turns(
        Turn([tool_use("PythonExec", {"code": "print('ran')"})]),
        Turn([text("It ran.")]),
    )
    run = kernel.submit("%%agent\nRun it.")
    [allow] = kernel.wait_for_button(run, "Allow once")
    pump_for(kernel, WAIT)
    kernel.click(allow)
    kernel.wait(run, timeout=30)
    assert run.status == "ok", run.text()
    check_the_wait(
        run, label="waiting for you", status="Waiting for you", waited_text=" for approval"
    )
    json.dumps(payloads(run, "footer"))  # the payload is plain JSON


def test_a_sub_agents_question_is_a_wait_of_the_whole_cell() -> None:
    """A question asked inside a sub-agent's call (its event comes wrapped in the Agent
    call's) turns the cell's status line to the wait, and its time leaves the footer's."""
    from jupyter_toolhost.core.context import PersonWait
    from jupyter_toolhost.core.types import ToolCall, ToolResult
    from jupyter_toolhost.jupyter.views.live import LiveView
    from jupyter_toolhost.orchestration.events import (
        CallFinished,
        CallProgress,
        CallQueued,
        CallStarted,
        ChildEvent,
    )

    shown: list[Any] = []

    class Handle:
        def update(self, obj: Any) -> None:
            shown.append(obj)

    view = LiveView(
        describe=lambda name, raw: (name, ""),
        display=lambda obj, **kwargs: shown.append(obj) or Handle(),
        write=lambda text: None,
    )
    view.start()
    now = time.perf_counter()
    view.on_tool_event(CallQueued(ToolCall("a1", "Agent", {}), "Agent", False))
    view.on_tool_event(CallStarted("a1", now - 10))
    child = ToolCall("q1", "AskUserQuestion", {})
    view.on_tool_event(ChildEvent("a1", CallQueued(child, "AskUserQuestion", True)))
    view.on_tool_event(ChildEvent("a1", CallStarted("q1", now - 9)))
    asked = now - 8
    view.on_tool_event(ChildEvent("a1", CallProgress("q1", "", wait=PersonWait(asked))))
    line = shown[-1].data["text/plain"].splitlines()[0]
    assert line.startswith("Waiting for your answer · "), line
    view.on_tool_event(ChildEvent("a1", CallProgress("q1", "", wait=PersonWait(asked, now - 1))))
    result = ToolResult("q1", "answered", tool_name="AskUserQuestion")
    view.on_tool_event(ChildEvent("a1", CallFinished("q1", result, 8.5, "ok", 0)))
    agent = ToolResult("a1", "done", tool_name="Agent")
    view.on_tool_event(CallFinished("a1", agent, 10.0, "ok", 0))
    view.finish()
    assert 6.9 < view.summary.waited < 7.1, view.summary.waited
    [question] = view.cards["a1"].children
    assert question.duration is not None and question.duration < 2
