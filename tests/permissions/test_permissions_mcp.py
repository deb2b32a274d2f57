"""MCP annotations are scheduling hints, not permission: a real MCP server process.

The demo server's ``add`` declares ``readOnlyHint: true``. The MCP specification says a
client must treat annotations as untrusted unless the server is trusted, and Claude Code asks
before an MCP tool unless a rule allows it; so does the engine here. ``trustAnnotations`` on
the server's entry (off by default) makes the hint count as a built-in read-only flag does.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.core.types import (
    PermissionAllow,
    PermissionAsk,
    PermissionDeny,
    PermissionMode,
)
from jupyter_toolhost.mcp import McpManager, McpServerConfig, parse_server_config
from jupyter_toolhost.permissions import PureResolver, compile_rules, decide

DEMO = str(Path(__file__).parents[1] / "mcp_servers" / "demo_server.py")
CWD = "/home/user/project"


def _decide(tool: Tool[Any], mode: PermissionMode, allow: list[str] | None = None) -> Any:
    rules = {"project": {"allow": allow or [], "deny": ["Bash(rm:*)"]}}
    return decide(
        tool=tool,
        input=tool.input_model.model_validate({"a": 1, "b": 2}),
        rules=compile_rules(rules, cwd=CWD, home="/home/user"),
        mode=mode,
        cwd=CWD,
        resolver=PureResolver(home="/home/user"),
    )


async def _tools(config: McpServerConfig) -> dict[str, Tool[Any]]:
    manager = McpManager([config])
    try:
        await manager.start()
        return {t.name: t for t in manager.tools()}
    finally:
        await manager.close()


@pytest.mark.timeout(90)
async def test_a_read_only_hint_schedules_but_never_allows() -> None:
    tools = await _tools(McpServerConfig.stdio("demo", sys.executable, DEMO))
    add = tools["mcp__demo__add"]
    assert add.flag(add.is_read_only, None) and add.flag(add.is_concurrency_safe, None)

    assert isinstance(_decide(add, "default"), PermissionAsk)
    assert isinstance(_decide(add, "acceptEdits"), PermissionAsk)
    assert isinstance(_decide(add, "auto"), PermissionAsk)
    assert isinstance(_decide(add, "plan"), PermissionDeny)
    assert isinstance(_decide(add, "dontAsk"), PermissionDeny)
    for rule in ("mcp__demo", "mcp__demo__add", "mcp__demo__*"):
        allowed = _decide(add, "default", [rule])
        assert isinstance(allowed, PermissionAllow) and allowed.reason is not None
        assert allowed.reason.kind == "rule", rule
    assert isinstance(_decide(add, "default", ["mcp__other"]), PermissionAsk)


@pytest.mark.timeout(90)
async def test_a_trusted_server_s_read_only_hint_counts() -> None:
    config = parse_server_config(
        "demo", {"command": sys.executable, "args": [DEMO], "trustAnnotations": True}
    )
    assert config.trust_annotations
    tools = await _tools(config)
    allowed = _decide(tools["mcp__demo__add"], "default")
    assert isinstance(allowed, PermissionAllow), allowed
    assert isinstance(_decide(tools["mcp__demo__add"], "plan"), PermissionAllow)
    wipe = tools["mcp__demo__wipe_notes"]  # not read-only: trust does not make it so
    assert isinstance(_decide(wipe, "default"), PermissionAsk)


def test_trust_is_off_by_default_and_must_be_a_boolean() -> None:
    assert not parse_server_config("demo", {"command": "x"}).trust_annotations
    from jupyter_toolhost.mcp import McpConfigError

    with pytest.raises(
        McpConfigError, match=r"mcpServers\.demo\.trustAnnotations: must be true or false"
    ):
        parse_server_config("demo", {"command": "x", "trustAnnotations": "yes"})
