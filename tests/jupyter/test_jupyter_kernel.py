"""`%%agent` in a real kernel driven over jupyter_client, with the loopback Messages API.

One kernel and one scripted server are shared by the module; each test starts a new
conversation (`--new`) and appends its own model turns. Clicks are the `comm_msg` a browser
sends to a Button's comm while the cell is busy.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from kernel_helpers import Kernel, is_answer

from jupyter_toolhost.jupyter.views.render import MIME_TYPE as TOOLHOST_MIME
from jupyter_toolhost.jupyter.widgets.approval import FEEDBACK_PLACEHOLDER
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

pytestmark = pytest.mark.timeout(90)


def last_tool_results(server: MessagesServer) -> list[dict[str, Any]]:
    """The tool_result blocks of the last request's last user message."""
    message = server.requests[-1].body["messages"][-1]
    assert message["role"] == "user"
    return [b for b in message["content"] if b.get("type") == "tool_result"]


def result_text(block: dict[str, Any]) -> str:
    content = block["content"]
    return content if isinstance(content, str) else json.dumps(content)


def test_allow_runs_the_tool_and_the_same_cell_finishes(kernel: Kernel, server: MessagesServer):
    server.add_turns(
        Turn(
            [
                text("Let me compute."),
                tool_use("PythonExec", {"code": "x = 41\nprint('hi')\nx + 1"}),
            ]
        ),
        Turn([text("The answer is 42.")]),
    )
    run = kernel.submit("%%agent --new\nWhat is 41 + 1?")
    [allow] = kernel.wait_for_button(run, "Allow once")
    assert run.finished_at is None, "the cell must stay busy while the prompt waits"
    kernel.click(allow)
    kernel.wait(run)

    assert run.status == "ok", run.text()
    assert "Allowed PythonExec: x = 41 print('hi') x + 1 (once)" in run.stdout
    assert "The answer is 42." in run.answer
    assert any("✓ PythonExec" in d for d in kernel.runs[run.msg_id].displays())
    [result] = last_tool_results(server)
    assert "[stdout]\nhi" in result_text(result) and "[result]\n42" in result_text(result)
    assert kernel.run("print(x)").stdout == "41\n"


def test_always_allow_stops_the_next_identical_ask(kernel: Kernel, server: MessagesServer):
    call = {"code": "counter = globals().get('counter', 0) + 1"}
    server.add_turns(
        Turn([tool_use("PythonExec", call)]),
        Turn([tool_use("PythonExec", call)]),
        Turn([text("Counted twice.")]),
    )
    run = kernel.submit("%%agent --new\nCount twice")
    [always] = kernel.wait_for_button(run, "Always allow")
    kernel.click(always)
    kernel.wait(run)

    assert run.status == "ok", run.text()
    assert len(kernel.buttons("Always allow", run)) == 1, "the second call must not ask"
    assert "Counted twice." in run.answer
    assert kernel.run("print(counter)").stdout == "2\n"


def test_two_concurrent_asks_each_get_a_prompt(kernel: Kernel, server: MessagesServer):
    define = kernel.run(
        "from jupyter_toolhost import tool\n"
        "@tool(concurrency_safe=True)\n"
        "def note(text: str) -> str:\n"
        "    'Write a note.'\n"
        "    return 'noted ' + text\n"
    )
    assert define.status == "ok", define.text()
    server.add_turns(
        Turn([tool_use("note", {"text": "one"}), tool_use("note", {"text": "two"})]),
        Turn([text("Both noted.")]),
    )
    run = kernel.submit("%%agent --new\nNote twice")
    first, second = kernel.wait_for_button(run, "Allow once", count=2)
    kernel.click(second)
    kernel.click(first)
    kernel.wait(run)

    assert run.status == "ok", run.text()
    results = last_tool_results(server)
    assert [result_text(r) for r in results] == ["noted one", "noted two"]
    assert "Both noted." in run.answer
    assert any("ran concurrently" in d for d in run.displays())


def test_run_all_runs_the_queued_cell_after_the_agent(kernel: Kernel, server: MessagesServer):
    server.add_turns(
        Turn([tool_use("PythonExec", {"code": "order = ['agent']"})]),
        Turn([text("Done.")]),
    )
    agent = kernel.submit("%%agent --new\nRecord the order")
    after = kernel.submit("order.append('next cell'); print(order)")
    [allow] = kernel.wait_for_button(agent, "Allow once")
    assert not after.messages, "the queued cell must not start while the agent waits"
    kernel.click(allow)
    kernel.wait(agent)
    kernel.wait(after)

    assert agent.status == "ok" and after.status == "ok"
    assert after.stdout == "['agent', 'next cell']\n"
    assert agent.finished_at is not None and after.finished_at is not None
    assert agent.finished_at <= after.finished_at


def test_interrupt_during_a_tool(kernel: Kernel, server: MessagesServer):
    server.add_turns(
        Turn([tool_use("Sleep", {"duration_ms": 30_000})]), Turn([text("Resumed fine.")])
    )
    run = kernel.submit("%%agent --new --mode bypassPermissions\nWait a long time")
    kernel.wait(run, until=lambda: any("Sleep" in d for d in run.displays()) or _running(run))
    time.sleep(0.3)
    sent = kernel.interrupt()
    kernel.wait(run, timeout=15)

    assert run.status == "error" and run.error is not None
    assert run.error["ename"] == "AgentInterrupted"  # a KeyboardInterrupt
    assert run.finished_at is not None
    assert run.finished_at - sent < 3.0
    assert "Interrupted" in run.text()
    assert kernel.run("print(1 + 1)").stdout == "2\n"
    follow = kernel.run("%%agent\nAre you still there?")
    assert follow.status == "ok", follow.text()
    assert "Resumed fine." in follow.answer
    assert not server.errors, server.errors


def test_interrupt_during_a_prompt(kernel: Kernel, server: MessagesServer):
    server.add_turns(Turn([tool_use("PythonExec", {"code": "print('never' + 'ran')"})]))
    run = kernel.submit("%%agent --new\nDo something risky")
    [allow] = kernel.wait_for_button(run, "Allow once")
    sent = kernel.interrupt()
    kernel.wait(run, timeout=15)

    assert run.error is not None and run.error["ename"] == "AgentInterrupted"
    assert run.finished_at is not None
    assert run.finished_at - sent < 3.0
    assert "Approval prompt closed (interrupted): PythonExec" in run.stdout
    assert "neverran" not in run.stdout
    disabled = [
        m
        for m in run.messages
        if m["msg_type"] == "comm_msg"
        and m["content"]["comm_id"] == allow
        and m["content"]["data"].get("state", {}).get("disabled") is True
    ]
    assert disabled, "the prompt's buttons must be disabled once it is closed"
    assert kernel.run("print('usable')").stdout == "usable\n"


def _running(run: Any) -> bool:
    return any(
        m["msg_type"] == "update_display_data" and "running" in json.dumps(m["content"]["data"])
        for m in run.messages
    )


def test_nbclient_runs_a_notebook_in_dont_ask_mode(
    server: MessagesServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import nbclient  # in the test extra: a missing client is a failure, not a skip
    import nbformat

    question = {
        "question": "Which file?",
        "header": "File",
        "options": [
            {"label": "a.csv", "description": "the first"},
            {"label": "b.csv", "description": "the second"},
        ],
    }
    server.add_turns(
        Turn(
            [
                text("Checking."),
                tool_use("PythonExec", {"code": "print('should not run')"}),
                tool_use("AskUserQuestion", {"questions": [question]}),
            ]
        ),
        Turn([text("I was not allowed to run code.")]),
    )
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("JUPYTER_TOOLHOST_HOME", str(tmp_path / ".toolhost"))
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("%load_ext jupyter_toolhost"),
        nbformat.v4.new_code_cell("%%agent --mode dontAsk\nRun something"),
        nbformat.v4.new_code_cell("print('after the agent')"),
    ]
    client = nbclient.NotebookClient(
        notebook, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()

    agent_outputs = notebook.cells[1].outputs
    streams = "".join(o.get("text", "") for o in agent_outputs if o.output_type == "stream")
    plain = "\n".join(
        o["data"].get("text/plain", "") for o in agent_outputs if o.output_type == "display_data"
    )
    answers = [o["data"]["text/plain"] for o in agent_outputs if is_answer(o)]
    assert "I was not allowed to run code." in answers  # the model's words
    assert "should not run" not in streams
    assert "⊘ PythonExec: print('should not run')" in plain
    [denied_card] = [
        call
        for o in agent_outputs
        if o.output_type == "display_data" and TOOLHOST_MIME in o["data"]
        for call in o["data"][TOOLHOST_MIME].get("calls", [])
        if call["name"] == "PythonExec"
    ]
    assert denied_card["decision"]["behavior"] == "deny"
    # dontAsk means nobody is asked: AskUserQuestion fails clearly instead of waiting.
    denied, unasked = last_tool_results(server)
    assert denied.get("is_error") and unasked.get("is_error")
    assert "No user is available to answer questions" in result_text(unasked)
    assert not any(
        "application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in agent_outputs
    )
    after = "".join(o.get("text", "") for o in notebook.cells[2].outputs)
    assert after == "after the agent\n"


def test_ask_user_question_is_answered_in_the_cell(kernel: Kernel, server: MessagesServer):
    questions = [
        {
            "question": "Which library should load the data?",
            "header": "Library",
            "options": [
                {"label": "pandas", "description": "DataFrames, the usual choice"},
                {"label": "polars", "description": "faster on big files"},
                {"label": "polars with lazy frames (Recommended)", "description": "streams"},
            ],
        },
        {
            "question": "What should I add?",
            "header": "Extras",
            "options": [
                {"label": "Tests", "description": "pytest cases"},
                {"label": "Docs", "description": "a README section"},
                {"label": "Plots", "description": "a chart of the totals"},
            ],
            "multiSelect": True,
        },
    ]
    server.add_turns(
        Turn([tool_use("AskUserQuestion", {"questions": questions})]),
        Turn([text("Thanks, going with that.")]),
    )
    run = kernel.submit("%%agent --new\nLoad data.csv")
    [submit] = kernel.wait_for_button(run, "Submit")
    assert run.finished_at is None, "the cell must stay busy while the questions wait"
    [pandas] = kernel.toggles("pandas", run)
    [polars] = kernel.toggles("polars", run)
    # A long label is not cut: the button is as wide as its label.
    [long] = kernel.toggles("polars with lazy frames (Recommended)", run)
    layout = kernel.widgets[kernel.widgets[long]["layout"].removeprefix("IPY_MODEL_")]
    assert layout["width"] == "auto" and layout["min_width"] == "fit-content", layout
    kernel.set_value(pandas, True)
    kernel.set_value(polars, True)  # one choice only: polars replaces pandas
    kernel.set_value(kernel.toggles("Tests", run)[0], True)
    kernel.set_value(kernel.toggles("Docs", run)[0], True)
    other = kernel.texts("Other: your own answer", run)
    assert len(other) == 2
    kernel.set_value(other[1], "a benchmark")
    kernel.click(submit)
    kernel.wait(run)

    assert run.status == "ok", run.text()
    [result] = last_tool_results(server)
    assert not result.get("is_error"), result_text(result)
    answer = result_text(result)
    assert '"Which library should load the data?"="polars"' in answer
    assert '"What should I add?"="Tests, Docs, a benchmark"' in answer
    assert "Answered: Library: polars; Extras: Tests, Docs, a benchmark" in run.stdout
    assert "Thanks, going with that." in run.answer
    assert any("Which library should load the data?" in h for h in kernel.html_values(run))


def test_a_plan_is_rendered_then_rejected_and_approved(kernel: Kernel, server: MessagesServer):
    plan = "## Steps\n\n1. Read `data.csv`\n2. Add a **total** column\n\n<b>not html</b>"
    server.add_turns(
        Turn([tool_use("ExitPlanMode", {"plan": plan})]),
        Turn([tool_use("ExitPlanMode", {"plan": plan + "\n3. Check the row count"})]),
        Turn([text("Starting on the plan.")]),
    )
    run = kernel.submit("%%agent --new --mode plan\nPlan adding a total column")
    [deny] = kernel.wait_for_button(run, "Deny")
    kernel.wait(run, until=lambda: any("Approve this plan?" in h for h in kernel.html_values(run)))
    [header] = [h for h in kernel.html_values(run) if "Approve this plan?" in h]
    assert "<h2>Steps</h2>" in header and "<code>data.csv</code>" in header
    assert "<strong>total</strong>" in header and "<li>" in header
    assert "&lt;b&gt;not html&lt;/b&gt;" in header  # raw HTML in a plan stays text
    kernel.set_value(kernel.wait_for_text(run, FEEDBACK_PLACEHOLDER), "count rows")
    kernel.click(deny)
    allows = kernel.wait_for_button(run, "Allow once", count=2)
    kernel.click(allows[1])
    kernel.wait(run)

    assert run.status == "ok", run.text()
    rejected, approved = (
        next(b for b in r.body["messages"][-1]["content"] if b.get("type") == "tool_result")
        for r in server.requests[-2:]
    )
    assert rejected.get("is_error") and "count rows" in result_text(rejected)
    assert not approved.get("is_error") and "approved your plan" in result_text(approved)
    assert "Denied ExitPlanMode" in run.stdout and "Allowed ExitPlanMode" in run.stdout
    assert "Starting on the plan." in run.answer
    assert "Permission mode: default" in kernel.run("%agent mode").text()


def test_agent_mcp_runs_as_an_awaiting_cell(kernel: Kernel):
    listed = kernel.run("%agent mcp")
    assert listed.status == "ok" and "No MCP servers are configured" in listed.text()
    missing = kernel.run("%agent mcp restart nowhere")
    assert missing.status == "error" and "No MCP server named 'nowhere'" in missing.text()


def test_a_scheduled_prompt_fires_twice_into_its_own_area(kernel: Kernel, server: MessagesServer):
    def pings() -> int:
        return sum(
            1
            for r in server.requests
            if r.body.get("messages") and r.body["messages"][-1]["content"][0].get("text") == "PING"
        )

    server.add_turns(
        Turn([tool_use("CronCreate", {"cron": "@every 1s", "prompt": "PING"})]),
        Turn([text("Scheduled.")]),
        *(Turn([text(f"pong {n}")]) for n in range(1, 11)),
    )
    run = kernel.run("%%agent --new --mode bypassPermissions\nPing me every second")
    assert run.status == "ok", run.text()
    assert "Scheduled prompts of this conversation show their runs below" in run.stdout
    deadline = time.monotonic() + 15
    while pings() < 2 and time.monotonic() < deadline:
        assert kernel.run("print('usable')").stdout == "usable\n"  # the kernel stays usable
        time.sleep(0.3)
    assert pings() >= 2

    def shown() -> str:
        return kernel.run(
            "from jupyter_toolhost.jupyter.cell import current_host\n"
            "print([o['text'] for o in current_host().scheduled_area.outputs][:2])"
        ).stdout

    # The second answer is shown a moment after its request arrived (a loaded machine was
    # seen between the two).
    while "pong 2" not in shown() and time.monotonic() < deadline + 5:
        time.sleep(0.2)
    areas = shown()
    assert "⏰ PING\\npong 1\\n" in areas and "⏰ PING\\npong 2\\n" in areas, areas
    kernel.run("%agent reset")
    fired = pings()
    time.sleep(1.5)
    assert pings() == fired  # the schedule stopped with the conversation
    assert not server.errors, server.errors
