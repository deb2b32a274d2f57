"""A subagent gets only what its parent may use: tools (its type's list cut to the parent's
pool, after deny rules), permission rules and mode, and the deferred tools its parent found.

The real session, loop and permission engine, the real client against the loopback server;
rules come from a real `.toolhost/settings.json` in the session's working directory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from session_support import (
    Router,
    ScriptedApprover,
    deploy_tool,
    last_results,
    offered_names,
    result_text,
    session_for,
    tool_names,
)

from jupyter_toolhost import build_tool
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.permissions.api import ApprovalDecision
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.tools import agent, read, send_message, write


def settings(root: Path, **permissions: Any) -> None:
    folder = root / ".toolhost"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "settings.json").write_text(json.dumps({"permissions": permissions}))


def agent_type(root: Path, name: str, tools: list[str]) -> None:
    folder = root / ".toolhost" / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    listed = ", ".join(tools)
    (folder / f"{name}.md").write_text(
        f"---\nname: {name}\ndescription: {name} agent\ntools: [{listed}]\n---\nYou are {name}.\n"
    )


class GizmoInput(BaseModel):
    size: int


def gizmo_tool() -> Tool[GizmoInput]:
    return build_tool(
        name="Gizmo",
        input_model=GizmoInput,
        call=lambda input, context: f"gizmo of size {input.size}",
        description="Builds a gizmo of a given size.",
        read_only=True,
        should_defer=True,
        search_hint="build a gizmo",
    )


def start(marker: str, subagent_type: str = "general-purpose") -> Turn:
    job = {"description": marker, "prompt": f"{marker}: go", "subagent_type": subagent_type}
    return Turn([tool_use("Agent", job)])


async def test_type_tool_list_is_cut_to_what_the_parent_may_use(tmp_path: Path) -> None:
    # The type asks for Read, Write (denied whole to the parent), Bash (not in the parent's
    # pool) and Agent (main agent only): it gets Read alone.
    settings(tmp_path, deny=["Write"])
    agent_type(tmp_path, "greedy", ["Read", "Write", "Bash", "Agent"])
    (tmp_path / "notes.txt").write_text("hello\n")
    router = Router(
        {
            "MAIN-CUT": [start("SUB-GREEDY", "greedy"), Turn([text("done")])],
            "SUB-GREEDY": [
                # Calling a tool it was not given, by name, is refused like an unknown tool.
                Turn(
                    [
                        tool_use("Write", {"file_path": "pwned.txt", "content": "x"}),
                        tool_use("Read", {"file_path": "notes.txt"}),
                    ]
                ),
                Turn([text("read the notes")]),
            ],
        }
    )
    with MessagesServer(router) as server:
        tools = [agent.make_tool(), send_message.make_tool(), read.make_tool(), write.make_tool()]
        session = session_for(server, tmp_path, tools)
        assert await session.run("MAIN-CUT") == "done"

    assert server.errors == []
    assert "Write" not in offered_names(router.seen["MAIN-CUT"][0])
    first = router.seen["SUB-GREEDY"][0]
    assert first["system"][0]["text"].startswith("You are greedy.")
    names = offered_names(first)
    assert "Read" in names
    assert not {"Write", "Bash", "Agent", "SendMessage"} & set(names)
    refused, done = last_results(router.seen["SUB-GREEDY"][1])
    assert refused.get("is_error") and "Write" in result_text(refused)
    assert not done.get("is_error") and "hello" in result_text(done)
    assert not (tmp_path / "pwned.txt").exists()


async def test_subagent_keeps_the_parents_rules_and_mode(tmp_path: Path) -> None:
    # acceptEdits: edits run without asking; a deny rule on a folder still holds.
    settings(tmp_path, deny=["Write(./secret/**)"])
    (tmp_path / "secret").mkdir()
    approver = ScriptedApprover()  # any ask fails the test: none is expected
    router = Router(
        {
            "MAIN-RULES": [start("SUB-RULES"), Turn([text("done")])],
            "SUB-RULES": [
                Turn(
                    [
                        tool_use("Write", {"file_path": "ok.txt", "content": "fine\n"}),
                        tool_use("Write", {"file_path": "secret/key.txt", "content": "leak"}),
                        tool_use("Write", {"file_path": "./x/../secret/k2.txt", "content": "leak"}),
                    ]
                ),
                Turn([text("wrote what I could")]),
            ],
        }
    )
    with MessagesServer(router) as server:
        tools = [agent.make_tool(), write.make_tool()]
        session = session_for(
            server, tmp_path, tools, approver=approver, permission_mode="acceptEdits"
        )
        assert await session.run("MAIN-RULES") == "done"

    assert server.errors == []
    ok, denied, sneaky = last_results(router.seen["SUB-RULES"][1])
    assert not ok.get("is_error") and (tmp_path / "ok.txt").read_text() == "fine\n"
    assert denied.get("is_error") and sneaky.get("is_error")
    assert list((tmp_path / "secret").iterdir()) == []
    assert approver.asked == []


async def test_subagent_in_dont_ask_mode_is_denied_what_would_ask(tmp_path: Path) -> None:
    approver = ScriptedApprover()
    router = Router(
        {
            "MAIN-DONT": [start("SUB-DONT"), Turn([text("done")])],
            "SUB-DONT": [
                Turn([tool_use("Deploy", {"target": "prod"})]),
                Turn([text("could not deploy")]),
            ],
        }
    )
    with MessagesServer(router) as server:
        tools = [agent.make_tool(), deploy_tool()]
        session = session_for(server, tmp_path, tools, approver=approver, permission_mode="dontAsk")
        assert await session.run("MAIN-DONT") == "done"
        # The mode is the session's, live: switch it and a new subagent is asked about.
        approver.choices.append(ApprovalDecision("allow"))
        session.set_mode("default")
        router.routes["MAIN-DONT"] += [start("SUB-DEFAULT"), Turn([text("again")])]
        router.routes["SUB-DEFAULT"] = [
            Turn([tool_use("Deploy", {"target": "prod"})]),
            Turn([text("deployed")]),
        ]
        router.seen["SUB-DEFAULT"] = []
        assert await session.run("once more") == "again"

    assert server.errors == []
    [denied] = last_results(router.seen["SUB-DONT"][1])
    assert denied.get("is_error")
    [asked] = approver.asked
    assert asked.tool_name == "Deploy" and asked.agent_id is not None
    [allowed] = last_results(router.seen["SUB-DEFAULT"][1])
    assert result_text(allowed) == "deployed to prod"


@pytest.mark.parametrize("disclosure", ["defer_loading", "discovered"])
async def test_subagent_starts_with_the_deferred_tools_its_parent_found(
    tmp_path: Path, disclosure: str
) -> None:
    agent_type(tmp_path, "reader", ["Read"])
    router = Router(
        {
            "MAIN-FOUND": [
                start("SUB-BEFORE"),
                Turn([tool_use("ToolSearch", {"query": "select:Gizmo"})]),
                Turn([start("SUB-AFTER").content[0], start("SUB-NARROW", "reader").content[0]]),
                Turn([text("done")]),
            ],
            "SUB-BEFORE": [Turn([text("no gizmo yet")])],
            "SUB-AFTER": [Turn([tool_use("Gizmo", {"size": 3})]), Turn([text("built one")])],
            "SUB-NARROW": [Turn([text("only reading")])],
        }
    )
    with MessagesServer(router) as server:
        tools = [agent.make_tool(), read.make_tool(), gizmo_tool()]
        session = session_for(server, tmp_path, tools, disclosure=disclosure)
        assert await session.run("MAIN-FOUND") == "done"

    assert server.errors == []
    before = router.seen["SUB-BEFORE"][0]
    assert "Gizmo" not in tool_names(before) and "Gizmo" in offered_names(before)
    after = router.seen["SUB-AFTER"][0]
    assert "Gizmo" in tool_names(after)
    [built] = last_results(router.seen["SUB-AFTER"][1])
    assert result_text(built) == "gizmo of size 3"
    # A type without Gizmo in its list does not get it, discovered or not.
    narrow = router.seen["SUB-NARROW"][0]
    assert "Gizmo" not in offered_names(narrow)
