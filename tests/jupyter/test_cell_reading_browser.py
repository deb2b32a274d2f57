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
from typing import TYPE_CHECKING, Any

import pytest
from lab_browser import (
    IDLE,
    KERNELSPEC,
    Lab,
    new_page,
    open_notebook,
    require_browser,
    running_lab,
    set_theme,
    shoot,
)

from jupyter_toolhost.testing import Turn, text, tool_use

if TYPE_CHECKING:
    import nbformat

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

CONTRAST = """
(root) => {
  // WCAG 2 contrast of every piece of text under `root` against what is behind it,
  // from computed styles: colours blended over the nearest opaque background.
  const parse = (c) => {
    const m = c.match(/rgba?\\(([^)]+)\\)/);
    if (!m) return null;
    const p = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const over = (top, bottom) => {
    const a = top[3];
    return [0, 1, 2].map(i => top[i] * a + bottom[i] * (1 - a)).concat([1]);
  };
  const background = (el) => {
    const layers = [];
    for (let n = el; n && n.nodeType === 1; n = n.parentElement) {
      const c = parse(getComputedStyle(n).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let colour = [255, 255, 255, 1];
    for (const layer of layers.reverse()) colour = over(layer, colour);
    return colour;
  };
  const luminance = (c) => {
    const f = (v) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  };
  const ratio = (a, b) => {
    const [l1, l2] = [luminance(a), luminance(b)].sort((x, y) => y - x);
    return (l1 + 0.05) / (l2 + 0.05);
  };
  const found = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent.trim();
    const el = node.parentElement;
    if (!text || !el) continue;
    // Syntax colours are JupyterLab's own highlighting theme (CodeMirror's ͼ classes), as
    // in its code cells; they are not this package's to choose.
    if (/^ͼ/.test(el.getAttribute('class') || '')) continue;
    const box = el.getBoundingClientRect();
    const seen = el.checkVisibility({opacityProperty: true, visibilityProperty: true});
    if (!box.width || !box.height || !seen) continue;
    const style = getComputedStyle(el);
    let fg, bg;
    if (el instanceof SVGElement) {
      const svg = el.ownerSVGElement || el;
      const rect = svg.querySelector('.toolhost-background');
      fg = parse(style.fill);
      bg = rect ? parse(getComputedStyle(rect).fill) : background(svg);
      if (bg && bg[3] < 1) bg = over(bg, background(svg));
    } else {
      fg = parse(style.color);
      bg = background(el);
    }
    if (!fg || !bg) continue;
    fg = over(fg, bg);
    found.push({text: text.slice(0, 40), ratio: ratio(fg, bg), px: parseFloat(style.fontSize),
                cls: (el.getAttribute('class') || el.tagName).slice(0, 60)});
  }
  return found;
}
"""


def _notebook() -> nbformat.NotebookNode:
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = KERNELSPEC
    notebook.cells = [
        nbformat.v4.new_code_cell("%load_ext jupyter_toolhost\n%agent allow Bash(seq:*)"),
        nbformat.v4.new_code_cell("%agent allow PythonExec"),
        nbformat.v4.new_code_cell("%%agent\nCount, print slowly, write a note, then answer."),
        nbformat.v4.new_code_cell("%%agent --mode bypassPermissions\nCount slowly."),
        nbformat.v4.new_code_cell("%agent history --timeline"),
        nbformat.v4.new_code_cell("%agent request"),
        nbformat.v4.new_code_cell('%agent check Bash "rm -rf build && ls"'),
    ]
    return notebook


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    import nbformat

    base = tmp_path_factory.mktemp("reading")
    with running_lab(
        base,
        log_name="jupyter-lab-reading.log",
        env={"JUPYTER_TOOLHOST_HOME": str(base / "root" / ".toolhost")},
        unset=("JUPYTER_TOOLHOST_APPROVAL_TIMEOUT",),
    ) as started:
        nbformat.write(_notebook(), started.root / "reading.ipynb")
        yield started


def _run_cell(page: Any, index: int) -> None:
    page.wait_for_function(IDLE)
    page.evaluate(
        """index => { const nb = window.jupyterapp.shell.currentWidget.content;
             nb.activeCellIndex = index; nb.deselectAll();
             window.jupyterapp.commands.execute('notebook:run-cell'); }""",
        index,
    )


def _cell(page: Any, index: int) -> Any:
    return page.locator(".jp-Notebook .jp-CodeCell").nth(index)


def _low_contrast(page: Any, root: Any) -> list[dict[str, Any]]:
    found = root.evaluate(CONTRAST)
    assert found, "no text found to check"
    return [f for f in found if f["ratio"] < 4.5]


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
        _run_cell(page, 0)
        _run_cell(page, 1)
        _run_cell(page, 2)
        cell = _cell(page, 2)
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
        low = _low_contrast(page, cell.locator(".jp-Cell-outputArea"))
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
        _run_cell(page, 3)
        stopped = _cell(page, 3)
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
            _run_cell(page, index)
        page.wait_for_function(IDLE)
        timeline = _cell(page, 4).locator("svg.toolhost-timeline")
        timeline.wait_for()
        label_px = timeline.evaluate(
            """svg => { const t = svg.querySelector('.toolhost-batch text');
                 return t.getBoundingClientRect().height; }"""
        )
        assert label_px >= 12, label_px  # drawn at its size, not shrunk to fit
        assert _cell(page, 4).locator("text", has_text="Batch 1").count() >= 1
        _cell(page, 5).get_by_text("input tokens in all").first.wait_for()
        for index in (2, 3, 4, 5, 6):
            area = _cell(page, index).locator(".jp-Cell-outputArea")
            low = _low_contrast(page, area)
            assert low == [], (index, [f"{f['text']} {f['cls']} {f['ratio']:.2f}" for f in low])
        # The card's batch and the timeline's agree.
        card_batches = cell.locator(".jp-Toolhost-batch").evaluate_all(
            "nodes => nodes.map(n => Number(n.dataset.batch))"
        )
        assert card_batches[:3] == [1, 2, 3], card_batches
        shoot(answer, "cell-markdown-answer-dark.png")
        shoot(write, "cell-denied-run-and-approval-time-dark.png")
        shoot(_cell(page, 4).locator(".jp-Cell-outputArea"), "cell-timeline-dark.png")
        assert lab.errors == [], lab.errors
