"""The loopback Messages API server's HTTP plumbing: handler threads and writing replies.

Owns how an answer reaches the socket: a JSON reply, an SSE stream written step by step
(pauses, holds, cuts), or a dropped connection; and the connections still open, so closing
the server unblocks them. What to answer is the owner's (`MessagesServer.handle`).
"""

from __future__ import annotations

import contextlib
import json
import socket
import socketserver
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, Protocol, cast

from jupyter_toolhost.testing.sse import Cut, Hold, Pause, Step

__all__ = ["DropReply", "JsonReply", "LoopbackHTTPServer", "Owner", "Reply", "StreamReply"]


@dataclass(frozen=True)
class JsonReply:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass(frozen=True)
class StreamReply:
    steps: Iterator[Step]
    delay: float = 0.0


@dataclass(frozen=True)
class DropReply:
    delay: float = 0.0


Reply = JsonReply | StreamReply | DropReply


class Owner(Protocol):
    """What answers the requests (a `MessagesServer`)."""

    def next_id(self, prefix: Literal["msg", "req", "toolu"]) -> str: ...

    def handle(
        self, method: str, path: str, headers: dict[str, str], raw: bytes, request_id: str
    ) -> Reply: ...


class LoopbackHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, owner: Owner) -> None:
        self.owner = owner
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind would call socket.getfqdn(), a DNS lookup; skip it.
        socketserver.TCPServer.server_bind(self)
        self.server_name = "127.0.0.1"
        self.server_port = self.server_address[1]

    def drop_connections(self) -> None:
        """Unblock handler threads still waiting on keep-alive connections."""
        with self.connections_lock:
            connections = list(self.connections)
        for connection in connections:
            _shutdown(connection)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients hanging up mid-response are expected here; stay quiet."""


def _shutdown(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "MessagesServer"
    timeout = 30

    @property
    def _server(self) -> LoopbackHTTPServer:
        return cast(LoopbackHTTPServer, self.server)

    def setup(self) -> None:
        super().setup()
        # Flush every write (headers, body, each SSE event) at once: no Nagle delay.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._server.connections_lock:
            self._server.connections.add(self.connection)

    def finish(self) -> None:
        with self._server.connections_lock:
            self._server.connections.discard(self.connection)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Silence per-request logging."""

    def do_POST(self) -> None:
        self._serve("POST")

    def do_GET(self) -> None:
        self._serve("GET")

    def _serve(self, method: str) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        headers = {name.lower(): value for name, value in self.headers.items()}
        request_id = self._server.owner.next_id("req")
        path = self.path.split("?")[0]
        reply = self._server.owner.handle(method, path, headers, raw, request_id)
        try:
            self._send(reply, request_id)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _send(self, reply: Reply, request_id: str) -> None:
        if reply.delay > 0:
            time.sleep(reply.delay)
        if isinstance(reply, JsonReply):
            self._send_json(reply, request_id)
        elif isinstance(reply, StreamReply):
            self._send_stream(reply.steps, request_id)
        else:
            self._cut()

    def _send_json(self, reply: JsonReply, request_id: str) -> None:
        payload = json.dumps(reply.body).encode()
        self.send_response(reply.status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.send_header("request-id", request_id)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _send_stream(self, steps: Iterator[Step], request_id: str) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", request_id)
        self.end_headers()
        for step in steps:
            if isinstance(step, Pause):
                time.sleep(step.seconds)
            elif isinstance(step, Hold):
                step.wait()
            elif isinstance(step, Cut) and not step.clean:
                self._cut()
                return
            elif isinstance(step, Cut):
                break
            else:
                self.wfile.write(b"%X\r\n%s\r\n" % (len(step), step))
        self.wfile.write(b"0\r\n\r\n")

    def _cut(self) -> None:
        """Drop the connection without finishing the response."""
        self.close_connection = True
        _shutdown(self.connection)
