"""`%agent history --timeline` in a real kernel, after a scripted conversation with a
concurrent batch, an approval clicked after a delay, and a failing Bash call that cancels
its running sibling: the SVG shows each of them."""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET

import pytest
from kernel_helpers import Kernel

from jupyter_toolhost.jupyter.views.timeline import PLOT_W
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

pytestmark = pytest.mark.timeout(120)

SVG = "{http://www.w3.org/2000/svg}"
CLICK_DELAY = 1.0
TURNS = [
    # a concurrent batch, a call that asks, then a failing call that cancels its sibling
    Turn(
        [
            tool_use("Glob", {"pattern": "*.txt"}),
            tool_use("Read", {"file_path": "a.txt"}),
            tool_use("Bash", {"command": "sleep 0.3; ls", "description": "list slowly"}),
        ]
    ),
    Turn([tool_use("Bash", {"command": "touch made.txt", "description": "make a file"})]),
    Turn(
        [
            tool_use("Bash", {"command": "sleep 0.3; cat missing.txt", "description": "fail"}),
            tool_use("Bash", {"command": "sleep 5", "description": "wait long"}),
        ]
    ),
    Turn([text("Done.")]),
]


def test_the_timeline_shows_batches_an_approval_wait_and_a_sibling_abort(
    kernel: Kernel, server: MessagesServer
) -> None:
    kernel.run("open('a.txt', 'w').write('alpha\\n')")
    server.add_turns(*TURNS)
    run = kernel.submit("%%agent\nLook around, make a file, then read a missing one.")
    [allow] = kernel.wait_for_button(run, "Allow once", timeout=30)
    time.sleep(CLICK_DELAY)
    kernel.click(allow)
    kernel.wait(run, timeout=60)
    assert run.status == "ok", run.text()
    assert "Done." in run.answer

    shown = kernel.run("%agent history --timeline")
    assert shown.status == "ok", shown.text()
    [data] = [
        m["content"]["data"]
        for m in shown.messages
        if m["msg_type"] in ("display_data", "execute_result")
    ]
    assert set(data) == {"image/svg+xml", "text/html", "text/plain"}
    root = ET.fromstring(data["image/svg+xml"])
    assert data["image/svg+xml"] in data["text/html"]

    headers = [
        "".join(g.itertext()) for g in root.findall(f".//{SVG}g[@class='toolhost-batch']/{SVG}text")
    ]
    assert [h.split(" · ")[:2] for h in headers] == [
        ["Batch 1", "3 calls ran concurrently"],
        ["Batch 2", "1 call ran alone"],
        ["Batch 3", "2 calls ran concurrently"],
    ], headers
    rows = root.findall(f".//{SVG}g[@class='toolhost-call']")
    assert [row.get("data-batch") for row in rows] == ["1", "1", "1", "2", "3", "3"]
    assert [row.get("data-status") for row in rows] == [
        "done", "done", "done", "done", "error", "sibling",
    ]  # fmt: skip

    def span(element: ET.Element) -> tuple[float, float]:
        x = float(element.get("x", ""))
        return x, x + float(element.get("width", ""))

    bars = [row.find(f"{SVG}rect[@class='toolhost-bar']") for row in rows]
    assert all(b is not None for b in bars)
    first = [span(b) for b in bars[:3] if b is not None]
    assert max(start for start, _ in first) < min(end for _, end in first)  # side by side

    # The approval wait is shaded on the Bash call that asked, and lasted about the delay.
    waits = root.findall(f".//{SVG}rect[@class='toolhost-wait']")
    assert len(waits) == 1 and waits[0] in list(rows[3])
    ticks = [t.text or "" for t in root.findall(f".//{SVG}g[@class='toolhost-tick']/{SVG}text")]
    axis_end = float(ticks[-1].removesuffix(" s"))
    waited = float(waits[0].get("width", "")) / PLOT_W * axis_end
    assert CLICK_DELAY - 0.1 <= waited <= CLICK_DELAY + 3, waited
    [line] = [line for line in data["text/plain"].splitlines() if "touch made.txt" in line]
    assert re.search(r"waited \d+(\.\d)? (s|ms) for approval", line), line

    # The failed call is marked ✗; its sibling, stopped long before its 5 s, ↯.
    marks = {row.get("data-status"): row.find(f"{SVG}text[@class='toolhost-mark']") for row in rows}
    assert "".join(marks["error"].itertext()).endswith("✗")  # type: ignore[union-attr]
    assert "".join(marks["sibling"].itertext()).endswith("↯")  # type: ignore[union-attr]
    sibling_bar = bars[5]
    assert sibling_bar is not None
    title = sibling_bar.find(f"{SVG}title")
    assert title is not None and title.text is not None
    assert title.text.startswith("Bash: sleep 5\nBatch 3 · ")
    assert "cancelled: a sibling call failed" in title.text
    sibling_start, sibling_end = span(sibling_bar)
    assert (sibling_end - sibling_start) / PLOT_W * axis_end < 3.0
