"""Displays for people beside the result for the model, and the code a call runs.

`ToolOutput.displays` reach `ToolResult.displays` through the real pipeline and loop, and
never the Messages API, the transcript or a cassette. PythonExec runs in a real IPython
shell with matplotlib (Agg) and pandas: what it showed is kept whole as mimebundles, new
figures are rendered and closed, and the model gets text plus capped, scaled image blocks.
"""

from __future__ import annotations

import base64
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from pydantic import BaseModel
from session_support import MODEL

from jupyter_toolhost import Session, build_tool
from jupyter_toolhost.core.context import ToolUseContext, ToolUseOptions
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.core.tool import Tool, ToolOutput, tool, unregister_tool
from jupyter_toolhost.core.types import ToolCall, ToolError
from jupyter_toolhost.jupyter.kernel.captured import MAX_IMAGE_BYTES, MAX_IMAGE_SIDE, MAX_IMAGES
from jupyter_toolhost.jupyter.kernel.kernel_tools import (
    execute,
    kernel_tools,
)
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.model.cassette import CassetteModel
from jupyter_toolhost.orchestration.events import CallFinished
from jupyter_toolhost.orchestration.pipeline import Pipeline
from jupyter_toolhost.permissions.api import BasicCanUseTool
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.tools import bash

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
plt = pytest.importorskip("matplotlib.pyplot")
PIL_Image = pytest.importorskip("PIL.Image")

SECRET = "SECRET-DISPLAY-7f3a"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# ── ToolOutput.displays: to people, never to the API ────────────────────────────────────


class Ask(BaseModel):
    size: int = 10


def showing_tool() -> Tool[Ask]:
    def show(input: Ask, _context: ToolUseContext) -> ToolOutput:
        bundle = {"data": {"text/html": f"<b>{SECRET}</b>", "text/plain": SECRET}, "metadata": {}}
        return ToolOutput(data="v" * input.size, displays=(bundle,))

    return build_tool(name="Show", input_model=Ask, call=show, description="Show something.")


async def test_displays_reach_the_result_and_the_sink_but_not_the_api(tmp_path: Path) -> None:
    script = [
        Turn([tool_use("Show", {"size": 5}), tool_use("Show", {"size": 60_000})]),
        Turn([text("Shown.")]),
    ]
    finished: list[CallFinished] = []
    cassette_path = tmp_path / "cassette.json"
    with MessagesServer(script) as server:
        inner = AnthropicModel(base_url=server.base_url, api_key="test-key")
        session = Session(
            tools=[showing_tool()],
            model=CassetteModel(cassette_path, cassette_mode="record", inner=inner),
            model_id=MODEL,
            cwd=tmp_path,
            permission_mode="bypassPermissions",
        )
        result = await session.run(
            "show it",
            on_event=lambda e: finished.append(e) if isinstance(e, CallFinished) else None,
        )
        bodies = [json.dumps(r.body) for r in server.requests if r.path == "/v1/messages"]

    assert server.errors == [] and result == "Shown."
    small, big = (f.result for f in finished)
    for shown in (small, big):
        assert shown.displays == (
            {"data": {"text/html": f"<b>{SECRET}</b>", "text/plain": SECRET}, "metadata": {}},
        )
        assert "displays" not in shown.to_block() and SECRET not in json.dumps(shown.to_block())
    assert small.content == "vvvvv"
    # The big one went over the budget and was persisted; its displays stayed on the result.
    assert big.persisted_path is not None and "<persisted-output>" in str(big.content)
    assert len(bodies) == 2 and "vvvvv" in bodies[1]
    assert not any(SECRET in body for body in bodies)
    transcript = session.transcript_path
    assert "vvvvv" in transcript.read_text() and SECRET not in transcript.read_text()
    assert cassette_path.exists() and SECRET not in cassette_path.read_text()


# ── render_code / code_of ───────────────────────────────────────────────────────────────


class Code(BaseModel):
    source: str


def test_code_of_declares_the_code_and_fails_safe() -> None:
    def boom(_input: Code) -> tuple[str, str]:
        raise RuntimeError("no")

    declared = build_tool(
        name="Run",
        input_model=Code,
        call=lambda i, c: "",
        description="d",
        render_code=lambda i: ("sql", i.source),
    )
    assert declared.code_of(Code(source="select 1")) == ("sql", "select 1")
    raising = build_tool(
        name="Run", input_model=Code, call=lambda i, c: "", description="d", render_code=boom
    )
    assert raising.code_of(Code(source="x")) is None
    plain = build_tool(name="Run", input_model=Code, call=lambda i, c: "", description="d")
    assert plain.code_of(Code(source="x")) is None

    shell_tool = bash.make_tool()
    parsed = shell_tool.input_model.model_validate({"command": "ls -la | wc -l"})
    assert shell_tool.code_of(parsed) == ("shell", "ls -la | wc -l")


def test_the_tool_decorator_takes_render_code() -> None:
    @tool(render_code=lambda i: ("python", f"print({i.value!r})"), register=False)
    def echo(value: str) -> str:
        """Echo a value."""
        return value

    try:
        parsed = echo.input_model.model_validate({"value": "hi"})
        assert echo.code_of(parsed) == ("python", "print('hi')")
    finally:
        unregister_tool("echo")


# ── PythonExec in a real IPython shell ──────────────────────────────────────────────────


@pytest.fixture
def shell() -> Iterator[Any]:
    ip = InteractiveShell.instance()
    plt.close("all")
    yield ip
    plt.close("all")
    for name in ("frame", "fig", "ax", "before", "noise", "pd", "plt", "Image", "HTML"):
        ip.user_ns.pop(name, None)


def png_size(encoded: str) -> tuple[int, int]:
    raw = base64.b64decode(encoded)
    assert raw.startswith(PNG_MAGIC)
    return PIL_Image.open(io.BytesIO(raw)).size


def images_of(content: Any) -> list[dict[str, Any]]:
    return [b for b in content if b["type"] == "image"] if isinstance(content, list) else []


def test_python_exec_declares_its_code(shell: Any) -> None:
    exec_tool = next(t for t in kernel_tools(shell) if t.name == "PythonExec")
    parsed = exec_tool.input_model.model_validate({"code": "x = 1\nx"})
    assert exec_tool.code_of(parsed) == ("python", "x = 1\nx")


async def test_displays_and_a_dataframe_value_are_kept_whole(shell: Any) -> None:
    pytest.importorskip("pandas")
    code = (
        "import pandas as pd\n"
        "from IPython.display import HTML, display\n"
        "print('made a frame')\n"
        "display(HTML('<i>hello</i>'))\n"
        "pd.DataFrame({'a': [1, 2], 'b': ['x', 'y']})"
    )
    output = await execute(shell, code)
    assert isinstance(output.data, str), "no images: the model's content stays a string"
    html, value = output.displays
    assert html["data"]["text/html"] == "<i>hello</i>"
    assert "text/html" in value["data"] and "<table" in value["data"]["text/html"]
    assert isinstance(value["metadata"], dict)
    assert output.data.startswith("[stdout]\nmade a frame\n\n[display]\n")
    assert "<IPython.core.display.HTML object>" in output.data
    assert output.data.endswith("[result]\n" + value["data"]["text/plain"])
    assert "a  b" in value["data"]["text/plain"].splitlines()[0]
    json.dumps(output.displays)  # JSON-safe


async def test_new_figures_are_shown_closed_and_sent_as_images(shell: Any) -> None:
    before = plt.figure()
    before.gca().plot([3, 2, 1])
    before.canvas.draw()  # drawn: not stale
    shell.user_ns["before"] = before
    code = (
        "import matplotlib.pyplot as plt\n"
        "fig, ax = plt.subplots()\n"
        "ax.plot([1, 4, 9])\n"
        "ax.set_title('squares')\n"
        "print('plotted')"
    )
    output = await execute(shell, code)
    assert plt.get_fignums() == [before.number], "the new figure is closed, the old one kept"
    [figure] = output.displays
    assert figure["data"]["text/plain"].startswith("<Figure size")
    assert png_size(figure["data"]["image/png"])[0] > 100
    content = output.data
    assert isinstance(content, list) and content[0]["type"] == "text"
    assert (
        "[stdout]\nplotted" in content[0]["text"]
        and "[display]\n<Figure size" in content[0]["text"]
    )
    [image] = images_of(content)
    assert image["source"]["media_type"] == "image/png"
    assert image["source"]["data"] == figure["data"]["image/png"]  # small: sent as it is


async def test_a_figure_open_before_and_drawn_on_is_shown_but_stays_open(shell: Any) -> None:
    before = plt.figure()
    before.gca().plot([1, 2])
    before.canvas.draw()
    untouched = plt.figure()
    untouched.canvas.draw()
    shell.user_ns["before"] = before
    output = await execute(shell, "before.gca().plot([2, 1])\nNone")
    assert sorted(plt.get_fignums()) == sorted([before.number, untouched.number])
    assert len(output.displays) == 1 and len(images_of(output.data)) == 1


async def test_at_most_four_images_and_big_ones_are_scaled_down(shell: Any) -> None:
    code = (
        "import matplotlib.pyplot as plt\n"
        "big = plt.figure(figsize=(40, 30))\n"
        "big.gca().plot(range(100))\n"
        "for n in range(4):\n"
        "    plt.figure().gca().plot([n, n + 1])\n"
    )
    output = await execute(shell, code)
    assert plt.get_fignums() == []
    assert len(output.displays) == 5
    big_width, big_height = png_size(output.displays[0]["data"]["image/png"])
    assert max(big_width, big_height) > MAX_IMAGE_SIDE  # people get it whole
    images = images_of(output.data)
    assert len(images) == MAX_IMAGES
    width, height = png_size(images[0]["source"]["data"])
    assert max(width, height) == MAX_IMAGE_SIDE
    assert abs(width / height - big_width / big_height) < 0.01
    assert "[1 more image not shown: at most 4 per result]" in output.data[0]["text"]
    shell.user_ns.pop("big", None)


def noise_png(side: int) -> bytes:
    import random

    rng = random.Random(7)
    image = PIL_Image.frombytes("RGB", (side, side), rng.randbytes(side * side * 3))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


async def test_an_image_over_the_byte_cap_is_shrunk_with_pillow(shell: Any) -> None:
    raw = noise_png(1000)
    assert len(raw) > MAX_IMAGE_BYTES
    shell.user_ns["noise"] = raw
    output = await execute(
        shell, "from IPython.display import Image, display\ndisplay(Image(data=noise))"
    )
    [bundle] = output.displays
    assert base64.b64decode(bundle["data"]["image/png"]) == raw  # people get it whole
    [image] = images_of(output.data)
    assert len(base64.b64decode(image["source"]["data"])) <= MAX_IMAGE_BYTES
    assert max(png_size(image["source"]["data"])) < 1000


async def test_without_pillow_an_image_over_the_cap_is_left_out_and_said_so(
    shell: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = noise_png(1000)
    shell.user_ns["noise"] = raw
    monkeypatch.setitem(sys.modules, "PIL", None)  # `from PIL import Image` fails
    output = await execute(
        shell, "from IPython.display import Image, display\ndisplay(Image(data=noise))"
    )
    assert len(output.displays) == 1
    assert isinstance(output.data, str), "no image left: the content is text"
    megabytes = f"{len(raw) / 1_000_000:.1f} MB"
    assert f"[image omitted: {megabytes}, over the 1 MB cap]" in output.data


async def test_errors_still_raise_with_the_text(shell: Any) -> None:
    with pytest.raises(ToolError) as raised:
        await execute(shell, "print('before')\nraise ValueError('bad value')")
    assert "[stdout]\nbefore" in str(raised.value) and "ValueError: bad value" in str(raised.value)


async def test_python_exec_through_the_pipeline_keeps_images_and_displays(
    shell: Any, tmp_path: Path
) -> None:
    class Allow:
        async def ask(self, request: Any) -> Any:
            from jupyter_toolhost.permissions.api import ApprovalDecision

            return ApprovalDecision("allow")

    tools = kernel_tools(shell)
    pipeline = Pipeline(results=ResultStore(tmp_path), can_use_tool=BasicCanUseTool(Allow()))
    context = ToolUseContext(options=ToolUseOptions(tools=tools), cwd=tmp_path)
    code = "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nprint('x' * 60_000)"
    result = await pipeline.run(ToolCall("toolu_py", "PythonExec", {"code": code}), context)
    assert not result.is_error
    assert isinstance(result.content, list)
    assert [b["type"] for b in result.content] == ["text", "image"]
    assert len(result.displays) == 1 and "image/png" in result.displays[0]["data"]
    block = result.to_block()
    assert block["content"] == result.content and "displays" not in block
