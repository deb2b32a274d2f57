"""What a person reads in an `%%agent` cell, in JupyterLab 4.6 in Debian's Chromium at
1024×768 with the file browser open: the answer as rendered Markdown, "Waiting for you"
while a prompt waits (the wait kept out of the run time), PythonExec's printed lines while it
runs, a stopped card that keeps what it printed, a cut preview that says what is left, and,
in JupyterLab's dark theme, every view (cards, prompt, live panel, timeline, request, check,
footer) with text at a WCAG contrast of at least 4.5:1, computed from the page's own computed
styles (syntax-highlighted code keeps JupyterLab's own highlighting colours, as in its code
cells, and is left out of that check). The model is scripted (the loopback Messages API).
Screenshots go to `test-artifacts/`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from lab_browser import (
    IDLE,
    Lab,
    code_cell,
    low_contrast,
    new_page,
    open_notebook,
    require_browser,
    run_cell,
    running_lab,
    set_theme,
    shoot,
    write_notebook,
)

from jupyter_toolhost.testing import Turn, text, tool_use

require_browser()  # skips the module (fails under CI=true) without chromium or playwright

pytestmark = pytest.mark.timeout(240)

ANSWER = (
    "Class **A** leads: its mean is `84.7`.\n\n"
    "| class | mean |\n| --- | --- |\n| A | 84.7 |\n| B | 77.0 |\n\n"
    "- counted with `seq`\n- the full output is saved"
)
STREAMING = (
    "import time\n"
    "for i in range(6):\n"
    "    print(f'line {i}', flush=True)\n"
    "    time.sleep(0.8)\n"
    "'printed 6 lines'"
)
SLOW = "for i in 1 2 3 4 5 6 7 8 9 10; do echo step $i; sleep 0.6; done"


CELLS = (
    "%load_ext jupyter_toolhost\n%agent allow Bash(seq:*)",
    "%agent allow PythonExec",
    "%%agent\nCount, print slowly, write a note, then answer.",
    "%%agent --mode bypassPermissions\nCount slowly.",
    "%agent history --timeline",
    "%agent request",
    '%agent check Bash "rm -rf build && ls"',
)
"""The sources of the notebook's code cells."""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:

    base = tmp_path_factory.mktemp("reading")
    with running_lab(
        base,
        log_name="jupyter-lab-reading.log",
        env={"JUPYTER_TOOLHOST_HOME": str(base / "root" / ".toolhost")},
        unset=("JUPYTER_TOOLHOST_APPROVAL_TIMEOUT",),
    ) as started:
        write_notebook(started.root / "reading.ipynb", *CELLS)
        yield started


def test_a_cell_reads_right_while_it_runs_and_after(browser: Any, lab: Lab) -> None:
    lab.server.add_turns(
        Turn(
            [
                text("Counting first."),
                tool_use("Bash", {"command": "seq 1 20000", "description": "count"}),
            ]
        ),
        Turn([tool_use("PythonExec", {"code": STREAMING})]),
        Turn([tool_use("Write", {"file_path": "note.txt", "content": "seen\n"})]),
        Turn([text(ANSWER)]),
        Turn([tool_use("Bash", {"command": SLOW, "description": "count slowly"})]),
        Turn([text("Stopped.")]),
    )
    with new_page(browser, lab, "cell-reading", width=1024, height=768) as page:
        open_notebook(page, lab, "reading.ipynb")
        page.evaluate("() => window.jupyterapp.commands.execute('filebrowser:activate')")
        page.locator(".jp-FileBrowser").wait_for()
        set_theme(page, "JupyterLab Dark")
        run_cell(page, 0)
        run_cell(page, 1)
        run_cell(page, 2)
        cell = code_cell(page, 2)
        live = cell.locator(".jp-Toolhost-root[data-kind='live']")

        # PythonExec's printed lines show while it runs (it prints one each 0.8 s).
        python = live.locator(".jp-Toolhost-card", has_text="PythonExec")
        python.locator(".jp-Toolhost-tail", has_text="line 1").wait_for(timeout=60_000)
        assert "line 5" not in python.locator(".jp-Toolhost-tail").inner_text()
        assert python.get_attribute("data-status") == "running"
        shoot(cell.locator(".jp-Cell-outputArea"), "cell-python-streaming.png")

        # The Write call waits for a person: the card and the panel say so, not "running".
        waiting = live.locator(".jp-Toolhost-card[data-label='waiting for you']")
        waiting.wait_for(timeout=60_000)
        deny = cell.get_by_role("button", name="Deny", exact=True)
        deny.wait_for()
        assert live.locator(".jp-Toolhost-liveStatus").inner_text().startswith("Waiting for you")
        page.wait_for_timeout(1500)  # a wait long enough to tell apart from the run time
        low = low_contrast(cell.locator(".jp-Cell-outputArea"))
        assert low == [], low  # the prompt and the live panel, in the dark theme
        shoot(cell.locator(".jp-Cell-outputArea"), "cell-waiting-for-you-dark.png")
        deny.click()

        cell.locator(".jp-Toolhost-footer").wait_for(timeout=60_000)
        page.wait_for_function(IDLE)
        # The answer is Markdown, rendered: bold, code, a table and a list; no raw marks.
        answer = cell.locator(".jp-RenderedHTML", has_text="leads").last
        assert answer.locator("strong", has_text="A").count() == 1
        assert answer.locator("code", has_text="84.7").count() == 1
        assert answer.locator("table td", has_text="77.0").count() == 1
        assert answer.locator("li").count() == 2
        assert "**" not in answer.inner_text() and "`" not in answer.inner_text()
        # The denied Write: its run time is not the 1.5 s it waited; the wait has its own.
        write = cell.locator(".jp-Toolhost-batch .jp-Toolhost-card", has_text="Write")
        assert write.get_attribute("data-status") == "denied"
        run_time = write.locator(".jp-Toolhost-duration").inner_text()
        assert run_time.endswith(" ms"), run_time
        approval = write.locator(".jp-Toolhost-approvalTime").inner_text()
        timed = re.fullmatch(r"waited ([\d.]+) s for approval", approval)
        assert timed is not None, approval
        seconds = float(timed.group(1))
        assert seconds >= 1.5
        # The cut preview says what is left and how big the saved file is (KB = 1,024 B).
        bash = cell.locator(".jp-Toolhost-batch .jp-Toolhost-card", has_text="seq 1 20000")
        bash.locator(".jp-Toolhost-cardHeader").click()
        bash.locator(".jp-Toolhost-previewSummary").click()
        cut = bash.locator(".jp-Toolhost-cut")
        preview = bash.locator(".jp-Toolhost-result").bounding_box()
        below = cut.bounding_box()
        assert below["y"] >= preview["y"] + preview["height"] - 1  # under it, not scrolled away
        marker = cut.inner_text()
        assert re.fullmatch(r"… [\d,]+ more lines, 106\.[0-9] KB saved", marker), marker
        path = bash.locator(".jp-Toolhost-persistedPath").inner_text()
        assert path.startswith(".toolhost/sessions/"), path  # relative to the notebook
        saved = lab.root / path
        assert marker.endswith(f"{saved.stat().st_size / 1024:.1f} KB saved")
        assert "tool_use_error" not in cell.inner_text()
        shoot(bash, "cell-cut-preview-dark.png")

        # A stopped command keeps what it printed, and says "interrupted".
        run_cell(page, 3)
        stopped = code_cell(page, 3)
        running = stopped.locator(".jp-Toolhost-root[data-kind='live'] .jp-Toolhost-tail")
        running.filter(has_text="step 2").wait_for(timeout=60_000)
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:interrupt-kernel')")
        final = stopped.locator(".jp-Toolhost-batch .jp-Toolhost-card", has_text="Bash")
        final.wait_for(timeout=60_000)
        page.wait_for_function(IDLE)
        assert final.get_attribute("data-label") == "interrupted"
        kept_box = final.locator(".jp-Toolhost-stoppedTail .jp-Toolhost-tail")
        assert kept_box.is_visible()  # the card opens by itself to show it
        kept = kept_box.inner_text()
        assert "step 2" in kept, kept
        assert "tool_use_error" not in stopped.inner_text()
        shoot(stopped.locator(".jp-Cell-outputArea"), "cell-stopped-keeps-output-dark.png")

        # The teaching views, in the dark theme, at 1024×768 with the file browser open.
        for index in (4, 5, 6):
            run_cell(page, index)
        page.wait_for_function(IDLE)
        timeline = code_cell(page, 4).locator("svg.toolhost-timeline")
        timeline.wait_for()
        label_px = timeline.evaluate(
            """svg => { const t = svg.querySelector('.toolhost-batch text');
                 return t.getBoundingClientRect().height; }"""
        )
        assert label_px >= 12, label_px  # drawn at its size, not shrunk to fit
        assert code_cell(page, 4).locator("text", has_text="Batch 1").count() >= 1
        code_cell(page, 5).get_by_text("input tokens in all").first.wait_for()
        for index in (2, 3, 4, 5, 6):
            area = code_cell(page, index).locator(".jp-Cell-outputArea")
            assert low_contrast(area) == [], (index, low_contrast(area))
        # The card's batch and the timeline's agree.
        card_batches = cell.locator(".jp-Toolhost-batch").evaluate_all(
            "nodes => nodes.map(n => Number(n.dataset.batch))"
        )
        assert card_batches[:3] == [1, 2, 3], card_batches
        shoot(answer, "cell-markdown-answer-dark.png")
        shoot(write, "cell-denied-run-and-approval-time-dark.png")
        shoot(code_cell(page, 4).locator(".jp-Cell-outputArea"), "cell-timeline-dark.png")
        assert lab.errors == [], lab.errors
