"""The Jupyter front end's parts in-process: transformer, options, renderers, live view,
timeline, and the kernel tools run through the real Pipeline on a real IPython shell."""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError as IPythonUsageError
from IPython.core.interactiveshell import InteractiveShell

from jupyter_toolhost.core.context import ToolUseContext, ToolUseOptions
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.core.types import (
    DecisionReason,
    PermissionAllow,
    PermissionDeny,
    ToolCall,
    ToolResult,
)
from jupyter_toolhost.jupyter.config import ToolHost
from jupyter_toolhost.jupyter.host import AgentHost
from jupyter_toolhost.jupyter.kernel.kernel_tools import kernel_tools
from jupyter_toolhost.jupyter.magic.commands import run_async_command, run_line
from jupyter_toolhost.jupyter.magic.options import UsageError, parse_cell_line, parse_command
from jupyter_toolhost.jupyter.magic.transformer import agent_cell_transformer
from jupyter_toolhost.jupyter.views.cards import CallCard, batch_display, language_of_path
from jupyter_toolhost.jupyter.views.live import LiveView
from jupyter_toolhost.jupyter.views.render import FG2, MIME_TYPE
from jupyter_toolhost.jupyter.views.timeline import timeline_display
from jupyter_toolhost.jupyter.widgets.questions import WidgetQuestionAsker
from jupyter_toolhost.orchestration.events import CallFinished, CallQueued, CallStarted
from jupyter_toolhost.orchestration.pipeline import Pipeline
from jupyter_toolhost.permissions.api import ApprovalDecision, ApprovalRequest, BasicCanUseTool
from jupyter_toolhost.testing import MessagesServer, Turn, text
from jupyter_toolhost.tools import ask_user, bash

DEMO = str(Path(__file__).parents[1] / "mcp_servers" / "demo_server.py")

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


@pytest.mark.parametrize(
    ("cell", "line"),
    [
        ("%agent compact\n", "compact"),
        ("%agent mcp\n", "mcp"),
        (
            "%agent mcp add fs -- npx -y server --root '/a b'\n",
            "mcp add fs -- npx -y server --root '/a b'",
        ),
    ],
)
def test_awaiting_subcommands_become_one_await(cell: str, line: str):
    [code] = agent_cell_transformer([cell])
    assert code.endswith(f".run_agent_command({line!r})\n")
    compile(code, "<cell>", "exec", flags=0x2000)


def test_mcp_subcommands_parse():
    assert (parse_command("mcp").argument, parse_command("mcp list").argument) == ("list", "list")
    added = parse_command("mcp add fs -- npx -y server --root '/a b'")
    assert (added.name, added.argument) == ("mcp", "add")
    assert added.words == ("fs", "npx", "-y", "server", "--root", "/a b")
    assert parse_command("mcp restart fs").words == ("fs",)
    with pytest.raises(UsageError, match="NAME -- COMMAND"):
        parse_command("mcp add fs npx server")
    with pytest.raises(UsageError, match="one server name"):
        parse_command("mcp remove")
    with pytest.raises(UsageError, match="Unknown %agent mcp action 'stop'"):
        parse_command("mcp stop fs")


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
    assert "ran concurrently" in fast["text/plain"]
    assert "toolu" not in fast["text/html"] and "0.1" not in fast["text/plain"]
    # Durations are in the HTML for readers of a page, only inside the spans a comparison
    # masks: with those masked, the two runs' HTML is the same.
    assert f'<span class="toolhost-time" style="color:{FG2}">100 ms' in fast["text/html"]
    masked = [
        re.sub(r'(<span class="toolhost-time"[^>]*>)[^<]*', r"\1…", data["text/html"])
        for data in (fast, slow)
    ]
    assert masked[0].replace("_a", "_x").replace("_b", "_y") == masked[1]
    assert fast[MIME_TYPE]["calls"][1]["duration"] == pytest.approx(0.2)


def test_persisted_result_is_a_collapsible_preview_without_random_path_parts():
    saved = "/home/u/nb/.toolhost/sessions/0123456789ab/tool-results/toolu_p.txt"
    persisted = card("toolu_p", 0, 0, 1, persisted_path=saved, original_size=90_000)
    persisted.result = (
        f"<persisted-output>\nOutput too large (87.9KB). Full output saved to: {saved}\n\n"
        "Preview (first 2KB):\nline 1\nline 2...\n</persisted-output>"
    )
    data = batch_display([persisted], batch=0).data
    html, plain = data["text/html"], data["text/plain"]
    # Outside the working directory: no absolute path, only the folder and the file name;
    # the file is not here, so the size is the one the model was told (KB of 1,024 bytes).
    assert (
        '<div class="toolhost-saved">output: 87.9 KB, saved <code>tool-results/toolu_p.txt'
        "</code>, on the machine that ran the kernel</div>"
    ) in html
    assert "<summary>Preview</summary>" in html and "<a " not in html
    assert ">line 1\nline 2...</pre>" in html and "max-height:24em" in html
    assert plain.endswith("\n  output: 87.9 KB, saved to tool-results/toolu_p.txt")
    for shown_text in (html, plain):
        assert "0123456789ab" not in shown_text and "/home/u" not in shown_text
    assert data[MIME_TYPE]["calls"][0]["persisted_path"] == saved


def test_decision_and_language_reach_the_payload_and_only_rules_and_modes_the_text():
    settings = "/home/u/nb/.toolhost/settings.json"
    decisions = [
        PermissionDeny("no", DecisionReason("rule", "deny rule Bash(rm *)", settings)),
        PermissionAllow(reason=DecisionReason("mode", "bypassPermissions")),
        PermissionAllow(reason=DecisionReason("approver", "approved once")),
        PermissionAllow(reason=DecisionReason("hook", "allowed at 12:03:44", "hook.sh")),
    ]
    shown: list[Any] = []
    view = LiveView(
        describe=lambda name, raw: (name, str(raw["file_path"])),
        language=lambda name, raw: language_of_path(raw["file_path"]),
        display=lambda obj, **kwargs: shown.append(obj),
    )
    for i in range(len(decisions)):
        call = ToolCall(f"t{i}", "Read", {"file_path": f"src/m{i}.py"})
        view.on_tool_event(CallQueued(call, "Read", True))
    for i, decision in enumerate(decisions):
        result = ToolResult(f"t{i}", "text", tool_name="Read", decision=decision)
        status = "denied" if decision.behavior == "deny" else "ok"
        view.on_tool_event(CallFinished(f"t{i}", result, 0.1, status, 0))
    view.finish(footer=False)
    [batch] = [obj for obj in shown if obj.data[MIME_TYPE]["kind"] == "batch"]
    plain, html = batch.data["text/plain"], batch.data["text/html"]
    assert "⊘ Read: src/m0.py (deny rule Bash(rm *))" in plain
    assert "✓ Read: src/m1.py (mode bypassPermissions)" in plain
    assert "(deny rule Bash(rm *))" in html and "(mode bypassPermissions)" in html
    for shown_text in (plain, html):
        assert settings not in shown_text and "approved once" not in shown_text
        assert "12:03" not in shown_text
    calls = batch.data[MIME_TYPE]["calls"]
    assert calls[0]["decision"] == {
        "behavior": "deny",
        "reason": "deny rule Bash(rm *)",
        "kind": "rule",
        "source": ".toolhost/settings.json",  # as a person reads it, never the absolute path
    }
    assert settings not in json.dumps(batch.data[MIME_TYPE])
    assert calls[3]["decision"]["source"] == "hook.sh"
    assert [c["language"] for c in calls] == ["python"] * 4


def test_live_view_groups_finished_batches_in_call_order():
    shown: list[Any] = []

    class Handle:
        def update(self, obj: Any) -> None:
            shown.append(("update", obj))

    def display(obj: Any, **kwargs: Any) -> Any:
        shown.append(("display", obj))
        return Handle()

    view = LiveView(describe=lambda name, raw: (name, str(raw)), display=display)
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
    running = [
        obj.data[MIME_TYPE]
        for kind, obj in shown
        if kind == "update" and obj.data[MIME_TYPE]["calls"]
    ]
    assert running and all(p["status"] == "running" for p in running)
    assert all(isinstance(p["elapsed"], float) and p["elapsed"] >= 0 for p in running)
    assert all("running…" not in str(p) for p in running)


def test_batches_count_on_through_the_model_responses_of_a_cell():
    shown: list[Any] = []
    view = LiveView(
        describe=lambda name, raw: (name, str(raw)),
        display=lambda obj, **kwargs: shown.append(obj),
    )
    view.start()
    for ids in (["a", "b"], ["c"]):
        for call_id in ids:
            view.on_tool_event(CallQueued(ToolCall(call_id, "Read", {}), "Read", True))
            view.on_tool_event(CallStarted(call_id, 1.0))
        for call_id in ids:  # each response numbers its own batches from 0
            result = ToolResult(call_id, "x", tool_name="Read")
            view.on_tool_event(CallFinished(call_id, result, 0.1, "ok", 0))
        view.summary.model_requests += 1  # what the cell's sink does at each TurnEnd
    view.finish()
    assert [view.cards[i].batch for i in "abc"] == [1, 1, 2]
    shown_batches = [o.data[MIME_TYPE].get("batch") for o in shown if MIME_TYPE in o.data]
    assert [b for b in shown_batches if b is not None][:2] == [1, 2], shown_batches


def test_timeline_is_svg_with_one_bar_per_call():
    shown = timeline_display(
        [card("a", 0, 0.0, 1.0), card("b", 0, 0.0, 0.5), card("c", 1, 1.0, 2.0)]
    )
    svg = shown.data["image/svg+xml"]
    assert svg.startswith("<svg") and svg.count('class="toolhost-bar"') == 3
    assert "Batch 1" in shown.data["text/plain"]


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


async def test_bash_output_saved_by_bash_itself_gets_the_preview(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("JUPYTER_TOOLHOST_HOME", str(tmp_path / ".toolhost"))
    monkeypatch.chdir(tmp_path)  # the notebook's folder: saved results are linked from it
    pipeline = Pipeline(
        results=ResultStore(tmp_path / "results"), can_use_tool=BasicCanUseTool(Approve())
    )
    context = ToolUseContext(options=ToolUseOptions(tools=[bash.make_tool()]), cwd=tmp_path)
    command = "seq 1 12000"  # 60,894 bytes: over Bash's own budget and the 50,000 cap
    result = await pipeline.run(ToolCall("toolu_big", "Bash", {"command": command}), context)
    assert not result.is_error and result.persisted_path is None  # Bash saved it, not us
    shown: list[Any] = []
    view = LiveView(
        describe=lambda name, raw: (name, raw["command"]),
        display=lambda obj, **kwargs: shown.append(obj),
    )
    view.on_tool_event(
        CallQueued(ToolCall("toolu_big", "Bash", {"command": command}), "Bash", False)
    )
    view.on_tool_event(CallFinished("toolu_big", result, 0.2, "ok", 0))
    view.finish(footer=False)
    [batch] = [obj.data for obj in shown if obj.data[MIME_TYPE]["kind"] == "batch"]
    html, plain = batch["text/html"], batch["text/plain"]
    link = f".toolhost/sessions/{context.session_id}/tool-results/toolu_big-bash.txt"
    # The server hides .toolhost/: no link that 404s; where it lives, and how to see it all.
    assert (
        f'<div class="toolhost-saved">output: 59.5 KB, saved in the notebook\'s folder, '
        f"<code>{link}</code> (not part of this page; in a running notebook "
        f"<code>%agent output {link}</code> shows it all)</div>"
    ) in html
    assert "<a " not in html
    assert ">1\n2\n3\n" in html
    # The preview says it is cut, and by how much: 12,000 lines in all (KB of 1,024 bytes).
    preview = html.split("<pre")[1].split(">", 1)[1].split("</pre>")[0]
    shown_lines = preview.rstrip("\n").count("\n") + 1  # 527: whole lines of the 2 KB
    assert f"… {12_000 - shown_lines:,} more lines, 59.5 KB saved" in html
    assert batch[MIME_TYPE]["calls"][0]["saved"]["cut"] == (
        f"… {12_000 - shown_lines:,} more lines, 59.5 KB saved"
    )
    assert plain == f"✓ Bash: {command}\n  output: 59.5 KB, saved to {link}"
    for shown_text in (html, plain):
        assert str(tmp_path) not in shown_text
    saved = Path(batch[MIME_TYPE]["calls"][0]["persisted_path"])
    assert saved == context.session_dir() / "tool-results" / "toolu_big-bash.txt"
    assert saved.read_text().splitlines()[-1] == "12000"


async def test_unanswered_questions_fail_clearly_through_the_pipeline(tmp_path: Path, shell: Any):
    pipeline = Pipeline(results=ResultStore(tmp_path), can_use_tool=BasicCanUseTool(Approve()))
    lines: list[str] = []
    question = {
        "question": "Which file?",
        "header": "File",
        "options": [{"label": "a", "description": "A"}, {"label": "b", "description": "B"}],
    }
    call = ToolCall("toolu_q", "AskUserQuestion", {"questions": [question]})
    tools = [ask_user.make_tool()]
    headless = ToolUseContext(options=ToolUseOptions(tools=tools), cwd=tmp_path)
    absent = await pipeline.run(call, headless)
    assert absent.is_error and "No user is available" in str(absent.content)

    # Plain IPython (no kernel): nothing can show the questions, so even with a timeout
    # they fail at once (the timeout applies where a kernel could show them).
    asker = WidgetQuestionAsker(timeout=30, emit=lines.append)
    options = ToolUseOptions(tools=tools, question_asker=asker)
    waiting = ToolUseContext(options=options, cwd=tmp_path)
    started = time.monotonic()
    unanswered = await pipeline.run(call, waiting)
    assert time.monotonic() - started < 5
    assert unanswered.is_error
    assert "No front end that shows widgets is connected" in str(unanswered.content)
    assert lines == ["Questions not asked (no front end to ask)"]


@pytest.fixture
def host(shell: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AgentHost]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("JUPYTER_TOOLHOST_HOME", str(tmp_path / ".toolhost"))
    made = AgentHost(shell, ToolHost())
    yield made


def test_host_knows_the_language_of_what_a_read_only_tool_reads(host: AgentHost):
    host.ensure_session()
    assert host.calls.language("Read", {"file_path": "src/model.py"}) == "python"
    assert host.calls.language("Read", {"file_path": "notes.txt"}) is None
    assert host.calls.language("Write", {"file_path": "a.py", "content": "x"}) is None
    assert host.calls.language("Nope", {"file_path": "a.py"}) is None


@pytest.mark.timeout(60)
async def test_agent_mcp_adds_lists_restarts_and_removes_a_server(
    host: AgentHost, monkeypatch: pytest.MonkeyPatch
):
    with MessagesServer() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        empty = await run_async_command(host, "mcp")
        assert "No MCP servers are configured" in str(empty)
        assert "%agent mcp add NAME -- COMMAND ARGS" in str(empty)
        try:
            added = await run_async_command(host, f"mcp add demo -- {sys.executable} {DEMO}")
            assert "Added MCP server demo: connected, 9 tools (stdio)" in str(added)
            listed = await run_async_command(host, "mcp")
            assert listed is not None
            assert listed.data[MIME_TYPE]["rows"] == [["demo", "connected", "9", "stdio", "", ""]]

            server.add_turns(Turn([text("I see the demo tools.")]))
            assert await host.session.run("what can you use?") == "I see the demo tools."
            # Deferred, as MCP tools are: announced to the model, found through ToolSearch.
            assert "mcp__demo__add" in json.dumps(server.requests[-1].body["messages"])

            restarted = await run_async_command(host, "mcp restart demo")
            assert "Restarted MCP server demo: connected" in str(restarted)
            with pytest.raises(UsageError, match="already exists"):
                await run_async_command(host, f"mcp add demo -- {sys.executable} {DEMO}")
            with pytest.raises(IPythonUsageError, match="runs as a cell of its own"):
                run_line(host, "mcp restart demo")
            removed = await run_async_command(host, "mcp remove demo")
            assert "Removed MCP server demo" in str(removed)
            assert "No MCP servers are configured" in str(await run_async_command(host, "mcp"))
            with pytest.raises(UsageError, match="No MCP server named 'demo'"):
                await run_async_command(host, "mcp restart demo")
        finally:
            await host.session.close()


def test_rules_and_mode_chosen_before_the_first_cell_apply_to_it(host: AgentHost):
    run_line(host, "allow Bash(seq:*)")
    run_line(host, "deny Read(./secrets/**)")
    run_line(host, "mode acceptEdits")
    assert host.session is None and len(host.pending_rules) == 2
    session = host.ensure_session()
    context = session.context.get_app_state().tool_permission_context
    assert context.rules["session"]["allow"] == ("Bash(seq:*)",)
    assert context.rules["session"]["deny"] == ("Read(./secrets/**)",)
    assert context.mode == "acceptEdits" and host.pending_rules == []


def test_rules_added_to_a_session_go_through_its_add_rule(host: AgentHost):
    session = host.ensure_session()
    run_line(host, "ask Bash(git push:*)")
    run_line(host, "allow Bash(seq:*)")
    assert session.rules["session"] == {"ask": ("Bash(git push:*)",), "allow": ("Bash(seq:*)",)}
    assert session.check("Bash", "seq 3").mode("default").behavior == "allow"
    assert "Bash(git push:*)" in str(run_line(host, "rules"))
    with pytest.raises(IPythonUsageError, match="Not a valid rule"):
        run_line(host, "deny Bash(unclosed")
    # The session was made for this kernel: scheduled prompts are shown by the host.
    scheduled = session.context.options.run_prompt
    assert scheduled is not None and scheduled.func == host.run_scheduled  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("check", "check"),  # no tool at all
        ("check Bash", "check"),  # no input
        ("check Nope ls", "Unknown tool 'Nope'"),
        ("check Read '{\"file_path\": '", "JSON"),
        ("check Read '{\"file_path\": 3}'", "file_path"),
        ('check Bash "rm -rf / && echo $(cat ~/.ssh/id_rsa)"', None),  # parsed, never run
        ("request 0", "1 is the first"),
        ("request -999", "no model request"),
        ("request first", "request"),
        ("request", None),
    ],
)
def test_hostile_x_ray_lines_get_a_clear_answer_and_run_nothing(
    host: AgentHost, tmp_path: Path, line: str, says: str | None
):
    host.ensure_session()
    marker = tmp_path / "ran"
    try:
        shown = run_line(host, line.replace("echo", f"touch {marker}; echo"))
    except (IPythonUsageError, UsageError) as error:
        assert says is not None and says.lower() in str(error).lower(), str(error)
        return
    text = json.dumps(getattr(shown, "data", None) or repr(shown))
    if says is not None:
        assert says.lower() in text.lower(), text[:500]
    assert not marker.exists(), "a check never runs the command"


def test_agent_rules_shows_a_rule_for_a_tool_that_is_not_here_as_inactive(host: AgentHost):
    host.ensure_session()
    run_line(host, "allow PowerShell(Get-ChildItem -Path \\(Resolve-Path .\\))")
    run_line(host, "deny Skill(review)")
    shown = str(run_line(host, "rules"))
    assert "inactive: there is no PowerShell tool here" in shown
    assert "Skill(review)" in shown and "inactive: there is no Skill" not in shown
