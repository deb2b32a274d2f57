"""What the loop keeps incrementally equals what reading the whole history gives.

The loop keeps the discovered tools (`DiscoveredTools`) and the encoded request bodies
(`SentLog`) turn by turn, reading only what changed (`history.MessageList`). These tests run
real sessions against the loopback server through the paths that replace or edit the
history (compaction, the carried-tools reload exchange, resume from a transcript, repair of
a crashed one, interrupts, sub-agents, a user's own edits) and check after every turn that
the kept state equals the from-scratch computation, and that every recorded request is the
body the server received, byte for byte.
"""

from __future__ import annotations

import asyncio
import copy
import json
import pickle
import random
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from jupyter_toolhost import Session, build_tool
from jupyter_toolhost.agent.events import Compacted, LoopEvent, TurnEnd
from jupyter_toolhost.agent.loop import AgentLoop
from jupyter_toolhost.agent.sent import SentLog
from jupyter_toolhost.core.context import ToolUseContext
from jupyter_toolhost.core.history import MessageList
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.disclosure.deferral import DiscoveredTools, extract_discovered_tool_names
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.model.base import ModelRequest
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.tools import agent
from jupyter_toolhost.tools.agent.subagents import subagents

MODEL = "claude-sonnet-4-5"
MESSAGES_PATH = "/v1/messages"


class SizeInput(BaseModel):
    size: int


class WaitInput(BaseModel):
    seconds: float


def deferred(name: str) -> Tool[SizeInput]:
    return build_tool(
        name=name,
        input_model=SizeInput,
        call=lambda input, context: f"{name} of size {input.size}",
        description=f"Builds a {name.lower()} of a given size.",
        read_only=True,
        should_defer=True,
    )


def wait_tool(started: asyncio.Event | None = None) -> Tool[WaitInput]:
    async def wait(input: WaitInput, context: ToolUseContext) -> str:
        if started is not None:
            started.set()
        await asyncio.sleep(input.seconds)
        return "waited"

    return build_tool(
        name="Wait",
        input_model=WaitInput,
        call=wait,
        description="Waits.",
        read_only=True,
        concurrency_safe=True,
        interrupt_behavior="cancel",
    )


def pool(started: asyncio.Event | None = None) -> list[Tool[Any]]:
    return [wait_tool(started), deferred("Gizmo"), deferred("Widget"), agent.make_tool()]


def session_for(
    server: MessagesServer, tmp_path: Path, started: asyncio.Event | None = None, **options: Any
) -> Session:
    options.setdefault("permission_mode", "bypassPermissions")
    options.setdefault("load_settings", False)
    return Session(
        tools=pool(started),
        model=AnthropicModel(base_url=server.base_url, api_key="test-key"),
        model_id=MODEL,
        cwd=tmp_path,
        retry_backoff_s=0.01,
        **options,
    )


def loop_of(session: Session) -> AgentLoop:
    return session._loop  # pyright: ignore[reportPrivateUsage]


def assert_kept_state_is_exact(loop: AgentLoop) -> None:
    """The incrementally kept discovered set is the from-scratch one."""
    scratch = extract_discovered_tool_names(loop.messages, loop.compact_boundaries)
    assert loop.discovered_tool_names() == scratch


class EveryTurn:
    """An event sink that checks the kept state after every turn and compaction."""

    def __init__(self) -> None:
        self.loop: AgentLoop | None = None
        self.checked = 0

    def __call__(self, event: LoopEvent) -> None:
        if isinstance(event, TurnEnd | Compacted) and self.loop is not None:
            assert_kept_state_is_exact(self.loop)
            self.checked += 1


def conversation_requests(server: MessagesServer) -> list[Any]:
    """The requests of the conversation: compaction's summary requests are side requests."""
    return [
        r
        for r in server.requests
        if r.path == MESSAGES_PATH and r.body.get("tool_choice") != {"type": "none"}
    ]


def assert_sent_is_received(loop: AgentLoop, received: list[Any]) -> None:
    """Every request the loop recorded is the body the server received, byte for byte."""
    assert loop.sent.turns == len(received)
    for turn, recorded in enumerate(received, 1):
        sent = loop.sent.get(turn)
        assert sent.body == recorded.body, f"turn {turn}"
        assert sent.size == len(recorded.raw), f"turn {turn}"


# ── a scripted session through compaction, a find and the reload exchange ───────────────

COMPACTING = [
    Turn([tool_use("ToolSearch", {"query": "select:Gizmo"})]),
    Turn([tool_use("Gizmo", {"size": 1})]),
    Turn([tool_use("Wait", {"seconds": 0})]),
    Turn([text("Built a gizmo.")]),  # the end of the first prompt
    Turn([text("Summary: a gizmo was built with Gizmo.")]),  # compaction's summary
    Turn([tool_use("Gizmo", {"size": 2})]),  # after the reload exchange
    Turn([tool_use("ToolSearch", {"query": "select:Widget"})]),
    Turn([tool_use("Widget", {"size": 3})]),
    Turn([text("Built a widget too.")]),
]


@pytest.mark.parametrize("disclosure", ["defer_loading", "discovered"])
async def test_every_turn_through_compaction_and_finds(tmp_path: Path, disclosure: str) -> None:
    check = EveryTurn()
    with MessagesServer(COMPACTING) as server:
        session = session_for(server, tmp_path, disclosure=disclosure, on_event=check)
        check.loop = loop_of(session)
        assert await session.run("build a gizmo") == "Built a gizmo."
        assert await session.compact() is not None
        assert_kept_state_is_exact(loop_of(session))
        assert await session.run("now a widget") == "Built a widget too."

    assert server.errors == []
    assert check.checked == 8 + 1  # every turn, and the compaction
    loop = loop_of(session)
    assert loop.discovered_tool_names() == {"Gizmo", "Widget"}
    assert_sent_is_received(loop, conversation_requests(server))
    reloads = [
        block
        for message in loop.messages
        for block in message["content"]
        if block.get("type") == "tool_use" and block["id"].startswith("toolu_reload")
    ]
    # defer_loading sees only referenced tools: the compaction's finds are loaded again.
    assert len(reloads) == (1 if disclosure == "defer_loading" else 0)


async def test_resume_and_repair_from_a_transcript(tmp_path: Path) -> None:
    check = EveryTurn()
    with MessagesServer(COMPACTING) as server:
        first = session_for(server, tmp_path, disclosure="defer_loading")
        await first.run("build a gizmo")
        await first.compact()
        # The transcript read back holds the boundary and the conversation after it.
        resumed = Session.resume(
            first.session_id,
            tools=pool(),
            model=AnthropicModel(base_url=server.base_url, api_key="test-key"),
            model_id=MODEL,
            cwd=tmp_path,
            permission_mode="bypassPermissions",
            load_settings=False,
            disclosure="defer_loading",
            on_event=check,
        )
        check.loop = loop_of(resumed)
        assert_kept_state_is_exact(loop_of(resumed))
        assert loop_of(resumed).discovered_tool_names() == {"Gizmo"}
        assert await resumed.run("now a widget") == "Built a widget too."

    assert server.errors == []
    assert check.checked == 4
    received = conversation_requests(server)
    assert_sent_is_received(loop_of(resumed), received[-4:])


async def test_a_crashed_transcript_repaired_on_resume(tmp_path: Path) -> None:
    folder = tmp_path / ".toolhost" / "sessions" / "crashed"
    folder.mkdir(parents=True)
    found = {
        "type": "tool_result",
        "tool_use_id": "toolu_a",
        "content": [{"type": "tool_reference", "tool_name": "Widget"}],
    }
    records: list[Any] = [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_a", "name": "ToolSearch", "input": {"query": "w"}}
            ],
        },
        {"role": "user", "content": [found]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_b", "name": "Widget", "input": {"size": 1}}
            ],
        },
    ]  # the kernel died while Widget ran: its call has no result
    lines = [json.dumps({"type": "message", "message": r}) for r in records]
    (folder / "transcript.jsonl").write_text("\n".join([*lines, "{not json"]) + "\n")
    with MessagesServer([Turn([text("Recovered.")])]) as server:
        session = Session.resume(
            "crashed",
            tools=pool(),
            model=AnthropicModel(base_url=server.base_url, api_key="test-key"),
            model_id=MODEL,
            cwd=tmp_path,
            permission_mode="bypassPermissions",
            load_settings=False,
        )
        loop = loop_of(session)
        assert loop.messages[-1]["content"][0]["is_error"] is True  # repaired
        assert loop.discovered_tool_names() == {"Widget"}
        assert await session.run("what happened?") == "Recovered."
        assert_kept_state_is_exact(loop)
    assert server.errors == []
    assert_sent_is_received(loop, conversation_requests(server))
    assert "Widget" in [t["name"] for t in server.requests[-1].body["tools"]]


async def test_an_interrupt_that_commits_a_partial_turn(tmp_path: Path) -> None:
    script = [
        Turn([tool_use("ToolSearch", {"query": "select:Gizmo"})]),
        Turn([tool_use("Gizmo", {"size": 1}), tool_use("Wait", {"seconds": 30})]),
        Turn([text("Carried on.")]),
    ]
    check = EveryTurn()
    started = asyncio.Event()
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path, started, on_event=check)
        check.loop = loop_of(session)
        task = asyncio.create_task(session.run("build, then wait"))
        await asyncio.wait_for(started.wait(), timeout=20)
        session.interrupt()
        with pytest.raises(asyncio.CancelledError):
            await task
        loop = loop_of(session)
        # The partial turn is committed: Gizmo's result kept, Wait answered as interrupted.
        results = [b for b in _blocks(loop.messages) if b.get("type") == "tool_result"]
        assert len(results) == 3 and results[-1]["is_error"] is True
        assert loop.messages[-1]["role"] == "user"
        assert_kept_state_is_exact(loop)
        assert await session.run("go on") == "Carried on."
        assert_kept_state_is_exact(loop)
    assert server.errors == []
    assert_sent_is_received(loop, conversation_requests(server))


async def test_broken_streams_retried_and_resumed(tmp_path: Path) -> None:
    script = [
        Turn([text("thinking about it")], cut_after_blocks=0),  # nothing kept: retried
        Turn([tool_use("ToolSearch", {"query": "select:Gizmo"})]),
        # Cut after a complete call: it runs, the turn is kept with a note.
        Turn(
            [tool_use("Gizmo", {"size": 1}), tool_use("Wait", {"seconds": 0})], cut_after_blocks=1
        ),
        Turn([text("Recovered.")]),
    ]
    check = EveryTurn()
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path, on_event=check)
        check.loop = loop_of(session)
        assert await session.run("build a gizmo") == "Recovered."
    assert server.errors == []
    loop = loop_of(session)
    assert check.checked == 3 and loop.discovered_tool_names() == {"Gizmo"}
    received = conversation_requests(server)
    assert received[0].body == received[1].body  # the retry sent the same request again
    assert_sent_is_received(loop, received[1:])


def _blocks(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for m in messages if isinstance(m["content"], list) for b in m["content"]]


async def test_a_subagent_starts_with_its_parents_finds(tmp_path: Path) -> None:
    def route(body: dict[str, Any]) -> Turn:
        first = body["messages"][0]["content"]
        first_text = first if isinstance(first, str) else first[0].get("text", "")
        scripted = child if "SUB:" in first_text else main
        return scripted.pop(0)

    job = {"description": "sub", "prompt": "SUB: use the gizmo", "subagent_type": "general-purpose"}
    main = [
        Turn([tool_use("ToolSearch", {"query": "select:Gizmo"})]),
        Turn([tool_use("Agent", job)]),
        Turn([text("done")]),
    ]
    child = [Turn([tool_use("Gizmo", {"size": 4})]), Turn([text("built")])]
    check = EveryTurn()
    with MessagesServer(route) as server:
        session = session_for(server, tmp_path, disclosure="defer_loading", on_event=check)
        check.loop = loop_of(session)
        assert await session.run("MAIN") == "done"

    assert server.errors == []
    (sub,) = subagents(session.context).all()
    child_loop = sub.loop
    assert isinstance(child_loop, AgentLoop)
    assert_kept_state_is_exact(child_loop)
    assert child_loop.discovered_tool_names() == {"Gizmo"}
    # The child loaded its parent's find with the reload exchange, then called it.
    received = [r for r in server.requests if "SUB:" in json.dumps(r.body["messages"][0])]
    assert_sent_is_received(child_loop, received)
    assert_sent_is_received(loop_of(session), [r for r in server.requests if r not in received])


# ── a user (or a hostile caller) editing the conversation between runs ──────────────────


async def test_edits_between_runs_are_seen(tmp_path: Path) -> None:
    script = [
        Turn([tool_use("ToolSearch", {"query": "select:Gizmo"})]),
        Turn([text("found it")]),
        Turn([text("after the edit")]),
        Turn([text("after the replacement")]),
    ]
    with MessagesServer(script) as server:
        session = session_for(server, tmp_path, disclosure="discovered")
        loop = loop_of(session)
        await session.run("find a gizmo")
        assert loop.discovered_tool_names() == {"Gizmo"}
        # Put a new message in place of the search result (no reference left in it).
        index = next(i for i, m in enumerate(session.messages) if "tool_result" in json.dumps(m))
        result = session.messages[index]["content"][0]
        session.messages[index] = {
            "role": "user",
            "content": [{**result, "content": [{"type": "text", "text": "nothing found"}]}],
        }
        assert_kept_state_is_exact(loop)
        assert loop.discovered_tool_names() == set()
        await session.run("and now?")
        assert "Gizmo" not in [t["name"] for t in server.requests[-1].body["tools"]]
        # The conversation assigned to itself, then a new list in its place: both start over.
        loop.messages = loop.messages
        assert_kept_state_is_exact(loop)
        loop.messages = [{"role": "user", "content": "fresh start"}]
        assert isinstance(loop.messages, MessageList)
        assert loop.discovered_tool_names() == set()
        await session.run("hello")
        assert_kept_state_is_exact(loop)
    assert server.errors == []
    assert_sent_is_received(loop, conversation_requests(server))


EDITS = (
    "append",
    "extend",
    "iadd",
    "set_last",
    "set_any",
    "set_negative",
    "set_slice",
    "set_extended_slice",
    "del_any",
    "del_slice",
    "insert",
    "insert_past_end",
    "pop_last",
    "pop_any",
    "remove",
    "clear",
    "reverse",
    "sort",
    "imul_zero",
    "imul_two",
)


def random_message(rng: random.Random) -> dict[str, Any]:
    """A message that names some tools, or none, in any of the shapes the history holds."""
    names = rng.sample(["A", "B", "C", "D"], rng.randint(0, 2))
    references = [{"type": "tool_reference", "tool_name": n} for n in names]
    match rng.randint(0, 5):
        case 0:
            return {"role": "user", "content": "plain text"}
        case 1:
            return {"role": "user", "content": [{"type": "tool_result", "content": references}]}
        case 2:  # the API's server-side search result
            search = {"tool_references": references}
            block = {"type": "tool_search_tool_result", "content": search}
            return {"role": "assistant", "content": [block]}
        case 3:  # a compact-boundary record kept in the list
            return {"type": "compact_boundary", "pre_compact_discovered_tools": names}
        case 4:  # junk a careless caller might put there
            return {"role": "user", "content": [{"type": "tool_reference", "tool_name": 7}, 3]}
        case _:
            return {"role": "user", "content": references}


def edit(messages: MessageList, rng: random.Random, kind: str) -> None:
    size = len(messages)
    anywhere = rng.randrange(size) if size else 0
    match kind:
        case "append":
            messages.append(random_message(rng))
        case "extend":
            messages.extend(random_message(rng) for _ in range(2))
        case "iadd":
            messages += [random_message(rng)]
        case "set_last" if size:
            messages[-1] = random_message(rng)
        case "set_any" if size:
            messages[anywhere] = random_message(rng)
        case "set_negative" if size:
            messages[-1 - anywhere] = random_message(rng)
        case "set_slice":
            messages[anywhere : anywhere + 2] = [random_message(rng)]
        case "set_extended_slice" if size >= 2:
            messages[::2] = [random_message(rng) for _ in messages[::2]]
        case "del_any" if size:
            del messages[anywhere]
        case "del_slice":
            del messages[anywhere:]
        case "insert":
            messages.insert(anywhere, random_message(rng))
        case "insert_past_end":
            messages.insert(size + 5, random_message(rng))
        case "pop_last" if size:
            messages.pop()
        case "pop_any" if size:
            messages.pop(anywhere)
        case "remove" if size:
            messages.remove(messages[anywhere])
        case "clear":
            messages.clear()
        case "reverse":
            messages.reverse()
        case "sort":
            messages.sort(key=lambda m: json.dumps(m, sort_keys=True))
        case "imul_zero" if rng.random() < 0.2:
            messages *= 0
        case "imul_two" if size < 40:
            messages *= 2
        case _:
            messages.append(random_message(rng))


@pytest.mark.parametrize("seed", range(5))
def test_any_edit_of_the_list_keeps_the_sets_exact(seed: int) -> None:
    rng = random.Random(seed)
    messages = MessageList()
    kept = DiscoveredTools()
    log = SentLog(cap=3)
    for step in range(400):
        kind = rng.choice(EDITS)
        edit(messages, rng, kind)
        if rng.random() < 0.5:
            continue  # several edits between two requests
        assert kept.names(messages) == extract_discovered_tool_names(messages), (step, kind)
        request = ModelRequest(model=MODEL, messages=tuple(messages), max_tokens=10)
        sent = log.add(request, history=messages)
        assert sent.body["messages"] == json.loads(json.dumps(list(messages))), (step, kind)


def test_a_request_not_taken_from_the_history_is_encoded_whole() -> None:
    messages = MessageList([{"role": "user", "content": "one"}])
    log = SentLog()
    log.add(ModelRequest(model=MODEL, messages=tuple(messages), max_tokens=10), history=messages)
    other = ({"role": "user", "content": "two"},)  # a careless caller: not that history
    sent = log.add(ModelRequest(model=MODEL, messages=other, max_tokens=10), history=messages)
    assert sent.body["messages"] == [{"role": "user", "content": "two"}]
    messages.append({"role": "assistant", "content": "three"})
    both = tuple(messages)
    sent = log.add(ModelRequest(model=MODEL, messages=both, max_tokens=10), history=messages)
    assert sent.body["messages"] == list(both)


def test_copies_of_the_conversation_are_plain_lists() -> None:
    messages = MessageList([{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    messages.watch()
    for duplicate in (
        copy.copy(messages),
        copy.deepcopy(messages),
        pickle.loads(pickle.dumps(messages)),
        messages[:],
    ):
        assert type(duplicate) is list and duplicate == messages
    deep = copy.deepcopy(messages)
    deep[0]["content"].clear()
    assert messages[0]["content"] == [{"type": "text", "text": "hi"}]
    assert json.loads(json.dumps(messages)) == list(messages)
