"""A Jupyter Kernel Gateway and a Jupyter server pointed at it, on loopback, and a kernel
driven through the server's websocket as JupyterLab drives it.

`GatewayStack` starts `jupyter_kernel_gateway` (in a folder of its own, passing kernels only
the variables in `KG_ENV_PROCESS_WHITELIST`, as deployed gateways do) and a Jupyter server
started with `--GatewayClient.url`. `GatewayKernel` is `kernel_helpers.Kernel` with its
channels replaced: a session made through the server's REST API, messages over the server's
`/api/kernels/<id>/channels` websocket (so every message crosses the server-to-gateway
websocket, with its 10 MiB frame limit), interrupts through the REST API. Each frame
received is measured (`frame_sizes`).
"""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx
from jupyter_client.session import Session
from kernel_helpers import Kernel


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for(url: str, process: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{url} exited early:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up in {timeout} s:\n{log.read_text()[-3000:]}")


class GatewayStack:
    """A Kernel Gateway and a Jupyter server in front of it; `close()` stops both."""

    def __init__(self, root: Path, *, kernel_env: Mapping[str, str]) -> None:
        self.root = root
        self.gateway_dir = root / "gateway"
        self.notebooks = root / "notebooks"
        self.gateway_dir.mkdir()
        self.notebooks.mkdir()
        self.token = uuid.uuid4().hex
        self.processes: list[subprocess.Popen[bytes]] = []
        gateway_port, server_port = free_port(), free_port()
        base = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        base.pop("JUPYTER_TOOLHOST_HOME", None)
        gateway_env = {
            **base,
            **kernel_env,
            "KG_ENV_PROCESS_WHITELIST": ",".join(["PYTHONPATH", "HOME", *kernel_env]),
        }
        self.gateway_url = f"http://127.0.0.1:{gateway_port}"
        self._start(
            [
                sys.executable,
                "-m",
                "kernel_gateway",
                "--KernelGatewayApp.ip=127.0.0.1",
                f"--KernelGatewayApp.port={gateway_port}",
                "--JupyterWebsocketPersonality.list_kernels=True",
            ],
            cwd=self.gateway_dir,
            env=gateway_env,
            log=root / "gateway.log",
            ready=f"{self.gateway_url}/api",
        )
        self.url = f"http://127.0.0.1:{server_port}"
        self._start(
            [
                sys.executable,
                "-m",
                "jupyter_server",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={server_port}",
                f"--ServerApp.root_dir={self.notebooks}",
                f"--IdentityProvider.token={self.token}",
                "--ServerApp.open_browser=False",
                "--allow-root",
                f"--GatewayClient.url={self.gateway_url}",
            ],
            cwd=self.notebooks,
            env=base,
            log=root / "server.log",
            ready=f"{self.url}/api",
        )
        self.http = httpx.Client(
            base_url=self.url, headers={"Authorization": f"token {self.token}"}, timeout=60
        )

    def _start(
        self, command: list[str], *, cwd: Path, env: dict[str, str], log: Path, ready: str
    ) -> None:
        handle = log.open("wb")
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=handle, stderr=handle)
        self.processes.append(process)
        _wait_for(ready, process, log, timeout=90)

    def server_log(self) -> str:
        return (self.root / "server.log").read_text(errors="replace")

    def close(self) -> None:
        self.http.close()
        for process in reversed(self.processes):
            process.terminate()
        for process in reversed(self.processes):
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()

    def open_notebook(self, path: str) -> GatewayKernel:
        """A session for the notebook at `path` (relative to the server's root), as
        JupyterLab makes one when a notebook opens; its kernel starts on the gateway."""
        notebook = self.notebooks / path
        notebook.parent.mkdir(parents=True, exist_ok=True)
        if not notebook.exists():
            notebook.write_text(
                json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
            )
        body = {
            "path": path,
            "name": notebook.name,
            "type": "notebook",
            "kernel": {"name": "python3"},
        }
        response = self.http.post("/api/sessions", json=body)
        response.raise_for_status()
        session = response.json()
        return GatewayKernel(self, session["id"], session["kernel"]["id"])


class _WsClient:
    """What `Kernel` uses of a jupyter_client blocking client, over the server's websocket."""

    def __init__(self, url: str) -> None:
        import websocket

        self.session = Session(key=b"", username="test")
        self.iopub: queue.Queue[dict[str, Any]] = queue.Queue()
        self.shell: queue.Queue[dict[str, Any]] = queue.Queue()
        self.frame_sizes: list[int] = []
        self.socket = websocket.create_connection(url, timeout=30, enable_multithread=True)
        self.shell_channel = self
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        import websocket

        while True:
            try:
                frame = self.socket.recv()
            except (websocket.WebSocketException, OSError):
                return
            if not frame:
                return
            self.frame_sizes.append(len(frame))
            message = json.loads(frame if isinstance(frame, str) else _json_part(frame))
            header = message.get("header", {})
            message.setdefault("msg_type", header.get("msg_type"))
            message.setdefault("msg_id", header.get("msg_id"))
            channel = message.get("channel")
            if channel == "iopub":
                self.iopub.put(message)
            elif channel == "shell":
                self.shell.put(message)

    def send(self, message: dict[str, Any], channel: str = "shell") -> None:
        wire = {**message, "channel": channel, "buffers": []}
        self.socket.send(json.dumps(wire, default=str))

    def execute(self, code: str, store_history: bool = True, allow_stdin: bool = False) -> str:
        content = {
            "code": code,
            "silent": False,
            "store_history": store_history,
            "user_expressions": {},
            "allow_stdin": allow_stdin,
            "stop_on_error": True,
        }
        message = self.session.msg("execute_request", content)
        self.send(message)
        return str(message["header"]["msg_id"])

    def get_iopub_msg(self, timeout: float) -> dict[str, Any]:
        return self.iopub.get(timeout=timeout)

    def get_shell_msg(self, timeout: float) -> dict[str, Any]:
        return self.shell.get(timeout=timeout)

    def stop_channels(self) -> None:
        self.socket.close()


def _json_part(frame: bytes) -> bytes:
    """The JSON part of a binary frame of the (legacy) Jupyter websocket protocol."""
    count = int.from_bytes(frame[:4], "big")
    offsets = [int.from_bytes(frame[4 * (i + 1) : 4 * (i + 2)], "big") for i in range(count)]
    return frame[offsets[0] : offsets[1]] if count > 1 else frame[offsets[0] :]


class _RestManager:
    """What `Kernel` uses of a KernelManager: interrupt and shutdown, over REST."""

    def __init__(self, stack: GatewayStack, session_id: str, kernel_id: str) -> None:
        self.stack, self.session_id, self.kernel_id = stack, session_id, kernel_id

    def interrupt_kernel(self) -> None:
        self.stack.http.post(f"/api/kernels/{self.kernel_id}/interrupt").raise_for_status()

    def shutdown_kernel(self, now: bool = True) -> None:
        self.stack.http.delete(f"/api/sessions/{self.session_id}")


class GatewayKernel(Kernel):
    """`Kernel`, reached through the Jupyter server's websocket and the gateway behind it."""

    def __init__(self, stack: GatewayStack, session_id: str, kernel_id: str) -> None:
        self.renders_widgets = True
        self.manager = _RestManager(stack, session_id, kernel_id)  # type: ignore[assignment]
        url = stack.url.replace("http://", "ws://")
        query = f"session_id={uuid.uuid4().hex}&token={stack.token}"
        self.client = _WsClient(f"{url}/api/kernels/{kernel_id}/channels?{query}")  # type: ignore[assignment]
        self.runs = {}
        self.widgets = {}
        self.published = []
        self._log = None  # the gateway's kernel process writes its log where we can't read
        deadline = time.monotonic() + 60
        while True:  # the kernel answers once the gateway has started it
            probe = self.submit("1")
            try:
                self.wait(probe, timeout=10)
                break
            except AssertionError:
                if time.monotonic() > deadline:
                    raise

    @property
    def frame_sizes(self) -> list[int]:
        return self.client.frame_sizes  # type: ignore[attr-defined]
