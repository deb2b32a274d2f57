"""Each permission mode × each tool class, through the pure `decide()` (table-driven)."""

from __future__ import annotations

from typing import Any

import pytest
from test_permissions_tools import CUSTOM, EDIT, MCP, READ, SHELL, WEB, run_decide

from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.core.types import PERMISSION_MODES, PermissionMode
from jupyter_toolhost.permissions import PLAN_MODE_MESSAGE

CLASSES: dict[str, tuple[Tool[Any], dict[str, Any]]] = {
    "read": (READ, {"file_path": "notes.md"}),
    "write": (EDIT, {"file_path": "notes.md"}),
    "shell_read": (SHELL, {"command": "ls -la src | wc -l"}),
    "shell_write": (SHELL, {"command": "rm old.txt"}),
    "shell_create": (SHELL, {"command": "mkdir build && touch build/x"}),
    "web": (WEB, {"url": "https://example.com/page"}),
    "mcp": (MCP, {"value": "bug"}),
    "custom": (CUSTOM, {"value": "prod"}),
}
COLUMNS = list(CLASSES)
# fmt: off
TABLE: dict[PermissionMode, list[str]] = {
    #                    read     write    sh_read  sh_write sh_create web      mcp      custom
    "default":           ["allow", "ask",   "allow", "ask",   "ask",    "ask",   "ask",   "ask"],
    "acceptEdits":       ["allow", "allow", "allow", "ask",   "allow",  "ask",   "ask",   "ask"],
    "bypassPermissions": ["allow", "allow", "allow", "allow", "allow",  "allow", "allow", "allow"],
    "dontAsk":           ["allow", "deny",  "allow", "deny",  "deny",   "deny",  "deny",  "deny"],
    "plan":              ["allow", "deny",  "allow", "deny",  "deny",   "ask",   "deny",  "deny"],
    "auto":              ["allow", "ask",   "allow", "ask",   "ask",    "ask",   "ask",   "ask"],
}
# fmt: on
CELLS = [(mode, column, TABLE[mode][i]) for mode in TABLE for i, column in enumerate(COLUMNS)]


def test_the_table_covers_every_mode() -> None:
    assert set(TABLE) == set(PERMISSION_MODES)


@pytest.mark.parametrize(("mode", "column", "expected"), CELLS)
def test_mode_by_tool_class(mode: PermissionMode, column: str, expected: str) -> None:
    tool, raw = CLASSES[column]
    result = run_decide(tool, raw, mode=mode)
    assert result.behavior == expected, result
    assert result.reason is not None
    if expected == "deny" and mode == "plan":
        assert result.message == PLAN_MODE_MESSAGE.format(tool=tool.name)
        assert (result.reason.kind, result.reason.detail) == ("mode", "plan")
    if expected == "deny" and mode == "dontAsk":
        assert "dontAsk" in result.message
    if mode == "bypassPermissions":
        assert result.reason.kind == "mode"


@pytest.mark.parametrize("mode", PERMISSION_MODES)
def test_deny_rules_beat_every_mode(mode: PermissionMode) -> None:
    rules = {"localSettings": {"deny": ["Edit(./notes.md)", "Bash(rm:*)"]}}
    for tool, raw in (CLASSES["write"], CLASSES["shell_write"]):
        result = run_decide(tool, raw, mode=mode, rules=rules)
        assert result.behavior == "deny"
        assert result.reason is not None and result.reason.kind == "rule"
        assert result.reason.source == "/home/user/project/.toolhost/settings.local.json"


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "bypassPermissions", "auto"])
def test_ask_rules_are_not_bypassed(mode: PermissionMode) -> None:
    rules = {"projectSettings": {"ask": ["Bash(git push:*)"], "allow": ["Bash(git push:*)"]}}
    result = run_decide(SHELL, {"command": "git push origin main"}, mode=mode, rules=rules)
    assert result.behavior == "ask"
    assert result.reason is not None and result.reason.detail == "ask rule Bash(git push:*)"


def test_accept_edits_stops_at_the_working_directories() -> None:
    outside = run_decide(EDIT, {"file_path": "/etc/hosts"}, mode="acceptEdits")
    extra = run_decide(
        EDIT, {"file_path": "/data/shared/x"}, mode="acceptEdits", working_dirs=["/data/shared"]
    )
    moved = run_decide(SHELL, {"command": "mv a.txt /tmp/a.txt"}, mode="acceptEdits")
    assert (outside.behavior, extra.behavior, moved.behavior) == ("ask", "allow", "ask")
