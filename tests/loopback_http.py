"""A plain HTTP server on loopback for tests that fetch pages (WebFetch, the network fence).

`serve(handler)` runs `handler` (a `BaseHTTPRequestHandler` subclass) on 127.0.0.1 in a
thread and yields its port. The server polls for shutdown every 20 ms: `serve_forever`'s
default of 0.5 s made each test that used one wait half a second at its end.
"""

from __future__ import annotations

import contextlib
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SHUTDOWN_POLL_S = 0.02


@contextlib.contextmanager
def serve(
    handler: type[BaseHTTPRequestHandler], tls: ssl.SSLContext | None = None
) -> Iterator[int]:
    """The port of a threading HTTP server answering with `handler` (over TLS with a server
    context `tls`), until the block ends."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True  # a handler still answering never holds up the end
    if tls is not None:
        httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL_S}, daemon=True
    )
    thread.start()
    try:
        yield httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
