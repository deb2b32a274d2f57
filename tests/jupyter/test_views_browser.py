"""Every view an `%%agent` cell shows, as a person sees it: JupyterLab 4.6 in Debian's Chromium
at 1024×768 with the file browser open, in JupyterLab's light and dark themes, with real
clicks and keystrokes.

One conversation shows them all: the folder trust question, batch cards (a saved, cut preview;
a failed call; a plot under its card), the approval prompt, AskUserQuestion's form, a denied
call, the answer, the footer; then `%agent history --timeline`, `%agent request` and
`%agent check`. For each view, in both themes:

- every piece of text, button label and placeholder has a WCAG contrast of at least 4.5:1,
  computed from the page's computed styles (`lab_browser.low_contrast`);
- a picture is taken (`test-artifacts/view-<name>-<theme>.png`); `./dev screenshots` runs
  this module with `JUPYTER_TOOLHOST_SCREENSHOTS=docs/images`, which writes the pictures the
  documentation shows.

And what a narrow screen used to cut: the Deny reason's placeholder ("… (Enter denies)") fits
its box at 1024 and 1280 px; an option labelled "Line chart (Recommended)" is shown whole; in
`%agent request` the tools' descriptions are left-aligned and at most two lines (the full
text in the cell's tooltip), an image in a tool result is an image (no base64 on the page),
and the tools' count agrees with the deferral line above it. The model is scripted (the
loopback Messages API).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from lab_browser import (
    IDLE,
    THEMES,
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

from jupyter_toolhost.jupyter.widgets.approval import FEEDBACK_PLACEHOLDER
from jupyter_toolhost.jupyter.widgets.trust_prompt import TRUST_LABEL
from jupyter_toolhost.testing import Turn, text, tool_use

require_browser()  # skips the module (fails under CI=true) without chromium or playwright

pytestmark = pytest.mark.timeout(420)

WIDTH, HEIGHT = 1024, 768
PLOT = """import matplotlib.pyplot as plt
import pandas as pd
scores = pd.DataFrame({"klass": ["A", "B", "C"], "mean": [84.7, 77.0, 71.2]})
scores.plot.bar(x="klass", y="mean", title="Mean score per class", rot=0, figsize=(4, 2.6))
plt.show()
print("3 classes")"""
RECOMMENDED = "Line chart (Recommended)"
QUESTION = {
    "question": "Which chart should I keep?",
    "header": "Chart",
    "options": [
        {"label": RECOMMENDED, "description": "Scores over the term, one line per class"},
        {"label": "Bar chart", "description": "The mean per class, as drawn"},
    ],
}
REASON = "keep notes in the notebook"
ANSWER = (
    "Class **A** leads: its mean is `84.7`.\n\n"
    "| class | mean |\n| --- | --- |\n| A | 84.7 |\n| B | 77.0 |\n| C | 71.2 |\n\n"
    "- counted with `seq`\n- you chose a line chart; I left `note.txt` unwritten"
)
PLACEHOLDER_ROOM = """box => {
    const style = getComputedStyle(box);
    const context = document.createElement('canvas').getContext('2d');
    context.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    return {
        text: context.measureText(box.placeholder).width,
        room: box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight),
    };
}"""
DESCRIPTIONS = """table => [...table.querySelectorAll('tbody tr')].map(row => {
    const cell = row.querySelector('.toolhost-description') || row.lastElementChild;
    const text = cell.firstElementChild || cell;
    const style = getComputedStyle(text);
    const lineHeight = parseFloat(style.lineHeight) || 1.2 * parseFloat(style.fontSize);
    return {
        name: row.querySelector('code').textContent,
        align: getComputedStyle(cell).textAlign,
        width: cell.getBoundingClientRect().width,
        lines: Math.round(text.getBoundingClientRect().height / lineHeight),
        shown: text.textContent,
        full: cell.getAttribute('title') || '',
    };
})"""


CELLS = (
    "%load_ext jupyter_toolhost",
    "%%agent\nChart the scores per class; ask me which chart.",
    "%agent history --timeline",
    "%agent request",
    '%agent check Bash "rm -rf build && ls"',
    "%agent cost",
)
"""The sources of the notebook's code cells."""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:

    base = tmp_path_factory.mktemp("views")
    with running_lab(
        base,
        log_name="jupyter-lab-views.log",
        unset=("JUPYTER_TOOLHOST_APPROVAL_TIMEOUT",),
        env={"HOME": str(base)},  # (the notebooks' folder in the home folder: shown as ~/root)
    ) as started:
        settings = started.root / ".toolhost" / "settings.json"
        settings.parent.mkdir()
        settings.write_text(json.dumps({"permissions": {"allow": ["Bash(seq:*)"]}}))
        write_notebook(started.root / "views.ipynb", *CELLS)
        global MACHINE_PATH
        MACHINE_PATH = str(base)
        yield started


MACHINE_PATH = ""
"""The lab's temporary folder (set by the `lab` fixture): no view may show it, since a person's
own absolute paths have no place in a notebook they share (and the pictures go in docs/)."""


def _in_both_themes(
    page: Any,
    views: dict[str, Any],
    offenders: dict[str, list[str]],
    *,
    unpictured: dict[str, Any] | None = None,
) -> None:
    """Check and picture each of `views` (name → locator) in the light and the dark theme,
    adding what reads below 4.5:1 to `offenders` (`unpictured`: checked, not pictured);
    the page is left in the light theme."""
    for theme in THEMES:
        set_theme(page, theme)
        short = "dark" if "Dark" in theme else "light"
        for name, locator in {**views, **(unpictured or {})}.items():
            low = low_contrast(locator)
            if low:
                offenders[f"{name} ({short})"] = low
            if MACHINE_PATH and MACHINE_PATH in locator.inner_text():
                offenders[f"{name} ({short})"] = [f"shows the machine's path {MACHINE_PATH}"]
            if name in views:
                shoot(locator, f"view-{name}-{short}.png", doc=True)
    set_theme(page, THEMES[0])


def _prompt(cell: Any) -> Any:
    """The output that holds the cell's waiting prompt (a widget)."""
    return cell.locator(".jp-OutputArea-child", has=cell.page.locator(".widget-vbox")).last


def _placeholder_fits(page: Any, box: Any) -> None:
    for width in (1024, 1280):
        page.set_viewport_size({"width": width, "height": HEIGHT})
        page.wait_for_timeout(200)
        measured = box.evaluate(PLACEHOLDER_ROOM)
        assert measured["text"] <= measured["room"], (width, measured)
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})


def test_every_view_reads_in_both_themes_at_1024(browser: Any, lab: Lab) -> None:
    lab.server.add_turns(
        Turn(
            [
                text("Counting first."),
                tool_use("Bash", {"command": "seq 1 20000", "description": "count"}),
                tool_use("Read", {"file_path": "missing.csv"}),
            ]
        ),
        Turn([tool_use("PythonExec", {"code": PLOT})]),
        Turn([tool_use("AskUserQuestion", {"questions": [QUESTION]})]),
        Turn([tool_use("Write", {"file_path": "note.txt", "content": "line chart\n"})]),
        Turn([text(ANSWER)]),
    )
    offenders: dict[str, list[str]] = {}
    with new_page(browser, lab, "views", width=WIDTH, height=HEIGHT) as page:
        open_notebook(page, lab, "views.ipynb")
        page.evaluate("() => window.jupyterapp.commands.execute('filebrowser:activate')")
        page.locator(".jp-FileBrowser").wait_for()
        set_theme(page, THEMES[0])
        run_cell(page, 0)
        run_cell(page, 1)
        cell = code_cell(page, 1)

        # The folder's own allow rule waits for trust: the question comes first.
        trust = cell.get_by_role("button", name=TRUST_LABEL, exact=True)
        trust.wait_for(timeout=60_000)
        _in_both_themes(page, {"trust-prompt": _prompt(cell)}, offenders)
        trust.click()

        # PythonExec asks: the approval prompt, its reason box wide enough for its hint.
        allow = cell.get_by_role("button", name="Allow once", exact=True)
        allow.wait_for(timeout=60_000)
        reason = cell.get_by_placeholder(FEEDBACK_PLACEHOLDER)
        assert "Enter denies" in FEEDBACK_PLACEHOLDER
        _placeholder_fits(page, reason)
        # The live panel above the prompt: the waiting call's card, its running mark (▶).
        live = cell.locator(".jp-Toolhost-root[data-kind='live']:not(.jp-mod-empty)").last
        assert live.locator(".jp-Toolhost-statusMark", has_text="▶").count() >= 1
        _in_both_themes(
            page,
            {"approval-prompt": _prompt(cell)},
            offenders,
            unpictured={"live panel": live},
        )
        allow.click()

        # AskUserQuestion: the recommended option is shown whole.
        option = cell.get_by_role("button", name=RECOMMENDED, exact=True)
        option.wait_for(timeout=60_000)
        fits = option.evaluate(
            "b => ({text: b.innerText, scroll: b.scrollWidth, box: b.clientWidth})"
        )
        assert fits["text"].strip() == RECOMMENDED and fits["scroll"] <= fits["box"], fits
        _in_both_themes(page, {"question-prompt": _prompt(cell)}, offenders)
        option.click()
        cell.get_by_role("button", name="Submit", exact=True).click()

        # Write asks: a typed reason, then Deny.
        deny = cell.get_by_role("button", name="Deny", exact=True)
        deny.wait_for(timeout=60_000)
        reason = cell.get_by_placeholder(FEEDBACK_PLACEHOLDER)
        reason.click()
        reason.press_sequentially(REASON, delay=20)
        deny.click()

        footer = cell.locator(".jp-Toolhost-footer")
        footer.wait_for(timeout=60_000)
        page.wait_for_function(IDLE)
        assert f"— {REASON}" in cell.inner_text()
        bash = cell.locator(".jp-Toolhost-batch .jp-Toolhost-card", has_text="seq 1 20000")
        bash.locator(".jp-Toolhost-cardHeader").click()
        bash.locator(".jp-Toolhost-previewSummary").click()
        cell.locator(".jp-Toolhost-batch .jp-Toolhost-card[data-status='denied']").wait_for()
        cell.locator(".jp-Toolhost-batch .jp-Toolhost-card[data-status='error']").wait_for()
        cell.locator(".jp-OutputArea-output img").first.wait_for()  # the plot
        answer = cell.locator(".jp-RenderedHTML", has_text="leads").last
        batches = cell.locator(".jp-OutputArea-child", has=page.locator(".jp-Toolhost-batch"))

        # Each card shows the tokens its result adds, measured once the next request ran.
        assert bash.locator(".jp-Toolhost-tokens").inner_text().endswith("tokens")
        assert not bash.locator(".jp-Toolhost-tokens").inner_text().startswith("≈")

        for index in (2, 3, 4, 5):
            run_cell(page, index)
        page.wait_for_function(IDLE)
        timeline = code_cell(page, 2).locator(".jp-Cell-outputArea")
        timeline.locator("svg.toolhost-timeline").wait_for()
        request = code_cell(page, 3).locator(".jp-Cell-outputArea")
        request.get_by_text("input tokens in all").first.wait_for()
        check = code_cell(page, 4).locator(".jp-Cell-outputArea")
        check.get_by_text("rm -rf build").first.wait_for()
        cost = code_cell(page, 5).locator(".jp-Cell-outputArea")
        cost.get_by_text("the calls that cost most").first.wait_for()
        request_faults = _request_faults(page, request)

        _in_both_themes(
            page,
            {
                "cards": batches.first,
                "answer": answer,
                "footer": footer,
                "timeline": timeline,
                "request": request,
                "check": check,
                "cost": cost,
            },
            offenders,
            unpictured={"agent cell": cell.locator(".jp-Cell-outputArea")},
        )
        assert offenders == {}, offenders  # every view, both themes: what reads below 4.5:1
        assert request_faults == [], request_faults
        assert lab.errors == [], lab.errors


def _request_faults(page: Any, request: Any) -> list[str]:
    """What `%agent request` showed cut, raw or contradictory at 1024 px (none: [])."""
    faults: list[str] = []
    tools_part = request.locator("details", has=page.locator("summary", has_text="Tools")).first
    tools_part.locator("summary").click()
    summary = tools_part.locator("summary").inner_text()
    rows = tools_part.locator("table").evaluate(DESCRIPTIONS)
    if not rows:
        faults.append("no tool rows")
    for row in rows:
        if row["align"] not in ("left", "start") or row["lines"] > 2 or row["width"] < 250:
            faults.append(f"description of {row['name']}: {row}")
        whole = " ".join(row["full"].split())
        if not whole.startswith(row["shown"].removesuffix("…")):
            faults.append(f"the full description of {row['name']} is not at hand: {row}")
    deferral = re.search(r"(\d+) deferred tools? not loaded", request.inner_text())
    if re.search(r"Tools — \d+ sent", summary) is None:
        faults.append(f"the tools' count: {summary}")
    if deferral and f"{deferral.group(1)} deferred" not in summary:
        faults.append(f"{summary!r} disagrees with {deferral.group(0)!r}")
    messages = request.locator("details", has=page.locator("summary", has_text="Messages")).first
    messages.locator("summary").click()
    images = messages.locator("img")
    if images.count() == 0 or not images.first.evaluate("i => i.complete && i.naturalWidth > 0"):
        faults.append("the plot in PythonExec's tool_result is not shown as an image")
    if "iVBORw0KGgo" in request.inner_text():
        faults.append("a PNG shows as base64 text")
    return faults
