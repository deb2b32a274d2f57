"""MCP servers for real: a server process written with the `mcp` SDK, over stdio.

Started, listed, called through the real `Pipeline` (every result kind, annotations mapped),
crashed on purpose, restarted; a server that cannot start, one that never answers the
handshake and a call that times out each end as a clear error while the rest goes on.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from jupyter_toolhost.core.context import ToolUseContext, ToolUseOptions
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.core.types import ToolCall, ToolResult
from jupyter_toolhost.disclosure import is_deferred, tools_for_request
from jupyter_toolhost.mcp import (
    McpConfigError,
    McpManager,
    McpServerConfig,
    load_mcp_configs,
    parse_server_config,
)
from jupyter_toolhost.orchestration.pipeline import Pipeline

DEMO = str(Path(__file__).parents[1] / "mcp_servers" / "demo_server.py")


def demo(name: str = "demo", **options: Any) -> McpServerConfig:
    return McpServerConfig.stdio(name, sys.executable, DEMO, **options)


class Runner:
    """Runs calls through the real pipeline against the manager's current tools."""

    def __init__(self, manager: McpManager, tmp_path: Path) -> None:
        self.manager = manager
        self.tmp_path = tmp_path
        self.pipeline = Pipeline(results=ResultStore(tmp_path / "results"))
        self.count = 0

    async def __call__(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        self.count += 1
        context = ToolUseContext(
            options=ToolUseOptions(tools=self.manager.tools()), cwd=self.tmp_path
        )
        call = ToolCall(id=f"toolu_{self.count}", name=name, input=arguments or {})
        return await self.pipeline.run(call, context)


def tool(manager: McpManager, name: str) -> Tool[Any]:
    return next(t for t in manager.tools() if t.name == name)


@pytest.mark.timeout(90)
async def test_stdio_server_listed_called_crashed_and_restarted(tmp_path: Path) -> None:
    manager = McpManager([demo(tool_timeout=1.0)])
    run = Runner(manager, tmp_path)
    try:
        await manager.start()
        [status] = manager.status()
        assert (status.name, status.state, status.tool_count, status.error) == (
            "demo",
            "connected",
            9,
            None,
        )
        names = [t.name for t in manager.tools()]
        assert "mcp__demo__add" in names and "ReadMcpResource" in names
        assert all(is_deferred(t) and t.is_mcp for t in manager.tools())

        add = tool(manager, "mcp__demo__add")
        assert add.flag(add.is_read_only, None) and add.flag(add.is_concurrency_safe, None)
        assert add.to_api()["input_schema"]["required"] == ["a", "b"]
        wipe = tool(manager, "mcp__demo__wipe_notes")
        assert wipe.flag(wipe.is_destructive, None) and not wipe.flag(wipe.is_read_only, None)
        pixel = tool(manager, "mcp__demo__pixel")
        assert not pixel.flag(pixel.is_read_only, None), "no annotation: fail closed"

        assert (await run("mcp__demo__add", {"a": 2, "b": 40})).content == [
            {"type": "text", "text": "42"}
        ]
        image = (await run("mcp__demo__pixel")).content
        assert isinstance(image, list) and image[0]["type"] == "image"
        assert image[0]["source"]["media_type"] == "image/png"
        readme = await run("mcp__demo__readme")
        assert readme.content == [{"type": "text", "text": "[resource demo://readme]\nHello docs"}]
        refused = await run("mcp__demo__refuse", {"reason": "not today"})
        assert refused.is_error and "refused: not today" in str(refused.content)
        listed = await run("ListMcpResources")
        assert "demo://greeting" in str(listed.content)
        read = await run("ReadMcpResource", {"server": "demo", "uri": "demo://greeting"})
        assert "hello from the demo server" in str(read.content)

        slow = await run("mcp__demo__slow", {"seconds": 3})
        assert slow.is_error and "did not answer" in str(slow.content)
        assert manager.status()[0].state == "connected", "a slow call does not end the server"
        first_pid = (await run("mcp__demo__whoami")).content

        crashed = await run("mcp__demo__crash")
        assert crashed.is_error
        assert "'demo'" in str(crashed.content) and "restart" in str(crashed.content)
        [status] = manager.status()
        assert status.state == "failed" and status.tool_count == 0 and status.error
        assert manager.tools() == [], "a failed server contributes no tools"
        gone = await run("mcp__demo__add", {"a": 1, "b": 1})
        assert gone.is_error and "No such tool" in str(gone.content)

        restarted = await manager.restart("demo")
        assert restarted.state == "connected" and restarted.tool_count == 9
        assert (await run("mcp__demo__add", {"a": 1, "b": 2})).content == [
            {"type": "text", "text": "3"}
        ]
        assert (await run("mcp__demo__whoami")).content != first_pid
    finally:
        await manager.close()
    assert manager.status()[0].state == "closed"


async def test_servers_that_fail_to_start_leave_the_session_going(tmp_path: Path) -> None:
    silent = McpServerConfig.stdio(
        "silent", sys.executable, "-c", "import time; time.sleep(60)", connect_timeout=1.0
    )
    missing = McpServerConfig.stdio("missing", str(tmp_path / "no-such-command"))
    manager = McpManager([silent, missing], config_errors={"bad": "mcpServers.bad: oops"})
    try:
        await asyncio.wait_for(manager.start(), 20)
        rows = {row.name: row for row in manager.status()}
        assert rows["silent"].state == "failed"
        assert "within 1 s" in (rows["silent"].error or "")
        assert rows["missing"].state == "failed"
        assert "could not start" in (rows["missing"].error or "")
        assert rows["bad"].state == "invalid config"
        assert manager.tools() == []
        assert "missing: failed, 0 tools (stdio) — could not start" in str(rows["missing"])
    finally:
        await manager.close()


async def test_a_server_added_later_is_announced_as_a_delta(tmp_path: Path) -> None:
    from jupyter_toolhost.disclosure import DisclosureState
    from jupyter_toolhost.tools.tool_search import with_tool_search

    manager = McpManager()
    state = DisclosureState()
    try:
        first = tools_for_request(with_tool_search(manager.tools()), [], state=state)
        assert first.attachment is None and first.api_tools == []
        status = await manager.add(demo("late"))
        assert status.state == "connected"
        second = tools_for_request(with_tool_search(manager.tools()), [], state=state)
        assert [d["name"] for d in second.api_tools] == ["ToolSearch"]
        assert second.attachment is not None and "mcp__late__add" in second.attachment
        with pytest.raises(ValueError, match="already exists"):
            await manager.add(demo("late"))
    finally:
        await manager.close()


def test_config_from_settings_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLHOST_TEST_TOKEN", "s3cret")
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".toolhost").mkdir(parents=True)
    (project / ".toolhost").mkdir(parents=True)
    (home / ".toolhost" / "settings.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "files": {"command": "user-files"},
                    "web": {
                        "type": "http",
                        "url": "https://example.invalid/mcp",
                        "headers": {"Authorization": "Bearer ${TOOLHOST_TEST_TOKEN}"},
                    },
                }
            }
        )
    )
    (project / ".toolhost" / "settings.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "files": {
                        "command": "npx",
                        "args": ["-y", "files-server", "${HOME_DIR:-/data}"],
                        "env": {"LEVEL": "debug"},
                        "alwaysLoad": True,
                        "timeout": 5,
                    },
                    "broken": {"type": "sse", "url": "x"},
                    "bad name": {"command": "x"},
                }
            }
        )
    )
    found = load_mcp_configs(project, home=home)
    files = found.servers["files"]
    assert (files.command, files.args, dict(files.env)) == (
        "npx",
        ("-y", "files-server", "/data"),
        {"LEVEL": "debug"},
    )
    assert files.always_load and files.connect_timeout == 5
    assert files.source == str(project / ".toolhost" / "settings.json")
    web = found.servers["web"]
    assert web.transport == "http" and web.headers["Authorization"] == "Bearer s3cret"
    assert "not supported" in found.errors["broken"]
    # A name tool names can't hold is renamed for them (with a notice), not refused.
    assert "bad name" in found.servers and "bad name" not in found.errors

    with pytest.raises(McpConfigError, match="needs a 'command'"):
        parse_server_config("x", {"args": []})
    with pytest.raises(McpConfigError, match="NOT_SET_ANYWHERE"):
        parse_server_config("x", {"command": "${NOT_SET_ANYWHERE}"})
    with pytest.raises(McpConfigError, match="positive number"):
        parse_server_config("x", {"command": "c", "toolTimeout": -1})

    (project / ".toolhost" / "settings.json").write_text("{not json")
    assert "cannot read" in next(iter(load_mcp_configs(project, home=home).errors.values()))


async def test_always_load_server_tools_are_not_deferred(tmp_path: Path) -> None:
    manager = McpManager([demo("pinned", always_load=True)])
    try:
        await manager.start()
        mcp_tools = [t for t in manager.tools() if t.name.startswith("mcp__")]
        assert mcp_tools and not any(is_deferred(t) for t in mcp_tools)
        request = tools_for_request(manager.tools(), [])
        assert "mcp__pinned__add" in [d["name"] for d in request.api_tools]
    finally:
        await manager.close()


NPM = shutil.which("npm")
MEMORY_SERVER = "@modelcontextprotocol/server-memory@2026.8.31"
"""A published release, pinned as the Python test environment is: a new release reaches this
test when someone changes the pin."""


@pytest.mark.slow  # npm installs a published package (about 5 s warm), then node starts it
@pytest.mark.timeout(180)
@pytest.mark.skipif(NPM is None, reason="npm is not installed")
async def test_published_memory_server_from_npm(tmp_path: Path) -> None:
    # Installed whole, with its dependencies, into a folder of the test's own: nothing that an
    # earlier run left in npm's cache is relied on (`npm cache add` caches the package alone,
    # and `npx --offline` then fails on a new machine for want of the MCP SDK it needs).
    prefix = tmp_path / "npm"
    done = await asyncio.to_thread(
        subprocess.run,
        [
            NPM or "npm",
            "install",
            "--prefix",
            str(prefix),
            "--no-audit",
            "--no-fund",
            MEMORY_SERVER,
        ],
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
    )
    if done.returncode != 0:
        why = f"npm install {MEMORY_SERVER} exited {done.returncode}: {done.stderr[-500:]}"
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    config = McpServerConfig.stdio(
        "memory",
        str(prefix / "node_modules" / ".bin" / "mcp-server-memory"),
        env={"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl"), "PATH": os.environ["PATH"]},
        connect_timeout=60.0,
    )
    manager = McpManager([config])
    run = Runner(manager, tmp_path)
    try:
        await manager.start()
        [status] = manager.status()
        if status.state != "connected":
            if os.environ.get("CI") == "true":
                pytest.fail(f"the published MCP server did not start: {status.error}")
            pytest.skip(f"the published MCP server did not start: {status.error}")
        names = [t.name for t in manager.tools()]
        assert "mcp__memory__create_entities" in names and "mcp__memory__read_graph" in names
        created = await run(
            "mcp__memory__create_entities",
            {"entities": [{"name": "Ana", "entityType": "person", "observations": ["likes tea"]}]},
        )
        assert not created.is_error, created.content
        graph = await run("mcp__memory__read_graph")
        assert "likes tea" in str(graph.content)
        bad = await run("mcp__memory__create_entities", {"entities": "not a list"})
        assert bad.is_error
        restarted = await manager.restart("memory")
        assert restarted.state == "connected"
        assert "likes tea" in str((await run("mcp__memory__read_graph")).content)
    finally:
        await manager.close()
