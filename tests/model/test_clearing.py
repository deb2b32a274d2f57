"""Old tool results cleared from the conversation, through `Session`, the real client and
the loopback server that bills the prompt cache as the API does.

A clearing replaces old results by notes naming their saved copies, once the tokens it
removes pay back the rewrite it causes (`agent.clearing`). Asserted: the server's bill of a
cleared session (the request after a clearing reads only up to the first cleared block,
and the session costs less than without clearing), the note the model reads, and a
scripted task in which the model needs an early result after it was cleared and Reads the
saved copy. It holds with thinking on, with a deferred tool found by ToolSearch, for a
sub-agent and after compaction, and the notes' text is stable (the cache keeps hitting
after the clearing).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from session_support import Router
from test_prompt_cache_session import (
    THINK,
    bodies,
    deferred_weather,
    pages,
    session_for,
    usages,
)

from jupyter_toolhost.agent.clearing import CLEARED_PREFIX, KEEP
from jupyter_toolhost.jupyter.views.request_view import request_view
from jupyter_toolhost.model.base import Usage
from jupyter_toolhost.model.pricing import billed_equivalent
from jupyter_toolhost.testing import MessagesServer, Turn, text, thinking, tool_use
from jupyter_toolhost.tools import agent, read

SAVED = re.compile(r"saved in (\S+); Read it")


def results(body: dict[str, Any]) -> list[str]:
    """Each tool_result's text in the request, in order."""
    found = []
    for message in body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_result":
                content = block["content"]
                found.append(content if isinstance(content, str) else str(content))
    return found


async def test_a_cleared_session_is_billed_less_and_reads_again_after_the_clearing(
    tmp_path: Path,
) -> None:
    script = [*pages(20), Turn([text("Twenty pages.")])]
    billed: dict[bool, Usage] = {}
    for clear in (False, True):
        with MessagesServer(list(script)) as server:
            session = session_for(server, tmp_path / str(clear))
            session.settings.clear_old_results = clear
            assert await session.run("Read twenty pages.") == "Twenty pages."
        assert server.errors == []
        billed[clear] = session.usage
        if not clear:
            assert not any(CLEARED_PREFIX in r for b in bodies(server) for r in results(b))
            continue
        sent, used = bodies(server), usages(session)
        cleared_at = next(
            i for i, b in enumerate(sent) if any(r.startswith(CLEARED_PREFIX) for r in results(b))
        )
        shown = results(sent[cleared_at])
        notes = [r for r in shown if r.startswith(CLEARED_PREFIX)]
        assert len(notes) == len(shown) - KEEP  # all but the latest KEEP results
        assert all("8,000 characters" in n and SAVED.search(n) for n in notes)
        # The saved copies hold the results whole.
        for number, note in enumerate(notes, start=1):
            saved = Path(session.context.cwd, SAVED.search(note).group(1))  # type: ignore[union-attr]
            assert saved.read_text().startswith(f"page {number:03d} row")
            assert len(saved.read_text()) == 8_000
        # The request after the clearing reads only what precedes the first cleared block
        # (the tools, the system prompt and the prompt) and writes the rest again ...
        assert (
            used[cleared_at].cache_read_input_tokens < used[cleared_at - 1].cache_read_input_tokens
        )
        # ... and every later one reads it all again, the notes unchanged.
        # (Within 2 tokens: the server clips its synthetic prefix count to the body's.)
        for before, after in zip(used[cleared_at:], used[cleared_at + 1 :], strict=False):
            grown = before.cache_read_input_tokens + before.cache_creation_input_tokens
            assert abs(after.cache_read_input_tokens - grown) <= 2, (before, after)
        for later in sent[cleared_at + 1 :]:
            assert results(later)[: len(notes)] == notes
        # The request view says so.
        view = request_view(session, cleared_at + 1).data["text/plain"]
        assert f"Cleared: {len(notes)} old tool results sent as a note" in view
    # 20 pages: the clearing has paid back its rewrite and more (0.89 × here).
    assert billed_equivalent(billed[True]) < 0.95 * billed_equivalent(billed[False])


async def test_the_model_reads_a_cleared_result_again_from_its_saved_copy(tmp_path: Path) -> None:
    """The task needs page 1 after it was cleared: the model Reads the file the note names
    and gets the page back whole. With thinking on (the thinking blocks stay as they were)."""
    seen: list[dict[str, Any]] = []

    def script(body: dict[str, Any]) -> Turn:
        seen.append(body)
        calls = sum(
            1
            for m in body["messages"]
            if m["role"] == "assistant"
            for b in m["content"]
            if b.get("type") == "tool_use"
        )
        if calls < 14:
            return Turn([thinking(f"Page {calls + 1}."), tool_use("Fetch", {"page": calls + 1})])
        notes = [SAVED.search(r) for r in results(body) if r.startswith(CLEARED_PREFIX)]
        if calls == 14:
            assert notes, "page 1 should have been cleared by now"
            path = notes[0].group(1)  # type: ignore[union-attr]
            return Turn([thinking("I need page 1 again."), tool_use("Read", {"file_path": path})])
        last = results(body)[-1]
        return Turn([thinking("Got it."), text(("page 001 row" in last and "Found.") or "Lost.")])

    with MessagesServer(script) as server:
        session = session_for(server, tmp_path, read.make_tool(), thinking=THINK)
        assert await session.run("Read fourteen pages, then check page 1 again.") == "Found."
    assert server.errors == []
    final = seen[-1]
    assert final["thinking"] == THINK
    # Every thinking block the model sent is still in the conversation, as it was.
    thoughts = [
        b["thinking"]
        for m in final["messages"]
        if m["role"] == "assistant"
        for b in m["content"]
        if b["type"] == "thinking"
    ]
    assert thoughts == [f"Page {n}." for n in range(1, 15)] + ["I need page 1 again."]


async def test_a_tool_search_result_is_never_cleared_so_found_tools_stay_loaded(
    tmp_path: Path,
) -> None:
    """A ToolSearch result holds `tool_reference` blocks, not text: clearing it would unload
    the tools it found. The weather result after it is plain text and is cleared."""
    weather = "mcp__weather__get_forecast"
    script = [
        Turn([tool_use("ToolSearch", {"query": f"select:{weather}"})]),
        Turn([tool_use(weather, {"page": 1})]),
        *pages(16),
        Turn([tool_use(weather, {"page": 2})]),
        Turn([text("Done.")]),
    ]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path, deferred_weather(), disclosure="defer_loading")
        assert await session.run("Check the weather, read, check again.") == "Done."
    assert server.errors == []  # the last weather call was still a loaded tool
    last = bodies(server)[-1]
    found = results(last)
    assert "tool_reference" in found[0]  # the ToolSearch result, as it was
    assert found[1].startswith(CLEARED_PREFIX)  # the first forecast (10,000 characters)


async def test_a_subagent_clears_its_own_old_results(tmp_path: Path) -> None:
    job = "SUB-PAGES: read twenty pages."
    router = Router(
        {
            "MAIN-PAGES": [
                Turn([tool_use("Agent", {"description": "read pages", "prompt": job})]),
                Turn([text("The subagent read them.")]),
            ],
            "SUB-PAGES": [*pages(20), Turn([text("Read twenty pages.")])],
        }
    )
    with MessagesServer(router) as server:
        session = session_for(server, tmp_path, agent.make_tool())
        assert await session.run("MAIN-PAGES: get the pages read") == "The subagent read them."
    assert server.errors == []
    last = results(router.seen["SUB-PAGES"][-1])
    notes = [r for r in last if r.startswith(CLEARED_PREFIX)]
    assert notes and len(notes) <= len(last) - KEEP
    saved = Path(session.context.cwd, SAVED.search(notes[0]).group(1))  # type: ignore[union-attr]
    assert saved.read_text().startswith("page 001 row")


async def test_after_compaction_the_new_conversation_is_cleared_too(tmp_path: Path) -> None:
    script = [*pages(4), Turn([text("Four.")]), Turn([text("Summary: four pages.")])]
    script += [*pages(18, first=5), Turn([text("Done.")])]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path)
        assert await session.run("Read four pages.") == "Four."
        assert await session.compact() is not None
        assert await session.run("Eighteen more.") == "Done."
    assert server.errors == []
    last = bodies(server)[-1]
    assert "Summary: four pages." in str(last["messages"][0])
    notes = [r for r in results(last) if r.startswith(CLEARED_PREFIX)]
    assert notes and len(notes) <= len(results(last)) - KEEP
    saved = Path(session.context.cwd, SAVED.search(notes[0]).group(1))  # type: ignore[union-attr]
    assert saved.read_text().startswith("page 005 row")
