"""What a person sees of two things a cell reaches beyond its prompt, in a real JupyterLab in
Debian's Chromium at 1024x768: a kernel variable named with `@` (its description, a block of
its own in `%agent request`), and the sandbox's network allow-list (a listed host answers,
another is refused with the host and the setting that would allow it). The pictures are the
docs' (`./dev screenshots`). Needs `chromium`, `playwright` and bubblewrap; under CI=true a
missing one is a failure, not a skip.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from lab_browser import (
    IDLE,
    Lab,
    code_cell,
    new_page,
    open_notebook,
    require_browser,
    run_all,
    running_lab,
    shoot,
    write_notebook,
)

from jupyter_toolhost.testing import Turn, text, tool_use

require_browser()  # skips the module (fails under CI=true) without chromium or playwright

pytestmark = pytest.mark.timeout(180)

SALES = "city,units\nLisbon,12\nPorto,30\nFaro,7\n"


class _Files(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = SALES.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/csv")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def files() -> Iterator[int]:
    """A data server on the loopback, outside the sandbox: its port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Files)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, files: int) -> Iterator[Lab]:

    if shutil.which("bwrap") is None:
        message = "bubblewrap (bwrap) is not installed: the sandbox cannot run"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    base = tmp_path_factory.mktemp("context")
    with running_lab(
        base, log_name="jupyter-lab-context.log", env={"JUPYTER_TOOLHOST_BASH_SANDBOX": "1"}
    ) as started:
        user = base / "home" / ".toolhost" / "settings.json"
        user.parent.mkdir(parents=True)
        user.write_text(
            json.dumps(
                {
                    "permissions": {"allow": ["Bash(curl:*)"]},
                    "sandbox": {"network": {"allowedDomains": [f"127.0.0.1:{files}"]}},
                }
            )
        )
        write_notebook(
            started.root / "context.ipynb",
            "%load_ext jupyter_toolhost",
            "import pandas as pd\n"
            "sales = pd.DataFrame({'city': ['Lisbon', 'Porto', 'Faro'], 'units': [12, 30, 7]})",
            "%%agent\nWhich city sold most in @sales?",
            "%agent request",
            "%%agent\nFetch this month's sales, then the public data.",
        )
        yield started


def test_a_mentioned_variable_and_the_network_allow_list(
    lab: Lab, browser: Any, files: int
) -> None:
    refused_host = "data.example.com"
    lab.server.add_turns(
        Turn([text("Porto sold most: 30 units.")]),
        Turn(
            [
                tool_use(
                    "Bash",
                    {
                        "command": f"curl -sS http://127.0.0.1:{files}/sales.csv",
                        "description": "this month's sales",
                    },
                )
            ]
        ),
        Turn(
            [
                tool_use(
                    "Bash",
                    {
                        "command": f"curl -sS https://{refused_host}/2026.csv",
                        "description": "the public data",
                    },
                )
            ]
        ),
        Turn([text(f"The sales file came through; {refused_host} is not on the allow-list.")]),
    )
    with new_page(browser, lab, "context", width=1024, height=768) as page:
        page.set_default_timeout(60_000)
        open_notebook(page, lab, "context.ipynb")
        run_all(page)
        network = code_cell(page, 4)
        network.get_by_text("is not on the allow-list").wait_for()
        page.wait_for_function(IDLE)

        # @sales: its description went with the prompt, as a block of its own.
        request = code_cell(page, 3).locator(".jp-Cell-outputArea")
        request.get_by_text("input tokens in all").first.wait_for()
        attached = page.locator("pre", has_text="<kernel-variables>")  # (`has` is relative)
        block = request.locator("pre", has_text="<kernel-variables>").first
        for part in request.locator("details", has=attached).all():  # open what holds it
            if part.get_attribute("open") is None:
                part.locator(":scope > summary").click()
        block.wait_for()
        shown = block.inner_text()
        assert "sales: pandas" in shown and "Lisbon" in shown and "units" in shown, shown
        block.scroll_into_view_if_needed()
        shoot(block, "variables-request.png", doc=True)

        # The listed host answered; the other was refused, naming the setting.
        cards = network.locator(".jp-Toolhost-batch .jp-Toolhost-card")
        fetched = cards.filter(has_text=f"127.0.0.1:{files}").first
        refused = cards.filter(has_text=refused_host).first
        for card in (fetched, refused):
            card.locator(".jp-Toolhost-cardHeader").click()
            summary = card.locator(".jp-Toolhost-previewSummary")
            if summary.count():  # a long result's preview opens on its own click
                summary.first.click()
        fetched.get_by_text("Porto,30").wait_for()
        reason = f"{refused_host}:443: it is not in sandbox.network.allowedDomains"
        refused.get_by_text(reason, exact=False).first.wait_for()
        network.scroll_into_view_if_needed()
        shoot(network.locator(".jp-Cell-outputArea"), "sandbox-network.png", doc=True)
    assert lab.server.errors == [], lab.server.errors
    assert not [e for e in lab.errors if "toolhost" in e.lower()], lab.errors
