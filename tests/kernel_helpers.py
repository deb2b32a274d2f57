"""Driving a real IPython kernel through jupyter_client, as a front end would.

`Kernel` starts one kernel in a directory with a given environment, runs cells, collects
their iopub output, and clicks widget buttons by sending the `comm_msg` a browser sends.
With `renders_widgets` (the default) it also answers a displayed widget the way a browser's
widget manager does when it renders the view: a model that tracks `_view_count` gets it
raised by one. Without it the kernel sees what nbclient shows it: nothing comes back.
"""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty
from typing import IO, Any

from jupyter_client.manager import KernelManager


def is_answer(output: Any) -> bool:
    """Whether a display output (a message's content or a saved output) is a final piece of
    the model's words (its HTML beside the text as written)."""
    metadata = output.get("metadata") or {}
    return (metadata.get("jupyter_toolhost") or {}).get("kind") == "answer"


@dataclass
class CellRun:
    """What one execute_request produced."""

    msg_id: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    reply: dict[str, Any] | None = None
    finished_at: float | None = None

    @property
    def stdout(self) -> str:
        return "".join(
            m["content"]["text"]
            for m in self.messages
            if m["msg_type"] == "stream" and m["content"]["name"] == "stdout"
        )

    @property
    def answer(self) -> str:
        """The model's words as it wrote them: its final answer displays, in order (updates
        of a streaming display are not among them)."""
        return "\n".join(
            m["content"]["data"]["text/plain"]
            for m in self.messages
            if m["msg_type"] == "display_data" and is_answer(m["content"])
        )

    @property
    def stderr(self) -> str:
        return "".join(
            m["content"]["text"]
            for m in self.messages
            if m["msg_type"] == "stream" and m["content"]["name"] == "stderr"
        )

    def displays(self, key: str = "text/plain") -> list[str]:
        return [
            m["content"]["data"][key]
            for m in self.messages
            if m["msg_type"] in ("display_data", "execute_result") and key in m["content"]["data"]
        ]

    @property
    def error(self) -> dict[str, Any] | None:
        return next((m["content"] for m in self.messages if m["msg_type"] == "error"), None)

    @property
    def status(self) -> str | None:
        return None if self.reply is None else self.reply["content"]["status"]

    def text(self) -> str:
        """Everything shown as text: streams, plain displays, error name and value."""
        parts = [self.stdout, self.stderr, *self.displays()]
        if self.error:
            parts.append(f"{self.error['ename']}: {self.error['evalue']}")
        return "\n".join(parts)


class Kernel:
    """One kernel; `run(code)` executes a cell and waits for it to end."""

    def __init__(
        self, cwd: Path, env: dict[str, str] | None = None, *, renders_widgets: bool = True
    ) -> None:
        self.renders_widgets = renders_widgets
        self.manager = KernelManager(kernel_name="python3")
        full_env = {**os.environ, **(env or {})}
        # The kernel process's own stderr (its log: tornado's "Uncaught exception", a
        # failed comm handler), which a front end shows in the cell; see `log()`.
        self._log: IO[str] | None = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (close())
        self.manager.start_kernel(cwd=str(cwd), env=full_env, stderr=self._log)
        self.client = self.manager.blocking_client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)
        self.runs: dict[str, CellRun] = {}
        self.widgets: dict[str, dict[str, Any]] = {}
        """comm id → the widget state sent in its comm_open."""
        self.published: list[dict[str, Any]] = []
        """Every iopub message read, whatever its parent (a cell, a comm message, none)."""

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)
        if self._log is not None:
            self._log.close()

    def log(self) -> str:
        """What the kernel process wrote to its stderr so far ("" where it runs elsewhere)."""
        if self._log is None:
            return ""
        self._log.flush()
        self._log.seek(0)
        return self._log.read()

    # ── running cells ──────────────────────────────────────────────────────────────────

    def submit(self, code: str) -> CellRun:
        """Send a cell without waiting (like Run All queueing cells)."""
        msg_id = self.client.execute(code, store_history=True, allow_stdin=False)
        run = CellRun(msg_id)
        self.runs[msg_id] = run
        return run

    def pump(self, timeout: float = 0.05) -> dict[str, Any] | None:
        """Read one iopub message (if any), file it under its cell; returns it."""
        try:
            message = self.client.get_iopub_msg(timeout=timeout)
        except Empty:
            return None
        self.published.append(message)
        parent = message.get("parent_header", {}).get("msg_id")
        if message["msg_type"] == "comm_open":
            data = message["content"].get("data", {})
            self.widgets[message["content"]["comm_id"]] = dict(data.get("state", {}))
        elif message["msg_type"] == "comm_msg":
            data = message["content"].get("data", {})
            known = self.widgets.get(message["content"]["comm_id"])
            if known is not None and data.get("method") in ("update", "echo_update"):
                known.update(data.get("state", {}))
        elif message["msg_type"] == "display_data" and self.renders_widgets:
            self._render(message["content"]["data"])
        run = self.runs.get(parent)
        if run is not None:
            run.messages.append(message)
            if (
                message["msg_type"] == "status"
                and message["content"]["execution_state"] == "idle"
                and run.finished_at is None
            ):
                run.finished_at = time.monotonic()
        return message

    def wait(
        self,
        run: CellRun,
        *,
        timeout: float = 30,
        until: Callable[[], bool] | None = None,
    ) -> CellRun:
        """Pump messages until `run` is idle (or `until()` holds); fails on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if until is not None and until():
                return run
            if until is None and run.finished_at is not None:
                self._take_reply(run)
                return run
            self.pump()
        raise AssertionError(f"cell did not finish within {timeout} s; so far:\n{run.text()}")

    def _take_reply(self, run: CellRun) -> None:
        while run.reply is None:
            reply = self.client.get_shell_msg(timeout=10)
            target = self.runs.get(reply["parent_header"].get("msg_id"))
            if target is not None:
                target.reply = reply

    def run(self, code: str, *, timeout: float = 30) -> CellRun:
        return self.wait(self.submit(code), timeout=timeout)

    # ── widgets ────────────────────────────────────────────────────────────────────────

    def buttons(self, description: str, run: CellRun | None = None) -> list[str]:
        """Comm ids of Button widgets with this description (opened by `run`, if given)."""
        return self._widgets("ButtonModel", "description", description, run)

    def texts(self, placeholder: str, run: CellRun | None = None) -> list[str]:
        """Comm ids of Text widgets with this placeholder (opened by `run`, if given)."""
        return self._widgets("TextModel", "placeholder", placeholder, run)

    def toggles(self, description: str, run: CellRun | None = None) -> list[str]:
        """Comm ids of ToggleButton widgets with this description (opened by `run`, if given)."""
        return self._widgets("ToggleButtonModel", "description", description, run)

    def textareas(self, description: str, run: CellRun | None = None) -> list[str]:
        """Comm ids of Textarea widgets with this description (opened by `run`, if given)."""
        return self._widgets("TextareaModel", "description", description, run)

    def checkboxes(self, description: str, run: CellRun | None = None) -> list[str]:
        """Comm ids of Checkbox widgets with this description (opened by `run`, if given)."""
        return self._widgets("CheckboxModel", "description", description, run)

    def html_values(self, run: CellRun) -> list[str]:
        """The `value` of every HTML widget `run` opened, in the order they were opened."""
        opened = [m["content"]["comm_id"] for m in run.messages if m["msg_type"] == "comm_open"]
        return [
            str(self.widgets[comm_id].get("value", ""))
            for comm_id in opened
            if self.widgets.get(comm_id, {}).get("_model_name") == "HTMLModel"
        ]

    def _widgets(self, model: str, key: str, value: str, run: CellRun | None) -> list[str]:
        opened = None
        if run is not None:
            opened = {m["content"]["comm_id"] for m in run.messages if m["msg_type"] == "comm_open"}
        return [
            comm_id
            for comm_id, state in self.widgets.items()
            if state.get("_model_name") == model
            and state.get(key) == value
            and (opened is None or comm_id in opened)
        ]

    def wait_for_button(
        self, run: CellRun, description: str, *, count: int = 1, timeout: float = 20
    ) -> list[str]:
        """Wait until `run` has shown `count` buttons with this description; their ids."""
        self.wait(run, timeout=timeout, until=lambda: len(self.buttons(description, run)) >= count)
        return self.buttons(description, run)

    def wait_for_text(self, run: CellRun, placeholder: str, *, timeout: float = 20) -> str:
        """Wait until `run` has shown a Text widget with this placeholder; its id."""
        self.wait(run, timeout=timeout, until=lambda: bool(self.texts(placeholder, run)))
        return self.texts(placeholder, run)[0]

    def click(self, comm_id: str) -> None:
        """What the browser sends when a button is clicked."""
        self.send_comm(comm_id, {"method": "custom", "content": {"event": "click"}})

    def set_value(self, comm_id: str, value: Any) -> None:
        """What the browser sends when a text field changes or a toggle button is clicked."""
        self.set_state(comm_id, {"value": value})

    def send_comm(self, comm_id: str, data: dict[str, Any]) -> None:
        message = self.client.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
        self.client.shell_channel.send(message)

    def press_enter(self, comm_id: str) -> None:
        """What the browser sends when Enter is pressed in a Text widget."""
        self.send_comm(comm_id, {"method": "custom", "content": {"event": "submit"}})

    def _render(self, data: dict[str, Any]) -> None:
        """A view of a displayed widget was made: raise its `_view_count` (if tracked)."""
        view = data.get("application/vnd.jupyter.widget-view+json")
        state = self.widgets.get(view["model_id"]) if isinstance(view, dict) else None
        if state is not None and isinstance(state.get("_view_count"), int):
            state["_view_count"] += 1
            self.set_state(view["model_id"], {"_view_count": state["_view_count"]})

    def set_state(self, comm_id: str, state: dict[str, Any]) -> None:
        self.send_comm(comm_id, {"method": "update", "state": state, "buffer_paths": []})

    def open_widget_control(self) -> str:
        """What JupyterLab's widget manager does when it connects: open the
        `jupyter.widget.control` comm and ask for the widgets' states. Returns its id."""
        comm_id = uuid.uuid4().hex
        content = {"comm_id": comm_id, "target_name": "jupyter.widget.control", "data": {}}
        opened = self.client.session.msg("comm_open", content, metadata={"version": "1.0.0"})
        self.client.shell_channel.send(opened)
        self.send_comm(comm_id, {"method": "request_states"})
        return comm_id

    def interrupt(self) -> float:
        """Interrupt the kernel (the stop button); returns when it was sent."""
        self.manager.interrupt_kernel()
        return time.monotonic()


def agent_kernel(
    root: Path, base_url: str, *, env: dict[str, str] | None = None, **options: Any
) -> Kernel:
    """A kernel in `root` whose model is the loopback Messages API at `base_url`, with
    `jupyter_toolhost` loaded; close it when done."""
    full_env = {
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "test-key",
        "JUPYTER_TOOLHOST_HOME": str(root / ".toolhost"),
        "HOME": str(root),
        **(env or {}),
    }
    kernel = Kernel(root, full_env, **options)
    loaded = kernel.run("%load_ext jupyter_toolhost")
    if loaded.status != "ok":
        kernel.close()
        raise RuntimeError(f"%load_ext failed: {loaded.text()}")
    return kernel


DEMO_MCP_SERVER = Path(__file__).parent / "mcp_servers" / "demo_server.py"


def demo_mcp_kernel(root: Path, base_url: str) -> Kernel:
    """`agent_kernel` in `root` whose project settings start the tests' demo MCP server
    (`mcp__demo__*` tools, deferred like every MCP tool)."""
    import json
    import sys

    (root / ".toolhost").mkdir(exist_ok=True)
    command = {"command": sys.executable, "args": [str(DEMO_MCP_SERVER)]}
    settings = {"mcpServers": {"demo": command}}
    (root / ".toolhost" / "settings.json").write_text(json.dumps(settings))
    return agent_kernel(root, base_url)
