"""Any JSON value at any field of an `mcpServers` entry: that server's error names the file and
the field (``mcpServers.db.args[1]``) with what to write, and the other servers still load."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from json_strategies import JSON

from jupyter_toolhost.mcp.config import McpConfigError, load_mcp_configs, parse_server_config

DB: dict[str, Any] = {
    "command": "uvx",
    "args": ["mcp-server-sqlite", "--db-path", "data.db"],
    "env": {"LOG_LEVEL": "debug"},
    "cwd": "tools",
    "headers": {"X-Team": "data"},
    "alwaysLoad": True,
    "timeout": 5,
    "toolTimeout": 60,
    "trustAnnotations": False,
}
OTHERS: dict[str, Any] = {
    "web": {"type": "http", "url": "https://example.com/mcp", "headers": {"A": "b"}},
    "notes": {"command": "notes-server"},
}


def write(tmp_path: Path, servers: dict[str, object]) -> Path:
    path = tmp_path / "project" / ".toolhost" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers, "permissions": {}}, indent=2))
    return path


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(field=st.sampled_from([None, *DB]), value=JSON)
def test_any_value_at_any_field_names_the_file_and_field_and_spares_the_others(
    tmp_path: Path, field: str | None, value: object
) -> None:
    entry = value if field is None else {**DB, field: value}
    path = write(tmp_path, {"db": entry, **OTHERS})
    found = load_mcp_configs(path.parent.parent, home=tmp_path / "home")
    assert set(found.servers) - {"db"} == set(OTHERS)
    assert found.servers["web"].url == "https://example.com/mcp"
    assert found.servers["notes"].command == "notes-server"
    if "db" in found.servers:
        assert "db" not in found.errors
        return
    error = found.errors["db"]
    where = "mcpServers.db" if field is None else f"mcpServers.db.{field}"
    assert error.startswith(f"{path}: {where}"), error
    problems = error.removeprefix(f"{path}: ").split("; mcpServers.")
    assert all(p.startswith(where.removeprefix("mcpServers.")) for p in problems[1:]), error


def test_each_problem_of_an_entry_is_named_with_what_to_write() -> None:
    raw = {"command": "c", "args": ["a", 3], "env": {"A": 1}, "timeout": True}
    with pytest.raises(McpConfigError) as raised:
        parse_server_config("db", raw)
    assert str(raised.value).split("; ") == [
        "mcpServers.db.timeout: must be a positive number of seconds, not true",
        "mcpServers.db.args[1]: must be a string, not the number 3",
        "mcpServers.db.env.A: must be a string, not the number 1",
    ]


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ({"type": "sse", "url": "x"}, "mcpServers.db.type: unknown type 'sse'"),
        ({"type": 5}, 'mcpServers.db.type: must be "stdio" or "http", not the number 5'),
        ({"type": "http"}, "mcpServers.db.url: an http server needs a 'url'"),
        ({"command": ""}, "mcpServers.db.command: a stdio server needs a 'command'"),
        ({"command": "c", "env": {"T": "${NOT_SET_X1}"}}, "mcpServers.db.env.T: environment"),
        ([], "mcpServers.db: must be an object such as"),
    ],
)
def test_entry_level_problems_name_their_field(raw: object, words: str) -> None:
    with pytest.raises(McpConfigError) as raised:
        parse_server_config("db", raw)
    assert str(raised.value).startswith(words)


def test_what_was_accepted_before_still_is() -> None:
    # An http entry's stdio keys are not read; a cwd that is not text is left out; any
    # alwaysLoad value counts for its truth; unknown keys are ignored.
    web = parse_server_config(
        "web", {"type": "http", "url": "u", "args": 3, "alwaysLoad": 1, "x": {}}
    )
    assert web.always_load and web.url == "u" and web.args == ()
    local = parse_server_config("local", {"command": "c", "cwd": 3, "alwaysLoad": "yes"})
    assert local.cwd is None and local.always_load
