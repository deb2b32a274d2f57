"""The sandbox's network allow-list: a proxy the kernel runs outside the sandbox.

A sandboxed command has a network namespace of its own (only its own loopback). When
``sandbox.network.allowedDomains`` names hosts, each command also gets a channel to this
proxy: a Unix socket in a private folder, which `proxy_bridge` carries the command's
connections to (it sets ``http_proxy``, ``https_proxy``, ``ALL_PROXY`` and npm's variables,
so pip, curl, git over HTTP(S), npm and Python's urllib go through it). Nothing else leaves
the namespace: a program that ignores the variables reaches no other host.

What passes, per connection (``CONNECT host:port`` for HTTPS and git, or a plain ``http://``
request):

- the host, in the form WebFetch compares hosts in (`permissions.hosts.canonical_host`:
  case, trailing dots, IDNA, every spelling of an address), must match an entry of
  ``allowedDomains`` and none of ``deniedDomains`` (which always wins). An entry is a host
  (``pypi.org``), its subdomains (``*.pythonhosted.org``), an address (``10.0.0.5``), any
  of them with a port (``127.0.0.1:8080``), or ``*`` for every public host name;
- every address the name resolves to must be a public one, or be named itself by an entry:
  a loopback, private, link-local, reserved or multicast address (the kernel's own ports,
  the cloud's metadata service, the local network) is reached only when allowed by address.
  The proxy connects to the address it checked, so a second DNS answer changes nothing.

A refused connection gets ``403`` with the reason, and the Bash result tells the model which
host was refused and which setting allows it (the person decides: the settings files are
read-only to the agent). With the sandbox off, there is no namespace and nothing to route:
the allow-list applies only to sandboxed commands, as `sandbox` says.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import re
import shutil
import socket
import tempfile
import threading
from collections.abc import Coroutine, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from ...permissions.hosts import LOOPBACK, canonical_host, internal, parse_address

ALLOWED_KEY = "sandbox.network.allowedDomains"
DENIED_KEY = "sandbox.network.deniedDomains"
BRIDGE = str(Path(__file__).with_name("proxy_bridge.py"))
HEAD_LIMIT = 64 * 1024
CONNECT_TIMEOUT = 30.0
_NAME = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*")

T = TypeVar("T")

__all__ = ["BRIDGE", "Channel", "Entry", "NetworkPolicy", "open_channel"]


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry of ``allowedDomains`` or ``deniedDomains``."""

    text: str
    host: str
    """Canonical host, ``*.`` kept in front for subdomains, ``*`` for every host name."""
    port: int | None = None

    @classmethod
    def parse(cls, text: str) -> Entry:
        """An entry as written; raises ValueError with what is wrong."""
        spec = text.strip()
        host, port = _split_port(spec)
        if not host:
            raise ValueError(f"{text!r} names no host")
        if host == "*":
            return cls(text, "*", port)
        wild = host.startswith("*.")
        name = canonical_host(host[2:] if wild else host)
        if parse_address(name) is None and name != LOOPBACK and not _NAME.fullmatch(name):
            raise ValueError(f"{text!r}: a host, '*.' and a domain, an address, or '*'")
        if wild and parse_address(name) is not None:
            raise ValueError(f"{text!r}: an address has no subdomains")
        return cls(text, f"*.{name}" if wild else name, port)

    def names(self, host: str, port: int) -> bool:
        """Whether this entry names canonical `host` on `port`."""
        if self.port is not None and self.port != port:
            return False
        if self.host == "*":
            return parse_address(host) is None and host != LOOPBACK
        if self.host.startswith("*."):
            return host.endswith(self.host[1:])
        return host == self.host


@dataclass(frozen=True, slots=True)
class NetworkPolicy:
    """What the proxy lets through (see the module docstring)."""

    allowed: tuple[Entry, ...]
    denied: tuple[Entry, ...] = ()

    @classmethod
    def parse(cls, allowed: Iterable[str], denied: Iterable[str] = ()) -> NetworkPolicy:
        return cls(tuple(map(Entry.parse, allowed)), tuple(map(Entry.parse, denied)))

    @property
    def loopback(self) -> bool:
        """Whether the kernel's loopback is allowed by address."""
        return any(entry.host == LOOPBACK for entry in self.allowed)

    def refusal(self, host: str, port: int) -> str | None:
        """Why a connection to `host` (as the program wrote it) is refused by its name."""
        name = canonical_host(host)
        denied = next((e for e in self.denied if e.names(name, port)), None)
        if denied is not None:
            return f"{DENIED_KEY} names it ({denied.text!r})"
        if not any(e.names(name, port) for e in self.allowed):
            return f"it is not in {ALLOWED_KEY}; add {_suggest(name, port)!r} there to allow it"
        return None

    def address_refusal(self, host: str, port: int, address: str) -> str | None:
        """Why connecting to `address`, which `host` resolved to, is refused."""
        canonical = canonical_host(address)
        if any(e.names(canonical, port) for e in self.denied):
            return f"it resolves to {address}, which {DENIED_KEY} names"
        if not internal(canonical) or any(
            e.host == canonical and (e.port is None or e.port == port) for e in self.allowed
        ):
            return None
        kind = _kind(canonical)
        return (
            f"it resolves to {address}, a {kind} address, which the proxy reaches only when "
            f"{ALLOWED_KEY} names the address itself (add {_suggest(canonical, port)!r})"
        )


def _kind(host: str) -> str:
    if host == LOOPBACK:
        return "loopback"
    address = parse_address(host)
    if address is not None and address.is_link_local:
        return "link-local"
    if address is not None and address.is_private:
        return "private"
    return "non-public"


def _suggest(host: str, port: int) -> str:
    shown = "127.0.0.1" if host == LOOPBACK else host
    if ":" in shown:
        shown = f"[{shown}]"
    return shown if port in (80, 443) else f"{shown}:{port}"


def _split_port(text: str) -> tuple[str, int | None]:
    """``host:port``, ``[v6]:port``, a bare v6 address or a host: (host, port or None)."""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        if rest.startswith(":") and rest[1:].isdigit():
            return host, _port(rest[1:])
        return host, None
    head, colon, tail = text.rpartition(":")
    if colon and tail.isdigit() and ":" not in head:
        return head, _port(tail)
    return text, None


def _port(text: str) -> int:
    port = int(text)
    if not 0 < port < 65536:
        raise ValueError(f"port {port} is out of range")
    return port


# --- the proxy ----------------------------------------------------------------------------


@dataclass(slots=True)
class Channel:
    """One command's way out: a Unix socket served by the proxy, and what it refused."""

    path: str
    policy: NetworkPolicy
    refused: dict[str, str] = field(default_factory=dict[str, str])
    """``host:port`` → why, in the order refused."""
    _server: asyncio.AbstractServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def refuse(self, target: str, reason: str) -> None:
        with self._lock:
            self.refused.setdefault(target, reason)

    def close(self) -> str | None:
        """Stop serving; a note for the model on what was refused (None when nothing was)."""
        server, self._server = self._server, None
        if server is not None:
            _PROXY.call(_close(server))
        shutil.rmtree(os.path.dirname(self.path), ignore_errors=True)
        with self._lock:
            refused = dict(self.refused)
        if not refused:
            return None
        lines = [f"- {target}: {reason}" for target, reason in refused.items()]
        return (
            "The sandbox's network proxy refused these connections (the settings files are "
            "the person's to change):\n" + "\n".join(lines)
        )


async def _close(server: asyncio.AbstractServer) -> None:
    server.close()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(server.wait_closed(), 1)


class _Proxy:
    """The event loop every channel is served on: one thread per process, started lazily."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                name = "toolhost-sandbox-proxy"
                threading.Thread(target=loop.run_forever, name=name, daemon=True).start()
                self._loop = loop
            return self._loop

    def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop())
        return future.result(timeout=10)


_PROXY = _Proxy()


def open_channel(policy: NetworkPolicy) -> Channel:
    """A new channel for one command (its socket in a folder only this user can enter)."""
    folder = tempfile.mkdtemp(prefix="toolhost-net-")
    channel = Channel(os.path.join(folder, "proxy.sock"), policy)

    async def start() -> asyncio.AbstractServer:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await _serve(channel, reader, writer)

        return await asyncio.start_unix_server(handle, path=channel.path, limit=HEAD_LIMIT)

    channel._server = _PROXY.call(start())
    return channel


async def _serve(
    channel: Channel, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        await _handle(channel, reader, writer)
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


async def _handle(
    channel: Channel, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), CONNECT_TIMEOUT)
    line, _, headers = head.partition(b"\r\n")
    parts = line.decode("latin-1").split()
    if len(parts) != 3:
        return await _answer(writer, 400, "not an HTTP request")
    method, target, version = parts
    if method.upper() == "CONNECT":
        host, port = _split_port(target)
        port = port or 443
        forward = b""
    else:
        url = urlsplit(target)
        if url.scheme.lower() != "http" or not url.hostname:
            return await _answer(writer, 400, "the proxy takes CONNECT and absolute http:// URLs")
        host, port = url.hostname, url.port or 80
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        kept = [
            h
            for h in headers.split(b"\r\n")
            if h and not h.lower().startswith((b"proxy-connection:", b"proxy-authorization:"))
        ]
        forward = (
            b"\r\n".join([f"{method} {path} {version}".encode("latin-1"), *kept]) + b"\r\n\r\n"
        )
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    reason = channel.policy.refusal(host, port)
    address: str | None = None
    if reason is None:
        address, reason = await _resolve(channel.policy, host, port)
    if reason is not None or address is None:
        reason = reason or "it could not be resolved"
        channel.refuse(shown, reason)
        return await _answer(writer, 403, f"sandbox proxy: {shown} refused: {reason}")
    try:
        up_reader, up_writer = await asyncio.wait_for(
            asyncio.open_connection(address, port), CONNECT_TIMEOUT
        )
    except (OSError, TimeoutError) as exc:
        return await _answer(writer, 502, f"sandbox proxy: {shown} unreachable: {exc}")
    if forward:
        up_writer.write(forward)
    else:
        writer.write(f"{version} 200 Connection established\r\n\r\n".encode("latin-1"))
    try:
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
    finally:
        up_writer.close()


async def _resolve(policy: NetworkPolicy, host: str, port: int) -> tuple[str | None, str | None]:
    """The address to connect to, or why none may be: every answer must pass."""
    literal = parse_address(host.strip("[]"))
    if literal is not None:
        addresses = [str(literal)]
    else:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                host, port, type=socket.SOCK_STREAM
            )
        except OSError as exc:
            return None, f"its name does not resolve ({exc.strerror or exc})"
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    for address in addresses:
        reason = policy.address_refusal(host, port, address)
        if reason is not None:
            return None, reason
    usable = [a for a in addresses if _reachable(a)]
    return (usable or addresses)[0], None


def _reachable(address: str) -> bool:
    with contextlib.suppress(ValueError):
        return ipaddress.ip_address(address).version == 4 or socket.has_ipv6
    return False


async def _pipe(source: asyncio.StreamReader, target: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(65536):
            target.write(data)
            await target.drain()
    except (OSError, asyncio.IncompleteReadError):
        pass
    finally:
        with contextlib.suppress(Exception):
            if target.can_write_eof():
                target.write_eof()


async def _answer(writer: asyncio.StreamWriter, status: int, message: str) -> None:
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[status]
    body = (message + "\n").encode()
    writer.write(
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    await writer.drain()
