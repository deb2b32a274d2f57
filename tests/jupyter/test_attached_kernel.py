"""Kernel variables as context in a real kernel: ``@name`` and ``--with`` attach a compact
description of each variable, resolved when the cell runs, as a block of its own; a name
that is not there stops the cell before anything is sent."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kernel_helpers import Kernel, agent_kernel

from jupyter_toolhost.testing import MessagesServer, Turn, text

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def kernel(server: MessagesServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    root = tmp_path_factory.mktemp("attached")
    running = agent_kernel(root, server.base_url)
    try:
        yield running
    finally:
        running.close()


def user_blocks(server: MessagesServer) -> list[str]:
    message = server.requests[-1].body["messages"][-1]
    return [b["text"] for b in message["content"] if b.get("type") == "text"]


def test_mentions_and_with_attach_what_the_kernel_holds_now(
    kernel: Kernel, server: MessagesServer
) -> None:
    made = kernel.run(
        "import pandas as pd, numpy as np\n"
        "sales = pd.DataFrame({'city': ['Lisbon', 'Porto'], 'units': [12, 30]})\n"
        "weights = np.ones((2, 3))"
    )
    assert made.status == "ok", made.text()
    server.add_turns(Turn([text("Two cities.")]))
    run = kernel.run("%%agent --new --with weights\nSummarise @sales, not user@example.org")
    assert run.status == "ok", run.text()
    blocks = user_blocks(server)
    assert blocks[0] == "Summarise @sales, not user@example.org"
    [attached] = [b for b in blocks if b.startswith("<kernel-variables>")]
    assert "sales: pandas." in attached and "Lisbon" in attached and "units" in attached
    assert "weights: numpy.ndarray" in attached and "shape: 2×3" in attached
    assert "user" not in attached.split("\n", 2)[2].split(":")[0]  # no e-mail as a name

    kernel.run("sales = sales.assign(units=[99, 1])")  # resolved when the cell runs
    server.add_turns(Turn([text("Changed.")]))
    assert kernel.run("%%agent\nAnd now @sales?").status == "ok"
    [again] = [b for b in user_blocks(server) if b.startswith("<kernel-variables>")]
    assert "99" in again
    assert server.errors == []


def test_a_missing_name_stops_before_sending(kernel: Kernel, server: MessagesServer) -> None:
    kernel.run("sales = 1")
    before = len(server.requests)
    run = kernel.run("%%agent\nPlot @saels by city")
    assert run.status == "error"
    assert "`saels` is not a variable in the kernel (did you mean `sales`?)" in run.text()
    assert "Traceback" not in run.text()
    assert len(server.requests) == before


def test_the_escape_keeps_an_at_sign_as_text(kernel: Kernel, server: MessagesServer) -> None:
    server.add_turns(Turn([text("Decorators.")]))
    run = kernel.run("%%agent\nWhat does \\@nothing_here or `@property` do?")
    assert run.status == "ok", run.text()
    blocks = user_blocks(server)
    assert blocks[0] == "What does @nothing_here or `@property` do?"
    assert not any(b.startswith("<kernel-variables>") for b in blocks)
