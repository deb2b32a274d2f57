"""`SessionConfig`: one typed object a session is made from, and how tools join a session.

`Session(**options)` and `Session.from_config(config)` make the same session; the options
are the config's fields, listed once. Tools hear of the session through their declared
`on_session_start` hook and the loop adds the deferred-tool finder by its flag: the agent
package reaches the tools only through the package's root. Real loop, real `anthropic`
client, loopback Messages server.
"""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from session_support import MODEL, Router, session_for
from test_import_structure import imports_of, source_files

from jupyter_toolhost import Session, SessionConfig
from jupyter_toolhost.core.context import SandboxOptions, ToolUseContext
from jupyter_toolhost.core.tool import Tool, build_tool
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.tools import bash, read
from jupyter_toolhost.tools.bash import sandbox

ROOT = Path(__file__).resolve().parents[2] / "jupyter_toolhost"
TOOLS_ROOT = ("builtin_tools", "deferred_tool_finder")
"""What `jupyter_toolhost.tools` itself offers a session."""


class _Nothing(BaseModel):
    pass


def _deferred_tool(name: str = "Gizmo") -> Tool[_Nothing]:
    return build_tool(
        name=name,
        input_model=_Nothing,
        call=lambda _input, _context: "gizmo",
        description="A deferred tool.",
        should_defer=True,
    )


def test_the_options_are_the_configs_fields_listed_once() -> None:
    fields = [f.name for f in dataclasses.fields(SessionConfig)]
    options = list(inspect.signature(Session).parameters)
    assert options == fields
    assert len(fields) == 28
    with pytest.raises(TypeError, match="no_such_option"):
        Session(no_such_option=1)  # type: ignore[call-arg]


def test_from_config_and_keywords_make_the_same_session(tmp_path: Path) -> None:
    with MessagesServer() as server:
        model = AnthropicModel(base_url=server.base_url, api_key="test-key")
        config = SessionConfig(
            tools=[read.make_tool()], model=model, model_id=MODEL, cwd=tmp_path, max_turns=7
        )
        made = Session.from_config(config)
        given = Session(
            tools=[read.make_tool()], model=model, model_id=MODEL, cwd=tmp_path, max_turns=7
        )
    assert made.config is config
    assert given.config == dataclasses.replace(config, tools=given.config.tools)
    for session in (made, given):
        assert session.settings.max_turns == 7
        assert [t.name for t in session.tools] == ["Read"]
        assert session.model_id == MODEL
    made.settings.max_turns = 3  # the running limits change; the config stays as given
    assert config.max_turns == 7


def test_a_bad_option_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="disclosure must be one of"):
        Session(cwd=tmp_path, tools=[], disclosure="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unique"):
        Session(cwd=tmp_path, tools=[read.make_tool(), read.make_tool()], load_settings=False)


def test_a_tool_hears_of_each_session_that_takes_it(tmp_path: Path) -> None:
    started: list[ToolUseContext] = []
    probe = dataclasses.replace(_deferred_tool("Probe"), on_session_start=started.append)
    with MessagesServer() as server:
        first = session_for(server, tmp_path, [probe])
        second = session_for(server, tmp_path / "b", [read.make_tool()])
        assert started == [first.context]
        second.set_tools([*second.tools, probe])
        second.set_tools([*second.tools])  # already in the pool: not started again
    assert started == [first.context, second.context]


def test_the_sandbox_settings_are_read_when_a_session_takes_bash(
    tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setenv(sandbox.SANDBOX_ENV, "0")
    with_bash, without = SandboxOptions(), SandboxOptions()
    with MessagesServer() as server:
        session_for(server, tmp_path, [bash.make_tool()], sandbox=with_bash)
        later = session_for(server, tmp_path / "b", [read.make_tool()], sandbox=without)
        assert with_bash.environment == {sandbox.SANDBOX_ENV: "0", sandbox.NETWORK_ENV: ""}
        assert without.environment is None  # no tool of the session reads it
        monkeypatch.setenv(sandbox.SANDBOX_ENV, "1")
        later.set_tools([*later.tools, bash.make_tool()])
    assert without.environment is not None and without.environment[sandbox.SANDBOX_ENV] == "1"
    assert sandbox.setting(later.context) == "required"


async def test_the_finder_joins_any_pool_while_a_tool_is_deferred(tmp_path: Path) -> None:
    router = Router(
        {
            "FIND": [
                Turn([tool_use("ToolSearch", {"query": "select:Gizmo"})]),
                Turn([text("Found.")]),
            ],
            "PLAIN": [Turn([text("Plain.")])],
        }
    )
    with MessagesServer(router) as server:
        deferred = session_for(server, tmp_path, [read.make_tool(), _deferred_tool()])
        plain = session_for(server, tmp_path / "b", [read.make_tool()])
        assert await deferred.run("FIND") == "Found."
        assert await plain.run("PLAIN") == "Plain."
    first, second = ([tool["name"] for tool in body["tools"]] for body in router.seen["FIND"])
    assert first[:2] == ["Read", "ToolSearch"] and "Gizmo" not in first
    assert "Gizmo" in second  # found through the finder the loop added
    assert [tool["name"] for tool in router.seen["PLAIN"][0]["tools"]] == ["Read"]
    assert [t.name for t in deferred.tools] == ["Read", "Gizmo"]  # the pool given, as given


def test_the_agent_reaches_the_tools_only_through_the_packages_root() -> None:
    reached = sorted(
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in source_files(ROOT, "agent")
        for name, line in imports_of(path, ROOT)
        if name.startswith("jupyter_toolhost.tools.")
        and name.removeprefix("jupyter_toolhost.tools.") not in TOOLS_ROOT
    )
    assert reached == []
    taken = {
        name
        for path in source_files(ROOT, "agent")
        for name, _ in imports_of(path, ROOT)
        if name.startswith("jupyter_toolhost.tools")
    }
    assert "jupyter_toolhost.tools" in taken, "the check lost the agent's imports"
