"""In a real kernel: a scheduled prompt firing while a `%%agent` cell runs is queued behind
it (the cell says so) and runs after it; `--cassette-mode` records and replays, and `--mode`
is the permission mode. Driven over jupyter_client against the loopback Messages API."""

from __future__ import annotations

import time
from typing import Any

import pytest
from kernel_helpers import Kernel

from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

pytestmark = pytest.mark.timeout(90)


def prompts(messages: list[dict[str, Any]]) -> list[str]:
    """The prompts (user text blocks, not the deferred-tools note) of a conversation."""
    found = []
    for message in messages:
        content = message["content"]
        if message["role"] == "user" and isinstance(content, list):
            found += [b["text"] for b in content if b.get("type") == "text"]
    return [t for t in found if "deferred tools are available" not in t]


def test_cassette_mode_records_then_replays_in_a_cell(kernel: Kernel, server: MessagesServer):
    server.add_turns(Turn([text("Recorded hello.")]))
    recorded = kernel.run(
        "%%agent --new --cassette hello.json --cassette-mode record --mode dontAsk\nSay hello"
    )
    assert recorded.status == "ok", recorded.text()
    assert "Recorded hello." in recorded.answer
    status = kernel.run("%agent status").text()
    assert "permission mode" in status and "dontAsk" in status
    assert "cassette mode" in status and "record" in status
    count = len(server.requests)
    replayed = kernel.run("%%agent --new --cassette hello.json --cassette-mode replay\nSay hello")
    assert replayed.status == "ok", replayed.text()
    assert "Recorded hello." in replayed.answer
    assert len(server.requests) == count  # served from the file, not the server
    assert "replay" in kernel.run("%agent status").text()


def test_mode_mix_ups_in_a_cell_say_which_option_to_use(kernel: Kernel):
    swapped = kernel.run("%%agent --new --mode replay\nhello")
    assert swapped.status == "error"
    assert "'replay' is a cassette mode: use --cassette-mode replay" in swapped.text()
    lone = kernel.run("%%agent --new --cassette-mode replay\nhello")
    assert lone.status == "error" and "--cassette-mode needs a cassette" in lone.text()
    help_text = kernel.run("%agent help").text()
    assert "--cassette-mode auto|record|replay" in help_text
    assert "Prompts while one runs" in kernel.run("%agent help stop").text()


def test_a_scheduled_prompt_firing_during_a_cell_is_queued_behind_it(
    kernel: Kernel, server: MessagesServer
):
    # Last in the module: the pongs the schedule did not use stay in the server's script.
    server.add_turns(
        Turn([tool_use("CronCreate", {"cron": "@every 1s", "prompt": "PING"})]),
        Turn([tool_use("Bash", {"command": "sleep 2.5"})]),
        Turn([text("Cell done.")]),
        *(Turn([text(f"pong {n}")]) for n in range(1, 8)),
    )
    before = len(server.requests)
    run = kernel.run("%%agent --new --mode bypassPermissions\nPing me while you sleep")
    assert run.status == "ok", run.text()
    assert "Queued behind the running prompt: 'PING' starts when it ends." in run.text()
    assert "Cell done." in run.answer
    deadline = time.monotonic() + 15
    while (
        "pong 1"
        not in kernel.run(
            "from jupyter_toolhost.jupyter.cell import current_host\n"
            "print([o['text'] for o in current_host().scheduled_area.outputs])"
        ).stdout
    ):
        assert time.monotonic() < deadline, "the queued prompt never ran"
        time.sleep(0.3)
    kernel.run("%agent reset")
    # While the cell ran, no scheduled request reached the model: PING came after its answer.
    during = server.requests[before : before + 3]
    assert all(prompts(r.body["messages"]) == ["Ping me while you sleep"] for r in during)
    first_ping = server.requests[before + 3].body["messages"]
    assert first_ping[-2]["content"][0]["text"] == "Cell done."
    assert first_ping[-1]["content"][0]["text"] == "PING"
    assert not server.errors, server.errors
