"""Token use per call in a real kernel: each card shows what its result adds to the
conversation, estimated when the batch is shown and updated in place once the next request
has measured it; an image says the size it was sent at; `%agent cost` ranks the calls."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_helpers import Kernel, agent_kernel

from jupyter_toolhost.jupyter.views.render import MIME_TYPE, TOKENS_CLASS
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

pytestmark = pytest.mark.timeout(120)

TOKENS = re.compile(rf'<span class="{TOKENS_CLASS}"[^>]*>· ([^<]*)</span>')


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from PIL import Image

    folder = tmp_path_factory.mktemp("tokens")
    (folder / "big.txt").write_text("".join(f"row {i}: {'v' * 60}\n" for i in range(300)))
    (folder / "small.txt").write_text("one short line\n")
    Image.new("RGB", (3000, 2000), (20, 120, 200)).save(folder / "plot.png")
    return folder


@pytest.fixture(scope="module")
def kernel(server: MessagesServer, root: Path) -> Iterator[Kernel]:
    running = agent_kernel(root, server.base_url)
    try:
        yield running
    finally:
        running.close()


def test_cards_show_measured_tokens_and_cost_ranks_the_calls(
    kernel: Kernel, server: MessagesServer, root: Path
) -> None:
    reads = [
        tool_use("Read", {"file_path": str(root / name)})
        for name in ("small.txt", "big.txt", "plot.png")
    ]
    server.add_turns(Turn(reads), Turn([text("Read all three.")]))
    run = kernel.run("%%agent --new\nRead the three files.")
    assert run.status == "ok", run.text()
    assert server.errors == []

    batches = [
        m["content"]
        for m in run.messages
        if m["msg_type"] in ("display_data", "update_display_data")
        and (m["content"]["data"].get(MIME_TYPE) or {}).get("kind") == "batch"
    ]
    first, last = batches[0], batches[-1]
    shown = TOKENS.findall(first["data"]["text/html"])
    assert len(shown) == 3 and all(s.startswith("≈") for s in shown), shown
    measured = TOKENS.findall(last["data"]["text/html"])
    assert len(measured) == 3 and not any(s.startswith("≈") for s in measured), measured
    calls = {c["summary"]: c for c in last["data"][MIME_TYPE]["calls"]}
    texts = {summary: call["tokens_text"] for summary, call in calls.items()}
    image = next(t for s, t in texts.items() if "plot.png" in s)
    assert re.search(r"image (\d+)×(\d+) px", image), image
    width, height = map(int, re.search(r"image (\d+)×(\d+) px", image).groups())  # type: ignore[union-attr]
    assert max(width, height) <= 1568  # sent at the size the API bills, not 3000×2000
    big = next(t for s, t in texts.items() if "big.txt" in s)
    small = next(t for s, t in texts.items() if "small.txt" in s)
    assert _number(big) > 10 * _number(small)
    assert "tokens" not in first["data"]["text/plain"]  # nbval compares it: no varying figure

    cost = kernel.run("%agent cost")
    assert cost.status == "ok", cost.text()
    plain = cost.text()
    assert "the calls that cost most" in plain
    ranked = plain.split("the calls that cost most", 1)[1].splitlines()[2:5]
    assert ["big.txt" in ranked[0], "plot.png" in ranked[1], "small.txt" in ranked[2]] == [
        True,
        True,
        True,
    ], ranked
    assert all("$" in line for line in ranked)


def _number(shown: str) -> int:
    return int(shown.split(" ", 1)[0].lstrip("≈").replace(",", ""))
