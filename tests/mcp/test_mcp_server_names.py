"""MCP names are parsed, not split (issue 40, part 7).

A server named ``files_`` gave ``mcp__files___delete``, which the engine read as server
``files``: ``deny: ["mcp__files_"]`` removed nothing. Now a server name that would make
``mcp__<server>__<tool>`` ambiguous is renamed (with a notice), each MCP tool keeps its
server and tool as two names, and rules match those names.

- Hypothesis, over server and tool names with ``_``, ``__``, ``-``, unicode and long names:
  every tool name is valid for the API, unique, and parses back to its own (server, tool);
  a deny on a server by its name removes exactly that server's tools, in the rule engine
  and in what is sent to the model; a deny by a server's configured (old) name never misses
  its tools; a deny of one tool removes that tool alone.
- The attack with real MCP server processes (``files_`` beside ``files``) and the deny rule
  in the settings file, through a real Session in every mode: the renamed server's tools are
  never offered nor run, the other server's are.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import mcp_types
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from jupyter_toolhost import Session
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.core.types import (
    PermissionAllow,
    PermissionAsk,
    PermissionDeny,
    PermissionMode,
    ToolPermissionContext,
)
from jupyter_toolhost.mcp import McpManager
from jupyter_toolhost.mcp.convert import build_mcp_tool
from jupyter_toolhost.mcp.naming import clean_server_name, parse_name, server_names, tool_names
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.permissions import PureResolver, compile_rules, decide
from jupyter_toolhost.permissions.engine import tools_denied_whole
from jupyter_toolhost.permissions.rules.rules import RuleError, parse_rule
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

DEMO = str(Path(__file__).parents[1] / "mcp_servers" / "demo_server.py")
CWD = "/home/user/project"
API_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
MODES: tuple[PermissionMode, ...] = (
    "default",
    "acceptEdits",
    "auto",
    "bypassPermissions",
    "plan",
    "dontAsk",
)

_pieces = st.sampled_from(["_", "__", "-", "a", "b", "files", "é", "日本", ".", " ", "x" * 70])
names = st.lists(_pieces, min_size=1, max_size=6).map("".join)


async def _never(input: Any, context: Any) -> Any:
    raise AssertionError("not called in this test")


def build(servers: dict[str, list[str]]) -> list[Tool[Any]]:
    """The tools of `servers` (configured name → its tools' own names), named as the
    manager names them."""
    api = server_names(servers)
    tools: list[Tool[Any]] = []
    for configured, remote in servers.items():
        named = tool_names(api[configured], remote)
        for tool in remote:
            spec = mcp_types.Tool(name=tool, input_schema={"type": "object"})
            tools.append(
                build_mcp_tool(
                    api[configured], spec, _never, name=named[tool], configured_server=configured
                )
            )
    return tools


def denied(tools: list[Tool[Any]], rule: str) -> set[str]:
    """What a deny rule removes, asked both ways: tools withheld from the model, and the
    engine's decision on a call."""
    rules = {"project": {"deny": (rule,)}}
    compiled = compile_rules(rules, cwd=CWD, home="/home/user")
    context = ToolPermissionContext(rules=rules)  # type: ignore[arg-type]
    whole = tools_denied_whole(tools, context, cwd=CWD, home="/home/user")
    decided = {
        t.name
        for t in tools
        if isinstance(
            decide(
                tool=t,
                input=t.input_model.model_validate({}),
                rules=compiled,
                mode="bypassPermissions",
                cwd=CWD,
                resolver=PureResolver(home="/home/user"),
            ),
            PermissionDeny,
        )
    }
    assert whole == decided, (rule, whole, decided)
    return whole


@settings(
    max_examples=int(os.environ.get("JUPYTER_TOOLHOST_NAME_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.dictionaries(names, st.lists(names, min_size=1, max_size=3, unique=True), max_size=4))
@example({"-_": ["_", "__"]})  # old spelling mcp__-____ is the new name of '__'
@example({"-___": ["_", "__"]})  # old server spelling mcp__-___ is the new name of '_'
def test_names_round_trip_and_server_denies_are_exact(servers: dict[str, list[str]]) -> None:
    servers = {k: v for k, v in servers.items() if k.strip()}
    tools = build(servers)
    api = server_names(servers)
    assert len(set(api.values())) == len(api)
    assert all(clean_server_name(name) for name in api.values())
    by_server: dict[str, set[str]] = {}
    pairs: set[tuple[str, str]] = set()
    for tool in tools:
        names = tool.mcp_name
        assert names is not None
        assert API_NAME.match(tool.name), tool.name
        assert parse_name(tool.name) == (names.server, names.tool)  # the right pair back
        assert api[names.configured_server] == names.server
        pairs.add((names.configured_server, names.remote_tool))
        by_server.setdefault(names.configured_server, set()).add(tool.name)
    assert len({t.name for t in tools}) == len(tools) == len(pairs)

    for configured, own in by_server.items():
        server = api[configured]
        for rule in (f"mcp__{server}", f"mcp__{server}__*"):
            assert denied(tools, rule) == own, rule  # never misses, never hits another's
        try:
            spelled = parse_rule(f"mcp__{configured}").tool == f"mcp__{configured}"
        except RuleError:
            spelled = False
        if not spelled:
            continue  # a name no rule can spell (a dot, a space): the new name serves
        assert own <= denied(tools, f"mcp__{configured}")  # the old name never misses
    for tool in tools:
        # A rule's text names a tool by its name, or by the name it had before its server
        # was renamed: an ambiguous text denies every tool it can name (fail closed).
        assert denied(tools, tool.name) == {t.name for t in tools if tool.name in spellings(t)}


def spellings(tool: Tool[Any]) -> set[str]:
    """The texts a deny rule may name `tool` by: its name, and when its server was renamed,
    ``mcp__<configured>`` and ``mcp__<configured>__<tool>``, as `mcp.naming` promises."""
    names = tool.mcp_name
    assert names is not None
    old = {f"mcp__{names.configured_server}", f"mcp__{names.configured_server}__{names.tool}"}
    return {tool.name} | (old if names.configured_server != names.server else set())


def test_the_renaming_is_clean_and_leaves_clean_names_alone() -> None:
    api = server_names(["files", "files_", "_files", "a__b", "my.db", "日本", "ok-1"])
    assert api["files"] == "files" and api["ok-1"] == "ok-1"
    assert api["files_"].startswith("files_") and api["files_"] != "files"
    assert api["a__b"] == "a_b" and api["my.db"] == "my_db" and api["日本"] == "server"
    assert api["_files"] not in ("files", api["files_"])
    assert parse_name("mcp__files___delete") == ("files", "_delete")
    assert parse_name("mcp__a__b__c") == ("a", "b__c")


def settings_file(root: Path, deny: list[str]) -> None:
    (root / ".toolhost").mkdir(exist_ok=True)
    server = {"command": sys.executable, "args": [DEMO]}
    (root / ".toolhost" / "settings.json").write_text(
        json.dumps(
            {
                "permissions": {"deny": deny},
                "mcpServers": {"files_": server, "files": server},
            }
        )
    )


def offered(body: dict[str, Any]) -> set[str]:
    return {t["name"] for t in body.get("tools", [])}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", MODES)
async def test_deny_on_files_underscore_removes_its_tools(tmp_path: Path, mode: str) -> None:
    settings_file(tmp_path, ["mcp__files_"])
    manager = McpManager.from_settings(tmp_path, home=tmp_path / "home")
    renamed = manager.server_name("files_")
    assert renamed not in ("files_", "files") and clean_server_name(renamed)
    wipe = f"mcp__{renamed}__wipe_notes"
    script = [
        Turn(
            [
                tool_use(wipe, {}),
                tool_use("mcp__files___wipe_notes", {}),  # the old, ambiguous spelling
                tool_use("mcp__files__add", {"a": 1, "b": 2}),
            ]
        ),
        Turn([text("done")]),
    ]
    with MessagesServer(script) as server:
        session = Session(
            tools=[],
            model=AnthropicModel(base_url=server.base_url, api_key="test-key"),
            model_id="claude-test",
            cwd=tmp_path,
            permission_mode=mode,  # type: ignore[arg-type]
            mcp=manager,
            rules=[("mcp__files__add", "allow")],
        )
        try:
            await session.run("Wipe the notes of files_")
            status = "\n".join(str(row) for row in manager.status())
        finally:
            await session.close()
        bodies = [r.body for r in server.requests if r.path == "/v1/messages"]
        assert server.errors == [], server.errors
    assert f"'files_' is {renamed!r}" in status and f"mcp__{renamed}" in status, status
    assert all(not any(n.startswith(f"mcp__{renamed}__") for n in offered(b)) for b in bodies)
    results = {
        block["tool_use_id"]: json.dumps(block.get("content"))
        for block in bodies[-1]["messages"][-1]["content"]
        if block.get("type") == "tool_result"
    }
    first, second, third = results.values()
    assert "all notes removed" not in first and "all notes removed" not in second
    assert "plan mode" not in first and "plan mode" not in second, first  # gone, in every mode
    if mode == "plan":  # the other server's tool is not withheld: plan mode refuses it
        assert "plan mode" in third, third
    else:  # the other server's tool, allowed by its rule, still runs
        assert "3" in third, third


@pytest.mark.timeout(120)
def test_the_cell_and_agent_mcp_say_what_the_server_is_now_called(tmp_path: Path) -> None:
    """In a real kernel: the first cell of a conversation warns that `files_` was renamed,
    `%agent mcp` shows it under the server, and the deny in the settings file holds."""
    from kernel_helpers import agent_kernel

    settings_file(tmp_path, ["mcp__files_"])
    renamed = McpManager.from_settings(tmp_path, home=tmp_path).server_name("files_")
    script = [
        Turn([tool_use(f"mcp__{renamed}__wipe_notes", {})]),
        Turn([text("done")]),
    ]
    with MessagesServer(script) as server:
        kernel = agent_kernel(tmp_path, server.base_url)
        try:
            run = kernel.run("%%agent --mode bypassPermissions\nWipe the notes", timeout=60)
            listed = kernel.run("%agent mcp")
        finally:
            kernel.close()
        results = server.requests[-1].body["messages"][-1]["content"]
    assert run.status == "ok", run.text()
    shown = run.text()
    assert f"'files_' is {renamed!r}" in shown and f"name it mcp__{renamed}" in shown, shown
    assert shown.count(f"'files_' is {renamed!r}") == 1
    assert f"'files_' is {renamed!r}" in listed.text(), listed.text()
    assert "all notes removed" not in json.dumps(results)


@pytest.mark.parametrize("mode", MODES)
def test_old_names_deny_and_ask_but_never_allow(mode: PermissionMode) -> None:
    """An old name that held ``__`` (``a__b``, now ``a_b``) could spell a tool of server
    ``a``: as an allow rule it allows nothing; as deny or ask it holds for ``a__b``."""
    tools = {t.name: t for t in build({"a__b": ["c"], "a": ["b__c", "d"]})}
    renamed = tools["mcp__a_b__c"]

    def decision(tool: Tool[Any], **rules: list[str]) -> Any:
        compiled = compile_rules({"project": rules}, cwd=CWD, home="/home/user")
        return decide(
            tool=tool,
            input=tool.input_model.model_validate({}),
            rules=compiled,
            mode=mode,
            cwd=CWD,
            resolver=PureResolver(home="/home/user"),
        )

    allowed = decision(renamed, allow=["mcp__a__b"])
    assert not isinstance(allowed, PermissionAllow) or allowed.reason.kind != "rule"
    assert isinstance(decision(renamed, allow=["mcp__a_b"]), PermissionAllow | PermissionDeny)
    if mode not in ("plan", "dontAsk"):  # those modes refuse what no rule allows
        assert isinstance(decision(renamed, allow=["mcp__a_b"]), PermissionAllow)

    def by_rule(found: Any) -> bool:
        return found.reason is not None and found.reason.kind == "rule"

    denied = decision(renamed, deny=["mcp__a__b"])
    assert isinstance(denied, PermissionDeny) and by_rule(denied)
    asked = decision(renamed, ask=["mcp__a__b__c"])
    assert isinstance(asked, PermissionAsk | PermissionDeny)
    assert by_rule(asked) or mode == "plan"  # plan refuses it before any ask rule
    for other in ("mcp__a__d", "mcp__a__b__c"):  # server a's tools: not named by the old name
        assert not by_rule(decision(tools[other], deny=["mcp__a__b"])), other
