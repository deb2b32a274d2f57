"""A key is set and nothing answers at the API's address: the cell says so once, with what
to check, and the kernel and the conversation stay usable."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from kernel_helpers import agent_kernel

pytestmark = pytest.mark.timeout(120)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_unreachable_api_is_one_clear_error(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    kernel = agent_kernel(tmp_path, url)
    try:
        run = kernel.run("%%agent\nhello", timeout=60)
        shown = run.text() + "\n".join(run.displays("text/html"))
        assert run.status == "error", shown
        said = f"Could not reach the Anthropic API at {url} "
        assert run.text().count(said) == 1, run.text()
        assert run.error is not None and said in run.error["traceback"][0]
        # What to check, in our words (the HTTP library's own wording of the refusal
        # changes by release and is not ours to assert).
        assert "Check ANTHROPIC_BASE_URL, the network and any proxy." in run.text()
        assert "stream broke" not in shown
        assert kernel.run("print('next cell')").stdout == "next cell\n"
    finally:
        kernel.close()
