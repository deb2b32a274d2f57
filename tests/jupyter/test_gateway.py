"""`%%agent` through a real Jupyter Kernel Gateway, over the real websocket.

`jupyter_kernel_gateway` runs on loopback in a folder of its own, passing its kernels only
what `KG_ENV_PROCESS_WHITELIST` names (the model's URL and key among them, the way an
administrator sends the key). A Jupyter server started with `--GatewayClient.url` sits in
front of it, and the tests talk to the server's websocket as JupyterLab does, so every
message crosses the server-to-gateway link with its 10 MiB frame limit. Covered: the
settings beside the notebook in force, an approval click, a stop, and Open full output of a
result over 12 MB, read whole.
"""

from __future__ import annotations

import base64
import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gateway_helpers import GatewayKernel, GatewayStack

from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

pytestmark = pytest.mark.timeout(300)

FRAME_LIMIT = 10 * 1024 * 1024


@pytest.fixture(scope="module")
def model() -> Iterator[MessagesServer]:
    with MessagesServer() as running:
        yield running


@pytest.fixture(scope="module")
def stack(
    model: MessagesServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GatewayStack]:
    if os.environ.get("CI") != "true":  # under CI the test extra must have installed it
        pytest.importorskip("kernel_gateway", reason="jupyter_kernel_gateway (the test extra)")
    root = tmp_path_factory.mktemp("gw")
    home = root / "home"
    home.mkdir()
    kernel_env = {
        "ANTHROPIC_BASE_URL": model.base_url,
        "ANTHROPIC_API_KEY": "test-key",
        "HOME": str(home),
    }
    running = GatewayStack(root, kernel_env=kernel_env)
    project = running.notebooks / "project"
    (project / ".toolhost").mkdir(parents=True)
    settings = {"permissions": {"deny": ["Write"], "allow": ["Bash(echo *)"]}}
    (project / ".toolhost" / "settings.json").write_text(json.dumps(settings))
    # The project's settings are the test's own: the user trusts the folder by name.
    (home / ".toolhost").mkdir()
    trusted = {"trustedFolders": [str(project.resolve())]}
    (home / ".toolhost" / "settings.json").write_text(json.dumps(trusted))
    try:
        yield running
    finally:
        running.close()


@pytest.fixture
def kernel(stack: GatewayStack) -> Iterator[GatewayKernel]:
    opened = stack.open_notebook("project/analysis.ipynb")
    try:
        loaded = opened.run("%load_ext jupyter_toolhost", timeout=60)
        assert loaded.status == "ok", loaded.text()
        yield opened
    finally:
        opened.close()


def test_the_kernel_runs_behind_the_gateway_and_the_notebooks_settings_apply(
    stack: GatewayStack, kernel: GatewayKernel, model: MessagesServer
) -> None:
    project = (stack.notebooks / "project").resolve()
    probe = kernel.run("import os; print(os.environ.get('JPY_SESSION_NAME'), os.getcwd())")
    # The gateway dropped JPY_SESSION_NAME; the kernel found the notebook's folder anyway.
    assert probe.stdout.split() == ["None", str(project)]
    status = kernel.run("%agent status").text()
    assert "KERNEL_WORKING_DIR" in status
    assert str(project / ".toolhost" / "settings.json") in status

    model.add_turns(
        Turn([tool_use("Write", {"file_path": "out.txt", "content": "x"})]),
        Turn([text("could not write")]),
    )
    run = kernel.run("%%agent --new\nWrite out.txt", timeout=120)
    assert run.status == "ok", run.text()
    body = model.requests[-1].body
    assert "Write" not in {tool["name"] for tool in body["tools"]}
    assert body["messages"][-1]["content"][0]["is_error"] is True
    assert not (project / "out.txt").exists()
    assert not (stack.gateway_dir / "out.txt").exists()


def test_an_approval_click_and_a_stop_cross_the_gateway(
    kernel: GatewayKernel, model: MessagesServer
) -> None:
    model.add_turns(
        Turn([tool_use("Bash", {"command": "touch approved.txt", "description": "make a file"})]),
        Turn([text("made it")]),
    )
    run = kernel.submit("%%agent --new\nMake a file.")
    [allow] = kernel.wait_for_button(run, "Allow once", timeout=60)
    kernel.click(allow)
    kernel.wait(run, timeout=120)
    assert run.status == "ok", run.text()
    assert model.requests[-1].body["messages"][-1]["content"][0].get("is_error") is not True
    assert kernel.run("import os; print(os.path.exists('approved.txt'))").stdout.strip() == "True"

    model.add_turns(Turn([tool_use("Sleep", {"duration_ms": 60_000})]))
    kernel.run("%agent allow Sleep")
    stopped = kernel.submit("%%agent\nWait a minute.")
    kernel.wait(stopped, timeout=60, until=lambda: '"Sleep"' in json.dumps(stopped.messages))
    time.sleep(1.0)  # the call is running
    sent = kernel.interrupt()
    kernel.wait(stopped, timeout=60)
    assert time.monotonic() - sent < 30
    assert stopped.error is not None and stopped.error["ename"] == "AgentInterrupted"
    assert kernel.run("print(6 * 7)").stdout.strip() == "42"
    assert model.remaining_turns == 0


def _read_through_comm(kernel: GatewayKernel, request: dict[str, Any]) -> list[dict[str, Any]]:
    """What the lab extension does for Open full output: open a comm, gather its messages."""
    comm_id = uuid.uuid4().hex
    content = {"comm_id": comm_id, "target_name": "jupyter_toolhost.results", "data": request}
    kernel.client.shell_channel.send(kernel.client.session.msg("comm_open", content))
    answers: list[dict[str, Any]] = []
    deadline = time.monotonic() + 120
    while True:
        assert time.monotonic() < deadline, f"no whole answer; got {len(answers)} messages"
        message = kernel.pump(timeout=0.2)
        if message is None or message["content"].get("comm_id") != comm_id:
            continue
        if message["msg_type"] == "comm_msg":
            answers.append(message["content"]["data"])
        if message["msg_type"] == "comm_close":
            return answers


def test_open_full_output_reads_a_12_mb_result_whole(
    kernel: GatewayKernel, model: MessagesServer
) -> None:
    command = "head -c 9500000 /dev/zero | tr '\\0' '\\1'"  # control bytes: 6x as JSON text
    model.add_turns(
        Turn([tool_use("Bash", {"command": command, "description": "print 9.5 MB"})]),
        Turn([tool_use("Bash", {"command": "seq 1 400000", "description": "count"})]),
        Turn([text("printed")]),
    )
    kernel.run("%agent allow Bash")
    run = kernel.run("%%agent\nPrint a lot.", timeout=180)
    assert run.status == "ok", run.text()
    saved = [
        str(call["persisted_path"])
        for output in run.messages
        if output["msg_type"] in ("display_data", "update_display_data")
        for call in output["content"]["data"]
        .get("application/vnd.jupyter.toolhost.v1+json", {})
        .get("calls", [])
        if call.get("persisted_path")
    ]
    paths = list(dict.fromkeys(saved))
    assert len(paths) == 2, run.text()[-3000:]
    expected = Path(paths[0]).read_bytes() + Path(paths[1]).read_bytes()
    assert len(expected) >= 12_000_000

    joined = bytearray()
    before = len(kernel.frame_sizes)
    for path in paths:
        offset: int | None = 0
        while offset is not None:
            request = {"path": path, "offset": offset, "limit": 4_000_000, "encoding": "base64"}
            header, *pieces = _read_through_comm(kernel, request)
            assert header["ok"] is True and header["pieces"] == len(pieces), header
            joined += b"".join(base64.b64decode(piece["data"]) for piece in pieces)
            offset = header["next_offset"]
    assert bytes(joined) == expected
    frames = kernel.frame_sizes[before:]
    print(f"result {len(expected):,} bytes; {len(frames)} frames, largest {max(frames):,} bytes")
    assert max(frames) < FRAME_LIMIT / 5
    assert sum(frames) > 16_000_000  # the whole result crossed the gateway, as base64
