"""The Jupyter front end's parts in-process: transformer, options, renderers, live view,
timeline, and the kernel tools run through the real Pipeline on a real IPython shell."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell

from jupyter_toolhost.context import ToolUseContext, ToolUseOptions
from jupyter_toolhost.jupyter.kernel_tools import kernel_tools
from jupyter_toolhost.jupyter.live import LiveView
from jupyter_toolhost.jupyter.options import UsageError, parse_cell_line, parse_command
from jupyter_toolhost.jupyter.render import MIME_TYPE, CallCard, batch_display
from jupyter_toolhost.jupyter.timeline import timeline_display
from jupyter_toolhost.jupyter.transformer import agent_cell_transformer
from jupyter_toolhost.orchestration.events import CallFinished, CallQueued, CallStarted
from jupyter_toolhost.orchestration.pipeline import Pipeline
from jupyter_toolhost.permissions.api import ApprovalDecision, ApprovalRequest, BasicCanUseTool
from jupyter_toolhost.results import ResultStore
from jupyter_toolhost.types import ToolCall, ToolResult

# ── transformer and options ──────────────────────────────────────────────────────────────


def test_transformer_turns_an_agent_cell_into_one_await():
    lines = ["%%agent --mode plan\n", "What's in 'data.csv'?\n", "Be brief.\n"]
    [line] = agent_cell_transformer(lines)
    assert line.startswith("await __import__('jupyter_toolhost.jupyter.cell'")
    assert "run_agent_cell('--mode plan', \"What's in 'data.csv'?\\nBe brief.\\n\")" in line
    compile(line, "<cell>", "exec", flags=0x2000)  # PyCF_ALLOW_TOP_LEVEL_AWAIT


@pytest.mark.parametrize("first", ["%%agent?\n", "%%agents\n", "print(1)\n", "%agent status\n"])
def test_transformer_leaves_other_cells_alone(first: str):
    assert agent_cell_transformer([first, "x\n"]) == [first, "x\n"]


def test_cell_options_parse_and_fail_clearly():
    options = parse_cell_line("--model m1 --mode dontAsk --new --max-turns 3 --tools Read,Grep")
    assert (options.model, options.mode, options.new, options.max_turns, options.tools) == (
        "m1",
        "dontAsk",
        True,
        3,
        ("Read", "Grep"),
    )
    assert parse_cell_line("--cassette=demo.json").cassette == "demo.json"
    with pytest.raises(UsageError, match="Unknown mode 'sloppy'"):
        parse_cell_line("--mode sloppy")
    with pytest.raises(UsageError, match="Unknown option '--fast'"):
        parse_cell_line("--fast")
    with pytest.raises(UsageError, match="whole number"):
        parse_cell_line("--max-turns many")


def test_subcommands_parse():
    assert parse_command("").name == "status"
    rule = parse_command("allow Bash(ls -la) --save")
    assert (rule.name, rule.argument, rule.flags) == (
        "allow",
        "Bash(ls -la)",
        frozenset({"--save"}),
    )
    assert parse_command("history --timeline").flags == {"--timeline"}
    with pytest.raises(UsageError, match="needs a rule"):
        parse_command("deny")
    with pytest.raises(UsageError, match="Unknown subcommand"):
        parse_command("explode")


# ── renderers ────────────────────────────────────────────────────────────────────────────


def card(id: str, batch: int, started: float, ended: float, **extra: Any) -> CallCard:
    return CallCard(
        id, "Read", f"file_{id}.txt", batch, "done", started, ended, "contents", **extra
    )


def test_batch_text_and_html_do_not_depend_on_timing_or_ids():
    fast = batch_display([card("a", 0, 0.0, 0.1), card("b", 0, 0.0, 0.2)], batch=0).data
    slow = batch_display([card("x", 0, 5.0, 9.0), card("y", 0, 5.0, 7.5)], batch=0).data
    assert fast["text/plain"].replace("_a", "_x").replace("_b", "_y") == slow["text/plain"]
    assert "run concurrently" in fast["text/plain"]
    assert "0.1" not in fast["text/html"] and "toolu" not in fast["text/html"]
    assert fast[MIME_TYPE]["calls"][1]["duration"] == pytest.approx(0.2)


def test_persisted_result_is_a_collapsible_preview():
    persisted = card(
        "p",
        0,
        0,
        1,
        persisted_path=".toolhost/sessions/s/tool-results/p.txt",
        original_size=90_000,
    )
    persisted.result = (
        "<persisted-output>\nOutput too large (87.9KB). Full output saved to: x\n\n"
        "Preview (first 2KB):\nline 1\nline 2...\n</persisted-output>"
    )
    html = batch_display([persisted], batch=0).data["text/html"]
    assert "<details><summary>output: 90,000 characters, saved to" in html
    assert ".toolhost/sessions/s/tool-results/p.txt" in html
    assert "line 1\nline 2..." in html


def test_live_view_groups_finished_batches_in_call_order():
    shown: list[Any] = []

    class Handle:
        def update(self, obj: Any) -> None:
            shown.append(("update", obj))

    def display(obj: Any, **kwargs: Any) -> Any:
        shown.append(("display", obj))
        return Handle()

    written: list[str] = []
    view = LiveView(
        describe=lambda name, raw: (name, str(raw)), display=display, write=written.append
    )
    view.start()
    calls = [ToolCall(f"t{i}", "Read", {"file_path": f"f{i}"}) for i in range(3)]
    for call in calls:
        view.on_tool_event(CallQueued(call, "Read", True))
    for call in calls:
        view.on_tool_event(CallStarted(call.id, 1.0))

    def finished(i: int, batch: int) -> CallFinished:
        result = ToolResult(f"t{i}", f"text {i}", tool_name="Read")
        return CallFinished(f"t{i}", result, 0.5, "ok", batch)

    view.on_tool_event(finished(1, 0))  # completes first, but is shown second
    view.on_tool_event(finished(0, 0))
    view.on_tool_event(finished(2, 1))
    view.finish()
    displays = [obj.data["text/plain"] for kind, obj in shown if kind == "display"]
    batches = [d for d in displays if "Read" in d]
    assert batches[0].index("f0") < batches[0].index("f1")
    assert "f2" in batches[1] and "f0" not in batches[1]
    assert "3 tool calls" in displays[-1]
    assert shown[-2][0] == "update" and shown[-2][1].data["text/plain"] == ""


def test_timeline_is_svg_with_one_bar_per_call():
    shown = timeline_display(
        [card("a", 0, 0.0, 1.0), card("b", 0, 0.0, 0.5), card("c", 1, 1.0, 2.0)]
    )
    svg = shown.data["image/svg+xml"]
    assert svg.startswith("<svg") and svg.count("<rect") == 3
    assert "batch 1" in shown.data["text/plain"]


# ── kernel tools through the real pipeline ───────────────────────────────────────────────


class Approve:
    def __init__(self, choice: str = "allow") -> None:
        self.choice = choice
        self.asked: list[ApprovalRequest] = []

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        self.asked.append(request)
        return ApprovalDecision(self.choice)  # type: ignore[arg-type]


@pytest.fixture
def shell() -> Any:
    ip = InteractiveShell.instance()
    ip.user_ns.update({"numbers": [1, 2, 3], "label": "demo", "_hidden": 1})
    yield ip
    for name in ("numbers", "label", "_hidden", "y"):
        ip.user_ns.pop(name, None)


async def run_tool(shell: Any, tmp_path: Path, name: str, input: dict[str, Any], approver: Approve):
    tools = kernel_tools(shell)
    pipeline = Pipeline(results=ResultStore(tmp_path), can_use_tool=BasicCanUseTool(approver))
    context = ToolUseContext(options=ToolUseOptions(tools=tools), cwd=tmp_path)
    return await pipeline.run(ToolCall("toolu_1", name, input), context)


async def test_python_exec_asks_then_runs_in_the_user_namespace(shell: Any, tmp_path: Path):
    approver = Approve()
    code = "y = sum(numbers)\nprint('side effect')\ny * 2"
    result = await run_tool(shell, tmp_path, "PythonExec", {"code": code}, approver)
    assert [r.tool_name for r in approver.asked] == ["PythonExec"]
    assert not result.is_error
    assert result.content == "[stdout]\nside effect\n\n[result]\n12"
    assert shell.user_ns["y"] == 6


async def test_python_exec_denied_does_not_run(shell: Any, tmp_path: Path):
    result = await run_tool(shell, tmp_path, "PythonExec", {"code": "y = 1"}, Approve("deny"))
    assert result.is_error and "denied" in str(result.content)
    assert "y" not in shell.user_ns


async def test_python_exec_reports_errors_with_output_so_far(shell: Any, tmp_path: Path):
    code = "print('before')\n1 / 0"
    result = await run_tool(shell, tmp_path, "PythonExec", {"code": code}, Approve())
    assert result.is_error
    assert "before" in str(result.content) and "ZeroDivisionError" in str(result.content)


async def test_list_and_inspect_variables_are_read_only(shell: Any, tmp_path: Path):
    tools = {t.name: t for t in kernel_tools(shell)}
    for name in ("ListVariables", "InspectVariable"):
        assert tools[name].is_read_only(None) and tools[name].is_concurrency_safe(None)
    assert not tools["PythonExec"].is_read_only(None)
    approver = Approve()
    listed = await run_tool(shell, tmp_path, "ListVariables", {}, approver)
    assert "numbers" in str(listed.content) and "len 3" in str(listed.content)
    assert "_hidden" not in str(listed.content)
    inspected = await run_tool(shell, tmp_path, "InspectVariable", {"name": "label"}, approver)
    assert "label: str" in str(inspected.content) and "'demo'" in str(inspected.content)
    missing = await run_tool(shell, tmp_path, "InspectVariable", {"name": "Label"}, approver)
    assert missing.is_error and "Did you mean 'label'?" in str(missing.content)
    assert approver.asked == []


async def test_inspect_describes_a_dataframe(shell: Any, tmp_path: Path):
    pandas = pytest.importorskip("pandas")
    shell.user_ns["frame"] = pandas.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    try:
        result = await run_tool(shell, tmp_path, "InspectVariable", {"name": "frame"}, Approve())
    finally:
        shell.user_ns.pop("frame")
    text = str(result.content)
    assert "shape: 3×2" in text and "dtypes:" in text and "head:" in text and "describe:" in text
