"""`%agent history --timeline` seen in Debian's Chromium: drawn as inline SVG in a JupyterLab
notebook (one bar per call, the approval wait hatched, the sibling abort marked, each
visibly sized), and the same in the notebook's nbconvert HTML export. Screenshots go to
`test-artifacts/`."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from lab_browser import (
    ARTIFACTS,
    IDLE,
    Lab,
    new_page,
    open_notebook,
    require_browser,
    run_all,
    running_lab,
    shoot,
)
from test_timeline_kernel import TURNS

require_browser()  # skips the module (fails under CI=true) without chromium or playwright

pytestmark = pytest.mark.timeout(180)

BARS = 6
"""Three concurrent calls, the approved one, the failing one and its cancelled sibling."""
SVG_FACTS = """svg => ({
    bars: [...svg.querySelectorAll('rect.toolhost-bar')].map(r => {
        const box = r.getBoundingClientRect();
        return [box.width, box.height];
    }),
    waits: svg.querySelectorAll('rect.toolhost-wait').length,
    marks: [...svg.querySelectorAll('text.toolhost-mark')].map(m => m.dataset.status),
    size: [svg.getBoundingClientRect().width, svg.getBoundingClientRect().height],
    titled: [...svg.querySelectorAll('rect.toolhost-bar')]
        .every(r => r.querySelector('title') && r.querySelector('title').textContent.length > 0),
})"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    cells = [
        "%load_ext jupyter_toolhost",
        "%%agent\nLook around, make a file, read a missing one.",
        "%agent history --timeline",
    ]
    with running_lab(
        tmp_path_factory.mktemp("timeline"),
        log_name="jupyter-lab-timeline.log",
        unset=("JUPYTER_TOOLHOST_APPROVAL_TIMEOUT",),
        files={"a.txt": "alpha\n"},
        notebooks={"timeline.ipynb": cells},
    ) as started:
        yield started


def _check(facts: dict[str, Any]) -> None:
    assert len(facts["bars"]) == BARS, facts
    assert all(width > 0 and height > 0 for width, height in facts["bars"]), facts
    assert facts["size"][0] > 300 and facts["size"][1] > 100, facts
    assert facts["waits"] == 1, facts
    assert facts["marks"] == ["error", "sibling"], facts
    assert facts["titled"], facts


def test_the_timeline_renders_in_the_notebook_and_in_its_html_export(
    browser: Any, lab: Lab
) -> None:
    lab.server.add_turns(*TURNS)
    with new_page(browser, lab, "timeline", width=1280, height=1000) as page:
        open_notebook(page, lab, "timeline.ipynb")
        run_all(page)
        agent = page.locator(".jp-Notebook .jp-CodeCell").nth(1)
        allow = agent.get_by_role("button", name="Allow once", exact=True)
        allow.wait_for(timeout=60_000)
        page.wait_for_timeout(800)  # a person reads the prompt before clicking
        allow.click()
        agent.get_by_text("Done.").wait_for(timeout=60_000)
        timeline = page.locator(".jp-Notebook .jp-CodeCell").nth(2)
        svg = timeline.locator(".jp-OutputArea-output svg.toolhost-timeline")
        svg.wait_for(timeout=60_000)
        page.wait_for_function(IDLE)
        _check(svg.evaluate(SVG_FACTS))
        shoot(timeline.locator(".jp-Cell-outputArea"), "toolhost-timeline-lab.png")
        assert lab.errors == [], lab.errors
        page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
        saved = lab.root / "timeline.ipynb"
        page.wait_for_function(
            "() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=20_000
        )
    assert "toolhost-timeline" in saved.read_text()
    exported = subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "html", str(saved)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert exported.returncode == 0, exported.stderr
    page_path = lab.root / "timeline.html"
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    try:
        opened = context.new_page()
        opened.goto(page_path.as_uri())
        svg = opened.locator(".jp-OutputArea-output svg.toolhost-timeline")
        assert svg.count() == 1
        _check(svg.evaluate(SVG_FACTS))
        ARTIFACTS.mkdir(exist_ok=True)
        svg.screenshot(path=str(ARTIFACTS / "toolhost-timeline-export.png"))
    finally:
        context.close()
