"""The conversation's prompt-cache breakpoints, through `Session`, the real client and the
loopback server, whose prompt cache bills as the API does (`testing.prompt_cache`).

Every request marks the last cacheable block of its last message (as Claude Code does), so
each turn reads the whole earlier conversation from the cache and writes only what is new:
asserted on the server's figures for a 10-turn session, in every disclosure style, with
thinking on, after compaction, after an interrupt, with many parallel calls, and for a
sub-agent.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from pydantic import BaseModel
from session_support import Router

from jupyter_toolhost import Session, build_tool
from jupyter_toolhost.agent.events import LoopEvent, ToolCallStarted
from jupyter_toolhost.core.context import ToolUseContext
from jupyter_toolhost.core.numbers import format_number
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.jupyter.config import ToolHost
from jupyter_toolhost.jupyter.host import AgentHost
from jupyter_toolhost.jupyter.magic.commands import run_line
from jupyter_toolhost.jupyter.views.render import TurnSummary, footer_parts
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.model.base import Usage
from jupyter_toolhost.model.pricing import billed_equivalent
from jupyter_toolhost.model.prompt_cache import MAX_BREAKPOINTS
from jupyter_toolhost.testing import Hold, MessagesServer, Turn, raw, text, thinking, tool_use
from jupyter_toolhost.tools import agent

MODEL = "claude-sonnet-4-5"
THINK = {"type": "enabled", "budget_tokens": 2048}
ROWS = 8_000
"""Characters of each `Fetch` result: about 2,000 tokens on the server's count."""


class PageInput(BaseModel):
    page: int


class WaitInput(BaseModel):
    seconds: float


def fetch_tool() -> Tool[PageInput]:
    def fetch(input: PageInput, context: ToolUseContext) -> str:
        line = f"page {input.page:03d} row " + "x" * 40 + "\n"
        return (line * (ROWS // len(line) + 1))[:ROWS]

    return build_tool(
        name="Fetch",
        input_model=PageInput,
        call=fetch,
        description="Fetch one page of the report.",
        read_only=True,
        concurrency_safe=True,
        max_result_size_chars=100_000,
    )


def wait_tool() -> Tool[WaitInput]:
    async def wait(input: WaitInput, context: ToolUseContext) -> str:
        await asyncio.sleep(input.seconds)
        return "waited"

    return build_tool(
        name="Wait",
        input_model=WaitInput,
        call=wait,
        description="Wait a while.",
        read_only=True,
        interrupt_behavior="cancel",
    )


def deferred_weather() -> Tool[PageInput]:
    return build_tool(
        name="mcp__weather__get_forecast",
        input_model=PageInput,
        call=lambda i, c: "rain " * 2_000,
        description="Get the weather forecast (temperature, rain, wind) for a day.",
        should_defer=True,
        is_mcp=True,
        read_only=True,
        max_result_size_chars=100_000,
    )


def session_for(
    server: MessagesServer, tmp_path: Path, *tools: Tool[Any], **options: Any
) -> Session:
    options.setdefault("permission_mode", "bypassPermissions")
    return Session(
        tools=[fetch_tool(), wait_tool(), *tools],
        model=AnthropicModel(base_url=server.base_url, api_key="test-key"),
        model_id=MODEL,
        cwd=tmp_path,
        load_settings=False,
        **options,
    )


def bodies(server: MessagesServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests if r.path == "/v1/messages"]


def marks(body: dict[str, Any]) -> list[str]:
    """Where `cache_control` sits: `tools.N`, `system.N`, `messages.N.content.M`."""
    found = [f"tools.{i}" for i, t in enumerate(body.get("tools", [])) if "cache_control" in t]
    found += [f"system.{i}" for i, b in enumerate(body.get("system", [])) if "cache_control" in b]
    for n, message in enumerate(body["messages"]):
        content = message["content"]
        for m, block in enumerate(content if isinstance(content, list) else []):
            if "cache_control" in block:
                found.append(f"messages.{n}.content.{m}")
    return found


def ttls(body: dict[str, Any]) -> list[str]:
    """Each breakpoint's lifetime, in the request's order (tools, system, messages)."""
    blocks = [*body.get("tools", []), *body.get("system", [])]
    blocks += [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]
    return [b["cache_control"].get("ttl", "5m") for b in blocks if "cache_control" in b]


def message_marks(body: dict[str, Any]) -> list[str]:
    return [spot for spot in marks(body) if spot.startswith("messages.")]


def last_block(body: dict[str, Any]) -> str:
    n = len(body["messages"]) - 1
    return f"messages.{n}.content.{len(body['messages'][n]['content']) - 1}"


def usages(session: Session) -> list[Usage]:
    found = []
    for n in range(1, session.sent_request().turn + 1):
        usage = session.sent_request(n).usage
        assert usage is not None
        found.append(usage)
    return found


def assert_incremental(used: list[Usage], *, start: int = 1) -> None:
    """From request `start` on, each one reads all that the one before read and wrote."""
    for before, after in zip(used[start - 1 :], used[start:], strict=False):
        assert after.cache_read_input_tokens == (
            before.cache_read_input_tokens + before.cache_creation_input_tokens
        ), (before, after)


def pages(count: int, *, first: int = 1) -> list[Turn]:
    return [Turn([tool_use("Fetch", {"page": first + i})]) for i in range(count)]


async def test_ten_turns_read_the_whole_earlier_conversation_from_the_cache(
    tmp_path: Path,
) -> None:
    script = [*pages(9), Turn([text("Read nine pages.")])]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path)
        assert await session.run("Read the report, one page a turn.") == "Read nine pages."
    assert server.errors == []
    sent, used = bodies(server), usages(session)
    assert len(sent) == len(used) == 10

    for body in sent:  # one breakpoint in the conversation, on its very last block
        assert message_marks(body) == [last_block(body)]
        assert len(marks(body)) <= MAX_BREAKPOINTS
    # The first request is shorter than Sonnet's 1,024-token minimum: nothing is cached.
    assert used[0].cache_read_input_tokens == used[0].cache_creation_input_tokens == 0
    assert used[1].cache_creation_input_tokens > 2_000
    assert_incremental(used)
    for usage in used[2:]:
        # Each turn writes its tool call and its ~2,000-token result, and no more.
        assert 2_000 <= usage.cache_creation_input_tokens <= 2_300, usage
        assert usage.input_tokens < 400, usage  # only the body's framing is left uncached
    total = sum(used, Usage())
    assert total == session.usage
    whole = total.input_tokens + total.cache_read_input_tokens + total.cache_creation_input_tokens
    # Paid by price: linear in the session's length, a fraction of sending it all again.
    assert billed_equivalent(total) < 0.4 * whole
    # The cell's footer says what was read from and written to the cache.
    footer = " · ".join(footer_parts(TurnSummary(model_requests=10, usage=total.to_dict())))
    assert (
        f"{total.input_tokens:,} in / {total.output_tokens:,} out tokens "
        f"({total.cache_read_input_tokens:,} read from cache, "
        f"{total.cache_creation_input_tokens:,} written to cache)"
    ) in footer


@pytest.mark.parametrize("disclosure", ["defer_loading", "server_bm25", "discovered"])
async def test_a_discovery_keeps_the_conversation_cached(tmp_path: Path, disclosure: str) -> None:
    weather = "mcp__weather__get_forecast"
    if disclosure == "server_bm25":
        found = [
            raw(
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_01",
                    "name": "tool_search_tool_bm25",
                    "input": {"query": "weather forecast"},
                }
            ),
            raw(
                {
                    "type": "tool_search_tool_result",
                    "tool_use_id": "srvtoolu_01",
                    "content": {
                        "type": "tool_search_tool_search_result",
                        "tool_references": [{"type": "tool_reference", "tool_name": weather}],
                    },
                }
            ),
            tool_use(weather, {"page": 1}),
        ]
        search = [Turn(found)]
    else:
        search = [
            Turn([tool_use("ToolSearch", {"query": f"select:{weather}"})]),
            Turn([tool_use(weather, {"page": 1})]),
        ]
    script = [*pages(2), *search, *pages(2, first=3), Turn([text("Done.")])]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path, deferred_weather(), disclosure=disclosure)
        assert await session.run("Read, then check the weather.") == "Done."
    assert server.errors == [], server.errors
    sent, used = bodies(server), usages(session)
    for body in sent:
        assert message_marks(body) == [last_block(body)], disclosure
        assert len(marks(body)) <= MAX_BREAKPOINTS
    if disclosure == "discovered":
        # This style puts the found tool in `tools`, which comes before the conversation:
        # the request after the discovery reads nothing of the conversation (its price).
        changed = next(i for i, b in enumerate(sent) if weather in str(b["tools"]))
        assert used[changed].cache_read_input_tokens < used[changed - 1].cache_read_input_tokens
        assert_incremental(used, start=changed + 1)
    else:
        assert_incremental(used)


async def test_thinking_blocks_are_never_marked_and_the_cache_still_grows(
    tmp_path: Path,
) -> None:
    script = [
        Turn([thinking("Page one first."), tool_use("Fetch", {"page": 1})]),
        Turn([thinking("Then two."), tool_use("Fetch", {"page": 2})]),
        Turn([thinking("Enough."), text("Two pages.")]),
        Turn([thinking("Again."), tool_use("Fetch", {"page": 3})]),
        Turn([thinking("Done."), text("Three.")]),
    ]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path, thinking=THINK)
        session.settings.cache_policy = "cell"  # (the default's, after a pause)
        assert await session.run("Read two pages.") == "Two pages."
        assert await session.run("And one more.") == "Three."
    assert server.errors == []
    sent, used = bodies(server), usages(session)
    for number, body in enumerate(sent):
        assert body["thinking"] == THINK
        # The second cell also marks, for an hour, the first cell's answer (its text
        # block: the thinking block before it may not be marked).
        boundary = ["messages.5.content.1"] if number >= 3 else []
        assert message_marks(body) == [*boundary, last_block(body)]
        assert ttls(body) == ["1h"] * (2 + len(boundary)) + ["5m"]
        assert body["messages"][-1]["role"] == "user"
        thoughts = [
            block
            for message in body["messages"]
            for block in message["content"]
            if block["type"] in ("thinking", "redacted_thinking")
        ]
        assert all("cache_control" not in block for block in thoughts)
    assert any(b["messages"][-2]["content"][0]["type"] == "thinking" for b in sent[1:])
    assert_incremental(used)


async def test_after_compaction_the_summary_is_marked_and_the_summary_request_reads(
    tmp_path: Path,
) -> None:
    script = [*pages(3), Turn([text("Three pages.")]), Turn([text("Summary: three pages.")])]
    script += [*pages(2, first=4), Turn([text("Five.")])]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path)
        await session.run("Read three pages.")
        before = session.usage
        assert await session.compact() is not None
        summary = minus(session.usage, before)
        assert await session.run("Two more.") == "Five."
    assert server.errors == []
    sent, used = bodies(server), usages(session)
    summary_request, after = sent[4], sent[5:]
    # The summary request marks its instruction and reads the conversation it summarises.
    assert message_marks(summary_request) == [last_block(summary_request)]
    assert summary.cache_read_input_tokens == (
        used[3].cache_read_input_tokens + used[3].cache_creation_input_tokens
    )
    for body in after:
        assert message_marks(body) == [last_block(body)]
    assert after[0]["messages"][0]["content"][-1]["text"] == "Two more."
    # The first request after it starts a new conversation: nothing of the old one is read.
    assert used[4].cache_read_input_tokens < used[3].cache_read_input_tokens
    assert_incremental(used, start=5)


def minus(a: Usage, b: Usage) -> Usage:
    return Usage(
        a.input_tokens - b.input_tokens,
        a.output_tokens - b.output_tokens,
        a.cache_creation_input_tokens - b.cache_creation_input_tokens,
        a.cache_read_input_tokens - b.cache_read_input_tokens,
    )


async def test_after_an_interrupt_the_joined_prompt_is_marked_and_reads(tmp_path: Path) -> None:
    started = asyncio.Event()
    calls: list[str] = []

    def on_event(event: LoopEvent) -> None:
        if isinstance(event, ToolCallStarted):
            calls.append(event.call_id)
            if len(calls) == 3:  # Fetch, Fetch, then Wait
                started.set()

    script = [*pages(2), Turn([tool_use("Wait", {"seconds": 30})])]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path, on_event=on_event)
        session.settings.cache_policy = "cell"  # (the default's, after a pause)
        task = asyncio.create_task(session.run("Read two pages, then wait."))
        await asyncio.wait_for(started.wait(), 30)
        assert session.interrupt()
        with pytest.raises(asyncio.CancelledError):
            await task
        server.add_turns(Turn([text("Stopped waiting.")]))
        assert await session.run("Never mind the wait.") == "Stopped waiting."
    assert server.errors == []
    sent, used = bodies(server), usages(session)
    joined = sent[-1]["messages"][-1]
    assert [b["type"] for b in joined["content"]] == ["tool_result", "text"]
    # The prompt joined the last user message: the cell boundary is the message before it.
    assert message_marks(sent[-1]) == ["messages.5.content.0", last_block(sent[-1])]
    assert joined["content"][-1]["text"] == "Never mind the wait."
    assert_incremental(used)


async def test_a_response_interrupted_mid_stream_still_counts_what_it_was_billed(
    tmp_path: Path,
) -> None:
    """The Wait call starts while its message still streams (the server holds the stream
    after it); the interrupt lands before `message_delta`, so only `message_start`'s usage
    is known. The API bills the request's input all the same: the turn keeps that usage,
    the session's total counts it, and the next request reads what it wrote."""
    hold = Hold(timeout=30)
    started = asyncio.Event()
    calls: list[str] = []

    def on_event(event: LoopEvent) -> None:
        if isinstance(event, ToolCallStarted):
            calls.append(event.call_id)
            if len(calls) == 3:  # Fetch, Fetch, then Wait
                started.set()

    held = Turn([tool_use("Wait", {"seconds": 30}), text("never sent")], holds={0: hold})
    with MessagesServer([*pages(2), held]) as server:
        session = session_for(server, tmp_path, on_event=on_event)
        task = asyncio.create_task(session.run("Read two pages, then wait."))
        await asyncio.wait_for(started.wait(), 30)
        assert session.interrupt()
        with pytest.raises(asyncio.CancelledError):
            await task
        hold.until.set()
        server.add_turns(Turn([text("Stopped waiting.")]))
        assert await session.run("Never mind the wait.") == "Stopped waiting."
    assert server.errors == []
    interrupted = session.sent_request(3).usage
    assert interrupted is not None  # known from message_start alone
    assert interrupted.output_tokens == 1  # what message_start reports; the rest never came
    assert interrupted.cache_creation_input_tokens > 2_000  # page 2's result, written
    used = usages(session)
    assert sum(used, Usage()) == session.usage
    assert_incremental(used)  # the request after the interrupt read what it wrote


async def test_a_broken_stream_counts_each_attempt(tmp_path: Path) -> None:
    """A stream that breaks after `message_start` was billed; its retry is billed again."""
    script = [
        Turn([text("Reading.")], cut_after_blocks=0),
        Turn([text("Read.")]),
    ]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path, retry_backoff_s=0.01)
        assert await session.run("Read the report.") == "Read."
    assert server.errors == []
    one = bodies(server)[0]
    assert bodies(server) == [one, one]  # the same request, sent twice
    usage = session.sent_request(1).usage
    assert usage is not None and usage.output_tokens > 1  # the attempt that completed
    assert session.usage.input_tokens == 2 * usage.input_tokens
    assert session.usage.output_tokens == usage.output_tokens + 1


async def test_many_parallel_calls_mark_the_previous_end_too(tmp_path: Path) -> None:
    """12 calls in one message add 24 blocks, past the API's 20-block look-back: the
    request after them marks where the previous request ended, so the read still lands."""
    twelve = Turn([tool_use("Fetch", {"page": p}) for p in range(1, 13)])
    script = [*pages(1, first=20), twelve, *pages(1, first=30), Turn([text("Done.")])]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path)
        session.settings.clear_old_results = False  # (placement alone: see test_clearing)
        assert await session.run("Read everything.") == "Done."
    assert server.errors == []
    sent, used = bodies(server), usages(session)
    wide = sent[2]
    assert message_marks(wide) == [last_block(sent[1]), last_block(wide)]
    assert len(marks(wide)) == MAX_BREAKPOINTS
    assert [len(message_marks(b)) for b in sent] == [1, 1, 2, 1]
    assert_incremental(used)


async def test_a_subagent_marks_its_own_conversation(tmp_path: Path) -> None:
    job = "SUB-PAGES: read pages 1 and 2."
    router = Router(
        {
            "MAIN-PAGES": [
                Turn([tool_use("Agent", {"description": "read pages", "prompt": job})]),
                Turn([text("The subagent read them.")]),
            ],
            "SUB-PAGES": [*pages(2), Turn([text("Read pages 1 and 2.")])],
        }
    )
    with MessagesServer(router) as server:
        session = session_for(server, tmp_path, agent.make_tool())
        assert await session.run("MAIN-PAGES: get the pages read") == "The subagent read them."
    assert server.errors == []
    for body in router.seen["SUB-PAGES"] + router.seen["MAIN-PAGES"]:
        assert message_marks(body) == [last_block(body)]
        assert len(marks(body)) <= MAX_BREAKPOINTS


class Clock:
    """The server's and the session's clock, moved by the test: a pause is not waited for."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def cells(count: int, per_cell: int = 2) -> list[Turn]:
    script: list[Turn] = []
    for cell in range(count):
        script += [*pages(per_cell, first=1 + cell * per_cell), Turn([text(f"Cell {cell + 1}.")])]
    return script


async def run_cells(
    server: MessagesServer,
    session: Session,
    clock: Clock,
    count: int,
    *,
    pause_s: float,
) -> list[int]:
    """Run `count` cells `pause_s` apart; the turn number of each cell's first request."""
    session.settings.clock = clock
    firsts = []
    for cell in range(1, count + 1):
        if cell > 1:
            clock.now += pause_s
        firsts.append(session.sent_request().turn + 1 if cell > 1 else 1)
        assert await session.run(f"Cell {cell}: read two pages.") == f"Cell {cell}."
    assert server.errors == []
    return firsts


async def test_a_paused_notebook_session_reads_its_hour_long_prefix(tmp_path: Path) -> None:
    """Three cells 10 minutes apart (on a moved clock). The first pause finds every entry
    gone (they were 5-minute ones: a session that never paused paid no premium) and says
    so; from then on the tools, the system prompt and the conversation before the running
    cell are marked for an hour, so after the second pause the cell reads all of that and
    writes again only the previous cell."""
    clock = Clock()
    notices: list[str] = []
    with MessagesServer(cells(3), clock=clock) as server:
        session = session_for(
            server,
            tmp_path,
            on_event=lambda e: (
                notices.append(e.text) if getattr(e, "kind", "") == "cache" else None
            ),
        )
        first_of = await run_cells(server, session, clock, 3, pause_s=600)
    sent, used = bodies(server), usages(session)
    for body in sent:
        assert len(marks(body)) <= MAX_BREAKPOINTS
        lifetimes = ttls(body)
        assert lifetimes == sorted(lifetimes)  # "1h" sorts before "5m": 1-hour marks first
    cell2, cell3 = first_of[1] - 1, first_of[2] - 1  # indexes into `used`
    # Before the first pause every mark lived 5 minutes.
    assert all(ttls(body) == ["5m"] * len(ttls(body)) for body in sent[:cell2])
    assert used[cell2].cache_read_input_tokens == 0  # all expired
    assert used[cell2].cache_creation_1h_input_tokens > 2 * 2_000  # tools, system, cell 1
    assert notices[0] == (
        f"The prompt cache expired after a 10-minute pause: "
        f"{used[cell2].cache_creation_input_tokens:,} tokens written again (0 still read "
        "from the cache)."
    )
    # After the first pause: tools, system and the cell boundary for an hour, the tail not.
    assert ttls(sent[cell2]) == ["1h", "1h", "1h", "5m"]
    # The second pause: the 5-minute entries (cell 2's turns) expired, the hour-long read.
    before_pause = used[cell3 - 1]
    assert used[cell3].cache_read_input_tokens == used[cell2].cache_creation_1h_input_tokens
    assert used[cell3].cache_read_input_tokens < before_pause.cache_read_input_tokens
    # ... and what is written again is cell 2 (two pages and their calls), for an hour.
    assert 4_000 < used[cell3].cache_creation_1h_input_tokens < 4_600
    assert len(notices) == 2 and "10-minute pause" in notices[1]
    assert session.last_cache_expiry == notices[1]
    # The footer says how much was written for an hour; `%agent cost` the latest pause.
    total = session.usage
    footer = " · ".join(footer_parts(TurnSummary(model_requests=9, usage=total.to_dict())))
    long = total.cache_creation_1h_input_tokens
    assert f"{total.cache_creation_input_tokens:,} written to cache ({long:,} for 1 h)" in footer
    host = AgentHost(InteractiveShell.instance(), ToolHost())
    host.session = session
    shown = run_line(host, "cost")
    assert shown is not None
    table = shown.data["text/plain"]
    assert notices[1] in table
    # Every number as every view writes it ("117,400", not "117400" beside "117,400.0").
    assert re.search(rf"cache_creation_1h_input_tokens\s+{long:,}\n", table), table
    assert f"  {format_number(billed_equivalent(total), 'tokens')}\n" in table


async def test_without_pauses_the_policy_costs_what_five_minutes_cost(tmp_path: Path) -> None:
    """The same three cells without pauses, under today's default (every mark 5 minutes,
    as before this policy) and under the new default: the same bill, to the token. Marking
    the cell boundary for an hour from the start ("cell") pays only the 1-hour premium on
    the tools, the system prompt and each cell's last answer."""
    billed: dict[str, Usage] = {}
    for policy in ("5m", "auto", "cell"):
        clock = Clock()
        with MessagesServer(cells(3), clock=clock) as server:
            session = session_for(server, tmp_path)
            session.settings.cache_policy = policy  # type: ignore[assignment]
            await run_cells(server, session, clock, 3, pause_s=30)
            billed[policy] = session.usage
    assert billed["auto"] == billed["5m"]
    cell, five = billed["cell"], billed["5m"]
    assert cell.cache_read_input_tokens == five.cache_read_input_tokens
    assert cell.cache_creation_input_tokens == five.cache_creation_input_tokens
    # The premium: 0.75 × the 1-hour writes, which are the tools, the system prompt and
    # the two earlier cells' last answers (a few hundred tokens here).
    # (The server counts the body's bytes, so the marks' own text is plain input: the
    # `"ttl": "1h"` of three marks and the boundary's mark, about 60 bytes a request.)
    premium = billed_equivalent(cell) - billed_equivalent(five)
    spelled = cell.input_tokens - five.input_tokens
    assert 0 <= spelled <= 9 * 60 // 4
    assert premium == pytest.approx(0.75 * cell.cache_creation_1h_input_tokens + spelled)
    assert 0 < cell.cache_creation_1h_input_tokens < 1_000


async def test_a_long_cell_before_a_pause_is_still_read_after_it(tmp_path: Path) -> None:
    """Cell 2 adds 24 blocks (12 calls at once), more than the API looks back: after the
    pause, cell 3's first request also marks the boundary before cell 2, so the hour-long
    entry written there is found. Never more than 4 marks, 1-hour ones first."""
    twelve = Turn([tool_use("Fetch", {"page": p}) for p in range(1, 13)])
    script = [*pages(1), Turn([text("Cell 1.")]), twelve, Turn([text("Cell 2.")])]
    script += [*pages(1, first=20), Turn([text("Cell 3.")])]
    clock = Clock()
    with MessagesServer(script, clock=clock) as server:
        session = session_for(server, tmp_path)
        session.settings.cache_policy = "cell"
        session.settings.clear_old_results = False  # (placement alone: see test_clearing)
        session.settings.clock = clock
        assert await session.run("Cell 1: read two pages.") == "Cell 1."
        assert await session.run("Cell 2: read two pages.") == "Cell 2."
        clock.now += 600
        assert await session.run("Cell 3: read two pages.") == "Cell 3."
    assert server.errors == []
    sent, used = bodies(server), usages(session)
    first3 = sent[4]
    assert message_marks(first3) == [
        "messages.3.content.0",
        "messages.7.content.0",
        last_block(first3),
    ]
    assert ttls(first3) == ["1h", "1h", "1h", "5m"]  # the tools' mark gave its slot up
    assert all(len(marks(b)) <= MAX_BREAKPOINTS for b in sent)
    # Cell 2's first request wrote the boundary after cell 1 for an hour; cell 3 reads it.
    assert used[4].cache_read_input_tokens == (
        used[2].cache_read_input_tokens + used[2].cache_creation_1h_input_tokens
    )
