"""Numbers read the same in every view of a run, in a real kernel: the footer's text, its HTML
and the payload the lab extension shows hold the same strings in the same order, and no view
of the cell, `%agent cost`, `%agent status` or `%agent history` writes a number of four
digits or more without its thousands separator ("27498" beside "27,498")."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from kernel_helpers import CellRun, Kernel

from jupyter_toolhost.core.numbers import format_number
from jupyter_toolhost.jupyter.views.render import MIME_TYPE
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

pytestmark = pytest.mark.timeout(120)

BARE = re.compile(r"(?<![\w.,/$#-])\d{4,}(?![\w,])")
"""A run of four or more digits with no thousands separator, not part of a word, a path, an
id, a decimal or an already separated number."""


def shown_texts(run: CellRun) -> list[str]:
    """What a person reads: streams, and each display's plain text and HTML (tags removed)."""
    texts = [run.stdout]
    for message in run.messages:
        if message["msg_type"] in ("display_data", "execute_result", "update_display_data"):
            data = message["content"]["data"]
            texts.append(data.get("text/plain", ""))
            texts.append(html.unescape(re.sub(r"<[^>]+>", " ", data.get("text/html", ""))))
    return texts


def bare_numbers(run: CellRun) -> list[str]:
    found = []
    for shown in shown_texts(run):
        # Style values and SVG coordinates are not read as numbers by anyone.
        found += [m.group(0) for m in BARE.finditer(shown)]
    return found


def payload(run: CellRun, kind: str) -> dict[str, Any]:
    [found] = [
        m["content"]["data"]
        for m in run.messages
        if m["msg_type"] == "display_data"
        and m["content"]["data"].get(MIME_TYPE, {}).get("kind") == kind
    ]
    return found


def test_every_view_of_a_run_writes_its_numbers_alike(
    kernel: Kernel, server: MessagesServer
) -> None:
    kernel.run("open('big.txt', 'w').write('word ' * 30000)")
    server.add_turns(
        Turn(
            [tool_use("Read", {"file_path": "big.txt"})],
            output_tokens=1234,
            cache_read_input_tokens=23456,
            cache_creation_input_tokens=7890,
        ),
        Turn([text("It holds one word, many times.")], output_tokens=2221),
    )
    run = kernel.run("%%agent --new\nWhat is in big.txt?", timeout=60)
    assert run.status == "ok", run.text()

    footer = payload(run, "footer")
    data = footer[MIME_TYPE]
    parts = data["parts"]
    plain = footer["text/plain"]
    assert plain == f"── {' · '.join(parts)} ──"
    assert html.unescape(footer["text/html"]).count(" · ".join(parts)) == 1
    usage = data["usage"]
    tokens_in, tokens_out = usage["input_tokens"], usage["output_tokens"]
    assert tokens_out == 1234 + 2221
    written = f"{format_number(tokens_in)} in / {format_number(tokens_out)} out tokens"
    assert written in plain, plain
    assert "3,455 out" in plain and "23,456 read from cache" in plain
    assert bare_numbers(run) == [], bare_numbers(run)

    for line in ("%agent cost", "%agent status", "%agent history", "%agent tools"):
        shown = kernel.run(line)
        assert shown.status == "ok", shown.text()
        assert bare_numbers(shown) == [], (line, bare_numbers(shown))
    cost = kernel.run("%agent cost").displays()[0]
    assert f"output_tokens{' ' * 2}" in cost or "output_tokens " in cost
    assert format_number(tokens_out) in cost and "$" in cost
