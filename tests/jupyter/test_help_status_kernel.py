"""`%agent help` and `%agent status` in a real kernel: the help is short and grouped with
examples, `%agent help NAME` gives one subcommand in full, and the status says whether an
API key is set and where it comes from, with at most its last four characters."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_helpers import CellRun, Kernel, agent_kernel

from jupyter_toolhost.testing import MessagesServer

pytestmark = pytest.mark.timeout(120)

KEY = "sk-ant-api03-" + "q" * 40 + "WXYZ"
TOKEN = "bearer-" + "t" * 30 + "T0KN"


@pytest.fixture
def keyed(server: MessagesServer, tmp_path: Path) -> Iterator[Kernel]:
    running = agent_kernel(tmp_path, server.base_url, env={"ANTHROPIC_API_KEY": KEY})
    try:
        yield running
    finally:
        running.close()


def status_rows(run: CellRun) -> dict[str, str]:
    [table] = run.displays()
    rows = {}
    for line in table.splitlines()[2:]:
        name, _, value = line.partition("  ")
        rows[name.strip()] = value.strip()
    return rows


def everything(kernel: Kernel) -> str:
    return "\n".join(str(m["content"]) for m in kernel.published) + kernel.log()


def test_help_is_short_and_grouped_and_names_open_in_full(keyed: Kernel) -> None:
    short = keyed.run("%agent help")
    assert short.status == "ok", short.text()
    [text] = short.displays()
    lines = text.splitlines()
    assert len(lines) <= 50
    for group in ("Conversation", "Permissions", "Looking inside", "Setup", "Examples"):
        assert group in lines, group
    assert "%agent help NAME" in text
    full = keyed.run("%agent help rules")
    assert full.status == "ok", full.text()
    assert full.displays()[0].startswith("%agent rules\n\n%agent rules lists every rule")
    wrong = keyed.run("%agent help nonsense")
    assert wrong.status == "error" and "No help for 'nonsense'" in wrong.text()


def test_status_says_where_the_key_comes_from_never_the_key(keyed: Kernel) -> None:
    rows = status_rows(keyed.run("%agent status"))
    assert rows["API key"] == "set (…WXYZ), from the environment variable ANTHROPIC_API_KEY"
    assert "auth token" not in rows

    keyed.run(
        "import os\n"
        "os.environ.pop('ANTHROPIC_API_KEY')\n"
        f"os.environ['KERNEL_ANTHROPIC_API_KEY'] = {KEY!r}\n"
        f"os.environ['ANTHROPIC_AUTH_TOKEN'] = {TOKEN!r}"
    )
    rows = status_rows(keyed.run("%agent status"))
    assert rows["API key"] == (
        "set (…WXYZ), from the environment variable KERNEL_ANTHROPIC_API_KEY "
        "(a gateway passes it on)"
    )
    assert rows["auth token"] == (
        "set (…T0KN), from the environment variable ANTHROPIC_AUTH_TOKEN (a bearer token)"
    )

    keyed.run("os.environ.pop('KERNEL_ANTHROPIC_API_KEY'); os.environ.pop('ANTHROPIC_AUTH_TOKEN')")
    rows = status_rows(keyed.run("%agent status"))
    assert rows["API key"] == "none: %agent key asks for one"

    keyed.run("os.environ['ANTHROPIC_API_KEY'] = 'short-key'")
    rows = status_rows(keyed.run("%agent status"))
    # A short key shows no fingerprint: its last four would be much of it.
    assert rows["API key"] == "set, from the environment variable ANTHROPIC_API_KEY"
    published = everything(keyed)
    assert KEY not in published.replace(repr(KEY), "")  # only in the cell that set it
    assert TOKEN not in published.replace(repr(TOKEN), "")
