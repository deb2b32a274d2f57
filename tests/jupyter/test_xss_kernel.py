"""Public XSS payloads (`brs-kb`, a sample of every context) through a real `%%agent` cell in
every permission mode, in a real kernel: as the answer, as Read results, as a Write's input
(in the approval prompt where the mode asks), as a plan to approve (plan mode), then in
`%agent request` and the timeline. Every ``text/html`` and SVG the kernel sent, and every
HTML widget's value, must hold nothing that runs, loads or covers (`test_safe_html.dangers`),
and no ``text/markdown`` or JavaScript may leave the kernel. The browser tests
(`test_xss_browser`) show the same outputs to Chromium."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kernel_helpers import Kernel, agent_kernel, is_answer
from test_safe_html import dangers
from xss_payloads import contexts, sample

from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

pytestmark = pytest.mark.timeout(240)

MODES = ("default", "acceptEdits", "auto", "bypassPermissions", "plan", "dontAsk")
PAYLOADS = [p.text for p in sample(200)]
HALF = len(PAYLOADS) // 2
FIRST = "\n\n".join(PAYLOADS[:HALF])
SECOND = "\n\n".join(PAYLOADS[HALF:])
FORBIDDEN = ("text/markdown", "application/javascript", "text/javascript")


@pytest.fixture(scope="module")
def server() -> Iterator[MessagesServer]:
    with MessagesServer() as started:
        yield started


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("xss-kernel")


@pytest.fixture(scope="module")
def kernel(root: Path, server: MessagesServer) -> Iterator[Kernel]:
    (root / "payloads.txt").write_text("\n".join(PAYLOADS))
    started = agent_kernel(root, server.base_url)
    try:
        yield started
    finally:
        started.close()


def _turns(mode: str) -> list[Turn]:
    calls = [
        tool_use("Read", {"file_path": "payloads.txt"}),
        tool_use("Glob", {"pattern": "*.txt"}),
    ]
    if mode != "auto":  # in auto a Write would be judged by the classifier (a model request)
        calls.append(tool_use("Write", {"file_path": f"notes-{mode}.txt", "content": FIRST}))
    turns = [Turn([text(FIRST), *calls])]
    if mode == "plan":
        turns.append(Turn([tool_use("ExitPlanMode", {"plan": SECOND})]))
    return [*turns, Turn([text(SECOND)])]


def _markup(kernel: Kernel, run: Any) -> list[str]:
    """Every HTML and SVG the run sent, display by display, and its widgets' HTML."""
    found: list[str] = []
    for message in run.messages:
        if message["msg_type"] not in ("display_data", "update_display_data", "execute_result"):
            continue
        data = message["content"]["data"]
        assert not set(data) & set(FORBIDDEN), sorted(data)
        found += [data[m] for m in ("text/html", "image/svg+xml") if isinstance(data.get(m), str)]
    return found + kernel.html_values(run)


def _run_denying(kernel: Kernel, code: str) -> Any:
    """Run `code`, denying every prompt it shows, until it ends."""
    run = kernel.submit(code)
    denied: set[str] = set()

    def waiting() -> set[str]:
        return set(kernel.buttons("Deny", run)) - denied

    while run.finished_at is None:
        kernel.wait(run, timeout=90, until=lambda: run.finished_at is not None or bool(waiting()))
        for button in waiting():
            denied.add(button)
            kernel.click(button)
    kernel.wait(run, timeout=30)
    return run


def test_the_sample_holds_every_kind_of_payload() -> None:
    assert {p.context for p in sample(200)} == contexts()


@pytest.mark.parametrize("mode", MODES)
def test_no_payload_leaves_the_kernel_as_markup(
    kernel: Kernel, server: MessagesServer, root: Path, mode: str
) -> None:
    server.add_turns(*_turns(mode))
    run = _run_denying(kernel, f"%%agent --new --mode {mode}\nRead the payloads.")
    assert run.status == "ok", run.text()
    answers = [m["content"]["data"]["text/plain"] for m in run.messages if is_answer(m["content"])]
    assert answers == [FIRST, SECOND]
    markup = _markup(kernel, run)
    request = kernel.run("%agent request")
    timeline = kernel.run("%agent history --timeline")
    markup += _markup(kernel, request) + _markup(kernel, timeline)
    problems = [(i, found) for i, html in enumerate(markup) if (found := dangers(html))]
    assert problems == [], problems[:3]
    shown = "".join(markup)
    assert "onerror" in shown and "&lt;script" in shown  # the payloads are there, as text
    if mode == "plan":
        assert any("Approve this plan?" in html for html in kernel.html_values(run))
    assert not (root / ".toolhost" / "settings.local.json").exists()
