"""One live MCP server: starting it, talking to it, noticing when it dies, restarting it.

The official SDK's `Client` is an async context manager built on anyio task groups, which
must be entered and left in one task. So each connection runs a small runner task that
holds the client open until `stop()`; calls from any task of the same event loop go through
it. Every failure (cannot start, handshake timeout, process exit, call timeout) is kept as
the connection's `state` and `error` and raised to callers as `McpUnavailable` or
`McpCallError` with a message a person or a model can act on.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import IO, TYPE_CHECKING, Any, Literal, TypeVar

import mcp_types
from mcp import Client, StdioServerParameters
from mcp.client import Transport
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.dispatcher import ProgressFnT

from ..core.errors import McpError
from ..core.results import describe_error
from .config import McpServerConfig

if TYPE_CHECKING:
    from httpx2 import AsyncClient

ServerState = Literal["pending", "connected", "failed", "closed"]
T = TypeVar("T")

STDERR_TAIL_CHARS = 400
STDERR_TAIL_LINES = 3
CLOSE_TIMEOUT = 5.0


class McpUnavailable(McpError):
    """The server is not connected (failed to start, exited, or was stopped)."""


class McpCallError(McpError):
    """A request to a connected server failed or timed out."""


class McpConnection:
    """A connection to one MCP server, with its state, listed tools and last error."""

    def __init__(self, config: McpServerConfig) -> None:
        self.config = config
        self.state: ServerState = "pending"
        self.error: str | None = None
        self.tools: list[mcp_types.Tool] = []
        self.has_resources = False
        self.instructions: str | None = None
        self.generation = 0
        """Counts successful connections, so callers can tell a restarted server apart."""
        self._client: Client | None = None
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._stderr: IO[str] | None = None

    @property
    def name(self) -> str:
        return self.config.name

    async def start(self) -> None:
        """Connect and list tools, within the connect timeout; never raises (see `state`)."""
        await self.stop()
        self.state, self.error, self.tools = "pending", None, []
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(self._run(ready, self._stop), name=f"mcp:{self.name}")
        try:
            await asyncio.wait_for(asyncio.shield(ready), self.config.connect_timeout)
        except TimeoutError:
            await self._abandon()
            self._fail(f"did not finish starting within {self.config.connect_timeout:g} s")

    async def stop(self) -> None:
        """Disconnect (ending a stdio server's process); safe to call in any state."""
        task, stop = self._task, self._stop
        self._task = self._stop = None
        self._client = None
        if task is None or stop is None:
            return
        stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), CLOSE_TIMEOUT)
        except (TimeoutError, Exception):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        if self.state == "connected":
            self.state = "closed"

    async def restart(self) -> None:
        """Stop and start again."""
        await self.stop()
        await self.start()

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        progress: ProgressFnT | None = None,
    ) -> mcp_types.CallToolResult:
        """Call one of the server's tools, within the per-call timeout; the server's
        progress notifications for the call go to `progress` (progress, total, message)."""
        return await self._request(
            f"calling {name}",
            lambda client: client.call_tool(name, arguments, progress_callback=progress),
            limit=self.config.tool_timeout,
        )

    async def list_resources(self) -> list[mcp_types.Resource]:
        """The resources the server offers (all pages)."""
        resources: list[mcp_types.Resource] = []
        cursor: str | None = None
        for _ in range(100):
            page = await self._request(
                "listing resources",
                lambda client, c=cursor: client.list_resources(cursor=c),
                limit=self.config.connect_timeout,
            )
            resources.extend(page.resources)
            cursor = page.next_cursor
            if cursor is None:
                break
        return resources

    async def read_resource(self, uri: str) -> mcp_types.ReadResourceResult:
        """Read one resource by URI."""
        return await self._request(
            f"reading {uri}",
            lambda client: client.read_resource(uri),
            limit=self.config.tool_timeout,
        )

    # ── internals ────────────────────────────────────────────────────────────────────

    async def _request(
        self, what: str, send: Callable[[Client], Awaitable[T]], *, limit: float
    ) -> T:
        client = self._client
        if client is None or self.state != "connected":
            raise McpUnavailable(self._unavailable())
        try:
            return await asyncio.wait_for(send(client), limit)
        except TimeoutError:
            raise McpCallError(
                f"MCP server {self.name!r} did not answer {what} within {limit:g} s"
            ) from None
        except Exception as exc:
            if self._task is None or self._task.done() or _closed(exc):
                self._fail(f"the connection closed while {what} ({describe_error(exc)})")
                raise McpUnavailable(self._unavailable()) from None
            raise McpCallError(
                f"MCP server {self.name!r} failed {what}: {describe_error(exc)}"
            ) from None

    def _unavailable(self) -> str:
        state = "not connected" if self.state != "failed" else "unavailable"
        detail = f": {self.error}" if self.error else ""
        return (
            f"MCP server {self.name!r} is {state}{detail}. "
            f"It can be restarted with `%agent mcp restart {self.name}`."
        )

    def _fail(self, message: str) -> None:
        self.state = "failed"
        tail = self._stderr_tail()
        self.error = f"{message}; stderr: {tail}" if tail else message
        self._client = None

    def _stderr_tail(self) -> str:
        """The last few lines the server wrote to stderr (stdio servers only)."""
        log = self._stderr
        if log is None:
            return ""
        try:
            log.flush()
            log.seek(0)
            text = log.read()
            log.seek(0, 2)
        except (OSError, ValueError):
            return ""
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        tail = " | ".join(lines[-STDERR_TAIL_LINES:])
        return tail if len(tail) <= STDERR_TAIL_CHARS else "…" + tail[-STDERR_TAIL_CHARS:]

    async def _abandon(self) -> None:
        task, self._task, self._stop = self._task, None, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    def _transport(self, stack: AsyncExitStack) -> tuple[Transport, AsyncClient | None]:
        """The server's transport, and the HTTP client it uses (None for stdio), which the
        caller opens before the transport."""
        config = self.config
        if config.transport == "stdio":
            assert config.command is not None
            # Closed by the exit stack when the connection ends.
            log = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
            stack.callback(log.close)
            self._stderr = log
            params = StdioServerParameters(
                command=config.command,
                args=list(config.args),
                env=dict(config.env) or None,
                cwd=config.cwd,
            )
            return stdio_client(params, errlog=log), None
        assert config.url is not None
        self._stderr = None
        http = create_mcp_http_client(headers=dict(config.headers) or None)
        return streamable_http_client(config.url, http_client=http), http

    async def _run(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        try:
            async with AsyncExitStack() as stack:
                transport, http = self._transport(stack)
                if http is not None:
                    await stack.enter_async_context(http)
                client = await stack.enter_async_context(Client(transport, mode="legacy"))
                self.tools = await _list_all_tools(client)
                capabilities = client.server_capabilities
                self.has_resources = capabilities.resources is not None
                self.instructions = client.instructions
                self._client = client
                self.state = "connected"
                self.generation += 1
                if not ready.done():
                    ready.set_result(None)
                await stop.wait()
        except asyncio.CancelledError:
            if self.state in ("pending", "connected"):
                self.state = "closed"
            raise
        except BaseException as exc:
            if self.state != "failed":
                self._fail(f"could not start: {describe_error(exc)}")
        finally:
            self._client = None
            if self.state == "connected":
                self.state = "closed"
            if not ready.done():
                ready.set_result(None)


async def _list_all_tools(client: Client) -> list[mcp_types.Tool]:
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(100):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def _closed(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "connection closed" in text or isinstance(
        exc, BrokenPipeError | ConnectionError | EOFError
    )
