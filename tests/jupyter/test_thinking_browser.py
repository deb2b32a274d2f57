"""Extended thinking in JupyterLab, in Debian's Chromium: a response's thinking streams
into a collapsed "Thinking" section whose text grows while the response is still running,
stays open through its redraws once a person opens it, and ends above the tool cards of its
response. Screenshots go to `test-artifacts/`."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from lab_browser import (
    IDLE,
    Lab,
    new_page,
    open_notebook,
    require_browser,
    run_all,
    running_lab,
    shoot,
)

from jupyter_toolhost.testing import Turn, text, thinking, tool_use

require_browser()  # skips the module (fails under CI=true) without chromium or playwright

pytestmark = pytest.mark.timeout(150)

STEPS = [
    "First, what does the user want? The notes, read back to them.\n",
    "Second, where are they? Most likely notes.txt in the working directory.\n",
    "Third, reading it is safe: Read is read-only and allowed.\n",
]
BLOCK_DELAY = 1.2
"""Seconds between the thinking blocks (and before the call): the text grows in steps."""
STATE = """cell => {
    const area = cell.querySelector('.jp-Cell-outputArea');
    const live = area.querySelector('.jp-Toolhost-thinking.jp-mod-live');
    const texts = live ? [...live.querySelectorAll('.jp-Toolhost-thinkingText')] : [];
    return {
        live: live !== null,
        open: live ? live.querySelector('details').open : null,
        summary: live ? live.querySelector('summary').textContent : null,
        chars: texts.map(t => t.textContent).join('').length,
        cards: area.querySelectorAll('.jp-Toolhost-card').length,
        done: area.textContent.includes('The notes say hello.'),
    };
}"""
ORDER = """area => [...area.querySelectorAll('.jp-OutputArea-output')]
    .filter(o => !o.classList.contains('jp-mod-empty'))
    .map(o => {
        const root = o.querySelector('.jp-Toolhost-root');
        if (!root) { return o.textContent.trim() ? 'text' : 'blank'; }
        return root.classList.contains('jp-mod-empty') ? 'blank' : root.dataset.kind;
    })
    .filter(kind => kind !== 'blank')"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    cells = [
        "%load_ext jupyter_toolhost\n%agent allow Read",
        "%%agent --think 2048\nWhat do my notes say?",
    ]
    with running_lab(
        tmp_path_factory.mktemp("think"),
        log_name="jupyter-lab-think.log",
        files={"notes.txt": "hello\n"},
        notebooks={"think.ipynb": cells},
    ) as lab:
        yield lab


def test_thinking_streams_collapsed_and_ends_above_its_cards(browser: Any, lab: Lab) -> None:
    lab.server.add_turns(
        Turn(
            [*(thinking(step) for step in STEPS), tool_use("Read", {"file_path": "notes.txt"})],
            block_delay=BLOCK_DELAY,
        ),
        Turn([thinking("It says hello.\n"), text("The notes say hello.")], block_delay=0.5),
    )
    with new_page(browser, lab, "thinking", width=1024, height=768) as page:
        open_notebook(page, lab, "think.ipynb")
        run_all(page)
        cell = page.locator(".jp-Notebook .jp-CodeCell").nth(1)
        cell.locator(".jp-Toolhost-thinking.jp-mod-live").wait_for(timeout=60_000)

        samples: list[dict[str, Any]] = []
        opened = False
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            state = cell.evaluate(STATE)
            samples.append(state)
            if state["cards"] or state["done"]:
                break
            if state["live"] and not opened and state["chars"] >= len(STEPS[0]):
                assert state["open"] is False, "a streaming section starts collapsed"
                shoot(cell.locator(".jp-Toolhost-thinking.jp-mod-live"), "thinking-live-closed.png")
                cell.locator(".jp-Toolhost-thinking.jp-mod-live summary").click()
                opened = True
            page.wait_for_timeout(100)

        streaming = [s for s in samples if s["live"] and not s["cards"] and not s["done"]]
        counts = [s["chars"] for s in streaming]
        assert streaming and streaming[0]["open"] is False, samples[:3]
        grew = sorted(set(counts))
        # The text grew at least twice while the response still ran (no card, no answer).
        assert len(grew) >= 3 and grew[-1] == sum(len(s) for s in STEPS), counts
        assert counts == sorted(counts), counts  # it never shrank or jumped back
        assert all(s["summary"].startswith("Thinking…") for s in streaming)
        # Once opened it stays open through every redraw.
        after = [s for s in streaming if s["chars"] > len(STEPS[0])]
        assert opened and after and all(s["open"] for s in after[1:]), after

        cell.get_by_text("The notes say hello.").wait_for(timeout=60_000)
        page.wait_for_function(IDLE)
        area = cell.locator(".jp-Cell-outputArea")
        order = area.evaluate(ORDER)
        assert order[:3] == ["thinking", "batch", "thinking"], order
        assert order[-1] == "footer", order
        finals = cell.locator(".jp-Toolhost-thinking:not(.jp-mod-live) details")
        assert finals.count() == 2
        # The one opened while it streamed is still open; the next response's starts closed.
        assert finals.evaluate_all("ds => ds.map(d => d.open)") == [True, False]
        assert cell.locator(".jp-Toolhost-thinking.jp-mod-live").count() == 0
        first = cell.locator(".jp-Toolhost-thinking").first
        assert all(step.strip() in first.inner_text() for step in STEPS)
        assert "Thinking · " in first.locator("summary").inner_text()
        shoot(area, "thinking-cell.png")
        assert lab.errors == [], lab.errors
