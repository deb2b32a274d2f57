"""Extended thinking in a real kernel driven over jupyter_client: `%%agent --think N` sends
the API's `thinking` object, each response's thinking shows as a collapsed "Thinking"
section above its tool cards (in the HTML fallback and in the lab renderer's payload), a
redacted block as a line that says so, the thinking tokens in the footer and in `%agent
cost`; bad budgets stop before anything is sent; a replayed cell shows the same compared
output every time, and what a saved notebook keeps of a streaming section is what nbval
sees on a fresh run."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from kernel_helpers import CellRun, Kernel, agent_kernel

from jupyter_toolhost.pytest_plugin import SANITIZE_PATTERNS
from jupyter_toolhost.testing import (
    MessagesServer,
    Turn,
    redacted_thinking,
    text,
    thinking,
    tool_use,
)

MIME = "application/vnd.jupyter.toolhost.v1+json"
FIRST_THOUGHT = "The user wants the notes. I should read notes.txt <first> & see."
SECOND_THOUGHT = "The file says hello, so I can answer."
REDACTED = "Thinking redacted by the API"

pytestmark = pytest.mark.timeout(120)


def script() -> list[Turn]:
    return [
        Turn([thinking(FIRST_THOUGHT), tool_use("Read", {"file_path": "notes.txt"})]),
        Turn([redacted_thinking(), thinking(SECOND_THOUGHT), text("The notes say hello.")]),
    ]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("thinking-kernel")
    (root / "notes.txt").write_text("hello\n")
    return root


@pytest.fixture(scope="module")
def kernel(server: MessagesServer, folder: Path) -> Any:
    running = agent_kernel(folder, server.base_url)
    try:
        yield running
    finally:
        running.close()


def displays(run: CellRun) -> list[dict[str, Any]]:
    return [m["content"] for m in run.messages if m["msg_type"] == "display_data"]


def kind(output: dict[str, Any]) -> str:
    data = output["data"]
    return data[MIME]["kind"] if MIME in data else ",".join(sorted(data))


def shown(run: CellRun) -> list[dict[str, Any]]:
    """The displays a reader sees at the end: non-empty (transient displays end empty)."""
    return [o for o in displays(run) if o["data"].get("text/plain") or o["data"].get("text/html")]


def compared(run: CellRun) -> list[tuple[str, str]]:
    """What nbval compares of a fresh run: streams (joined per name) and each display's
    first text/plain and text/html (updates ignored), durations masked as the plugin does."""
    result: list[tuple[str, str]] = []
    for message in run.messages:
        content = message["content"]
        if message["msg_type"] == "stream":
            if result and result[-1][0] == content["name"]:
                result[-1] = (content["name"], result[-1][1] + content["text"])
            else:
                result.append((content["name"], content["text"]))
        elif message["msg_type"] in ("display_data", "execute_result", "error"):
            data = content.get("data", {})
            for mime in ("text/plain", "text/html"):
                if mime in data:
                    result.append((mime, mask(data[mime])))
    return result


def mask(value: str) -> str:
    for pattern, replacement in SANITIZE_PATTERNS.items():
        value = re.sub(pattern, replacement, value)
    return value


def test_thinking_sections_redacted_line_footer_and_cost(
    kernel: Kernel, server: MessagesServer
) -> None:
    kernel.run("%agent allow Read")
    sent_before = len(server.requests)
    server.add_turns(*script())
    run = kernel.run("%%agent --think 2048\nWhat do my notes say?", timeout=60)
    assert run.status == "ok", run.text()
    assert server.errors == [], server.errors
    bodies = [r.body for r in server.requests[sent_before:] if r.path == "/v1/messages"]
    assert len(bodies) == 2
    for body in bodies:
        assert body["thinking"] == {
            "type": "enabled",
            "budget_tokens": 2048,
            "display": "summarized",
        }
        assert body["max_tokens"] > 2048
    assert "The notes say hello." in run.answer

    outputs = shown(run)
    kinds = [kind(o) for o in outputs]
    # Response 1 thinks, then calls Read: its section sits above the card. Response 2's
    # section (a redacted block and a thought) comes before its text's footer.
    assert kinds == ["thinking", "batch", "thinking", "text/html,text/plain", "footer"], kinds
    first, second = outputs[0]["data"], outputs[2]["data"]

    html = first["text/html"]
    assert html.startswith(
        '<div class="tex2jax_ignore mathjax_ignore"><details class="toolhost-thinking"'
    )
    assert not re.search(r"<details[^>]*\sopen", html), "the section must start collapsed"
    assert "<summary" in html and "Thinking · " in html
    assert "read notes.txt &lt;first&gt; &amp; see." in html  # escaped, whole
    assert first["text/plain"] == f"▸ Thinking · {len(FIRST_THOUGHT):,} characters"
    assert first[MIME]["blocks"] == [{"kind": "text", "text": FIRST_THOUGHT}]
    assert first[MIME]["live"] is False and first[MIME]["response"] == 1

    assert REDACTED in second["text/plain"] and REDACTED in second["text/html"]
    assert SECOND_THOUGHT in second["text/html"]
    assert [b["kind"] for b in second[MIME]["blocks"]] == ["redacted", "text"]
    assert second[MIME]["response"] == 2
    assert "signature" not in str(second[MIME]) and "data" not in second[MIME]["blocks"][0]

    # The thinking streamed live in a display of its own that ends empty.
    live = [
        m["content"]["data"][MIME]
        for m in run.messages
        if m["msg_type"] == "update_display_data"
        and m["content"]["data"].get(MIME, {}).get("kind") == "thinking"
    ]
    assert any(p["live"] and p["blocks"] for p in live), live
    assert live[-1]["blocks"] == []

    footer = outputs[4]["data"]  # after the answer's Markdown display
    thought = footer[MIME]["usage"]["thinking_tokens"]
    assert thought > 0
    assert f"(incl. {thought:,} thinking)" in footer["text/plain"]
    assert f"(incl. {thought:,} thinking)" in footer["text/html"]

    cost = kernel.run("%agent cost")
    assert cost.status == "ok", cost.text()
    table = cost.displays()[-1]
    assert re.search(rf"thinking_tokens \(in output_tokens\)\s+{thought}\b", table), table


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("-5", "below the API's minimum thinking budget of 1024"),
        ("500", "below the API's minimum thinking budget of 1024"),
        ("lots", "--think takes a number of tokens"),
        ("", "--think needs a value"),
    ],
)
def test_bad_budgets_are_refused_before_anything_is_sent(
    kernel: Kernel, server: MessagesServer, value: str, message: str
) -> None:
    sent_before = len(server.requests)
    run = kernel.run(f"%%agent --think {value}\nThink hard about nothing.")
    assert run.status == "error"
    assert message in run.text()
    assert len(server.requests) == sent_before, "a request went out"


def test_the_budget_lasts_for_the_conversation_until_off_or_new(
    kernel: Kernel, server: MessagesServer
) -> None:
    def ask(line: str, *turns: Turn) -> tuple[CellRun, dict[str, Any]]:
        sent_before = len(server.requests)
        server.add_turns(*turns)
        run = kernel.run(f"%%agent {line}\nAnd now?", timeout=60)
        assert run.status == "ok", run.text()
        [body] = [r.body for r in server.requests[sent_before:] if r.path == "/v1/messages"]
        return run, body

    status = kernel.run("%agent status").displays()[-1]
    assert re.search(r"thinking\s+budget 2,048 tokens", status), status
    run, body = ask("", Turn([thinking("Still thinking."), text("Kept on.")]))
    assert body["thinking"]["budget_tokens"] == 2048
    assert "thinking" in [kind(o) for o in shown(run)]
    run, body = ask("--think off", Turn([text("No thinking this time.")]))
    assert "thinking" not in body
    assert "thinking" not in [kind(o) for o in shown(run)]
    assert re.search(r"thinking\s+off", kernel.run("%agent status").displays()[-1])
    run, body = ask("--think=4096", Turn([thinking("Again."), text("Back on.")]))
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4096, "display": "summarized"}
    run, body = ask("--new", Turn([text("A new conversation, the configured default.")]))
    assert "thinking" not in body
    assert server.errors == [], server.errors


def test_the_request_view_shows_thinking_blocks(kernel: Kernel, server: MessagesServer) -> None:
    server.add_turns(
        Turn(
            [
                redacted_thinking(),
                thinking(FIRST_THOUGHT),
                tool_use("Read", {"file_path": "notes.txt"}),
            ]
        ),
        Turn([text("Hello.")]),
    )
    run = kernel.run("%%agent --new --think 2048\nWhat do my notes say?", timeout=60)
    assert run.status == "ok", run.text()
    assert REDACTED in run.text()
    shown_request = kernel.run("%agent request -1")
    assert shown_request.status == "ok", shown_request.text()
    page = shown_request.displays("text/html")[-1]
    assert "redacted_thinking" in page and "read notes.txt &lt;first&gt;" in page
    assert "budget_tokens" in page


def test_a_replayed_thinking_cell_shows_the_same_every_time(
    server: MessagesServer, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    cell = "%%agent --new --think 2048 --mode dontAsk --cassette think.json\nWhat do my notes say?"
    recorder = agent_kernel(tmp_path, server.base_url)
    try:
        recorder.run("%agent allow Read")
        server.add_turns(*script())
        recorded = recorder.run(cell, timeout=60)
        assert recorded.status == "ok", recorded.text()
    finally:
        recorder.close()
    assert (tmp_path / "think.json").exists()

    # Replayed offline (no server), twice, in a fresh kernel each time, as nbval would.
    runs = []
    for _ in range(2):
        replayer = agent_kernel(tmp_path, "http://127.0.0.1:9")
        try:
            replayer.run("%agent allow Read")
            run = replayer.run(cell, timeout=60)
            assert run.status == "ok", run.text()
            runs.append(run)
        finally:
            replayer.close()
    first, second = (compared(run) for run in runs)
    assert first == second
    texts = "\n".join(value for _, value in first)
    assert f"▸ Thinking · {len(FIRST_THOUGHT):,} characters" in texts
    assert REDACTED in texts and "as recorded — a replay spends nothing" in texts
    kinds = [kind(o) for o in shown(runs[0])]
    assert kinds == ["thinking", "batch", "thinking", "text/html,text/plain", "footer"], kinds

    # A saved notebook keeps each display's last update, a fresh run's comparison its first
    # display: for every display that is updated in place they must be the same.
    for run in runs:
        first_of: dict[str, dict[str, Any]] = {}
        last_of: dict[str, dict[str, Any]] = {}
        for message in run.messages:
            content = message["content"]
            display_id = content.get("transient", {}).get("display_id")
            if display_id is None:
                continue
            if message["msg_type"] == "display_data":
                first_of.setdefault(display_id, content["data"])
            elif message["msg_type"] == "update_display_data":
                last_of[display_id] = content["data"]
        assert last_of, "no display was updated in place"
        for display_id, data in last_of.items():
            for mime in ("text/plain", "text/html"):
                assert data.get(mime) == first_of[display_id].get(mime), (display_id, mime)


def test_thinking_turned_on_after_an_interrupted_call_waits_for_the_answer(
    server: MessagesServer, tmp_path: Path
) -> None:
    """A cell interrupted in its calls leaves them open, made without thinking; the API
    refuses thinking until the model has answered them (the server's 400). So the next
    cell's first request goes without thinking, the cell says so once, and the one after
    thinks again."""
    kernel = agent_kernel(tmp_path, server.base_url)
    try:
        kernel.run("%agent allow Bash")
        server.add_turns(Turn([tool_use("Bash", {"command": "sleep 5"})]))
        running = kernel.submit("%%agent\nWait a while.")
        kernel.wait(
            running,
            timeout=20,
            until=lambda: any("Bash" in str(m["content"]) for m in running.messages),
        )
        kernel.interrupt()
        kernel.wait(running, timeout=30)
        assert running.status == "error"

        sent_before = len(server.requests)
        server.add_turns(Turn([text("Stopped waiting.")]))
        answered = kernel.run("%%agent --think 2048\nGo on, thinking.", timeout=60)
        assert answered.status == "ok", answered.text()
        assert "Thinking resumes after this answer" in answered.text()
        assert len(server.requests) == sent_before + 1
        assert "thinking" not in server.requests[-1].body
        assert server.requests[-1].body["max_tokens"] == 8192

        server.add_turns(Turn([thinking("Now I may think."), text("Thinking again.")]))
        thinking_now = kernel.run("%%agent\nAnd think.", timeout=60)
        assert thinking_now.status == "ok", thinking_now.text()
        assert server.requests[-1].body["thinking"]["budget_tokens"] == 2048
        assert "Thinking resumes" not in thinking_now.text()
        assert server.errors == [], server.errors
    finally:
        kernel.close()


def test_strict_nbval_passes_a_saved_notebook_with_thinking(
    server: MessagesServer, tmp_path: Path
) -> None:
    """Recorded once against the server, saved from an offline replay, then plain
    `pytest --nbval` (the package's plugin only) on the folder: the Thinking sections, the
    redacted line and the emptied live displays compare equal."""
    import json
    import subprocess
    import sys

    import nbformat
    from test_pytest_plugin import _clean_env, _closed_port, _execute

    folder, home = tmp_path / "notebooks", tmp_path / "home"
    folder.mkdir()
    home.mkdir()
    (folder / "notes.txt").write_text("hello\n")
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    notebook.cells = [
        nbformat.v4.new_code_cell("%load_ext jupyter_toolhost\n%agent allow Read"),
        nbformat.v4.new_code_cell(
            "%%agent --think 2048 --mode dontAsk --cassette think.json\nWhat do my notes say?"
        ),
    ]
    server.add_turns(*script())
    recording = {
        **_clean_env(home),
        "ANTHROPIC_BASE_URL": server.base_url,
        "ANTHROPIC_API_KEY": "test-key",
    }
    _execute(notebook, folder, recording)
    _execute(notebook, folder, _clean_env(home))  # saved as a replay leaves it
    nbformat.write(notebook, folder / "think.ipynb")
    saved = json.dumps(notebook.cells[1].outputs)
    assert "toolhost-thinking" in saved and REDACTED in saved

    env = {
        **_clean_env(home),
        "ANTHROPIC_API_KEY": "sk-fake",
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{_closed_port()}",
    }
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "-p", "no:cacheprovider", "think.ipynb"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "2 passed" in done.stdout, done.stdout[-3000:]
