"""Inside the Bash sandbox: the only way out to the network, through the kernel's proxy.

The sandbox has a network namespace of its own, with a loopback and nothing else. This
script runs first inside it (``python -I -S proxy_bridge.py SOCKET [--loopback] -- ARGV``):
it listens on the sandbox's own ``127.0.0.1``, starts ARGV with the usual proxy variables
pointing there, and carries each connection to the kernel's proxy over the Unix socket
SOCKET, which decides what may pass (`network`). It ends with ARGV, with ARGV's exit status.

It imports nothing but the standard library, and nothing of this package: it runs with
``-I -S``, so no start-up file of the sandboxed side is read before it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading

PROXY_VARIABLES = (
    "http_proxy",
    "HTTP_PROXY",
    "https_proxy",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "npm_config_proxy",
    "npm_config_https_proxy",
)
LOCAL = "localhost,127.0.0.1,::1"
"""What goes straight to the sandbox's own loopback (its own servers), unless the kernel's
loopback is allowed by address (``--loopback``): then every connection goes to the proxy."""


def _pipe(source: socket.socket, target: socket.socket) -> None:
    """Copy one direction until its end, then half-close the other side's writing."""
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            target.sendall(data)
    with contextlib.suppress(OSError):
        target.shutdown(socket.SHUT_WR)


def _carry(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
    back.start()
    _pipe(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        try:
            client, _address = listener.accept()
        except OSError:
            return
        threading.Thread(target=_carry, args=(client, path), daemon=True).start()


def main(argv: list[str]) -> int:
    if "--" not in argv or len(argv) < 3:
        print("usage: proxy_bridge.py SOCKET [--loopback] -- COMMAND...", file=sys.stderr)
        return 2
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1 :]
    path = options[0]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    env = dict(os.environ)
    env.update(dict.fromkeys(PROXY_VARIABLES, url))
    local = "" if "--loopback" in options else LOCAL
    env["NO_PROXY"] = env["no_proxy"] = local
    threading.Thread(target=_serve, args=(listener, path), daemon=True).start()
    child = subprocess.Popen(command, env=env)
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, lambda n, _f: child.send_signal(n))
    status = child.wait()
    return 128 - status if status < 0 else status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
