"""What an `%%agent` cell shows, in a real kernel driven over jupyter_client: the agent's
plots and tables under the card of the call that made them (and the image in the model's
tool_result), the code it ran, the live panel that ticks and shows a command's output,
checklists, a sub-agent's calls nested in its card, and saved results read through the
kernel's comm."""

from __future__ import annotations

import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from kernel_helpers import CellRun, Kernel

from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

MIME = "application/vnd.jupyter.toolhost.v1+json"
PLOT = """import matplotlib.pyplot as plt
import pandas as pd
frame = pd.DataFrame({"klass": ["A", "B"], "mean": [84.7, 71.2]})
ax = frame.plot.bar(x="klass", y="mean", title="Mean score")
frame"""

pytestmark = pytest.mark.timeout(90)


def outputs(run: CellRun) -> list[dict[str, Any]]:
    """The display outputs of a cell, in order (updates of the live panel left out)."""
    return [m["content"] for m in run.messages if m["msg_type"] == "display_data"]


def payloads(run: CellRun, kind: str) -> list[dict[str, Any]]:
    return [
        o["data"][MIME]
        for o in outputs(run)
        if MIME in o["data"] and o["data"][MIME]["kind"] == kind
    ]


def live_updates(run: CellRun) -> list[dict[str, Any]]:
    return [
        m["content"]["data"][MIME]
        for m in run.messages
        if m["msg_type"] == "update_display_data"
        and m["content"]["data"].get(MIME, {}).get("kind") == "live"
    ]


def test_plot_and_table_land_under_their_card_and_the_model_sees_the_plot(
    kernel: Kernel, server: MessagesServer
) -> None:
    kernel.run("%agent allow PythonExec")
    server.add_turns(
        Turn([tool_use("PythonExec", {"code": PLOT})]),
        Turn([text("Class A leads.")]),
    )
    run = kernel.run("%%agent\nPlot the mean score per class.", timeout=60)
    assert run.status == "ok", run.text()

    shown = outputs(run)
    kinds = [o["data"][MIME]["kind"] if MIME in o["data"] else sorted(o["data"]) for o in shown]
    batch_at = kinds.index("batch")
    # Right under the card, in the order a cell shows them: the value of the last line (the
    # DataFrame, as an HTML table), then the plot; the footer after.
    assert "text/html" in kinds[batch_at + 1]
    assert "<table" in shown[batch_at + 1]["data"]["text/html"]
    assert kinds[batch_at + 2] == ["image/png", "text/plain"], kinds
    # Then the answer: a streaming display that starts empty, then the final Markdown.
    assert kinds[batch_at + 3 :] == ["answer", ["text/html", "text/plain"], "footer"], kinds
    assert shown[batch_at + 4]["data"]["text/plain"] == "Class A leads."
    assert "<p>Class A leads.</p>" in shown[batch_at + 4]["data"]["text/html"]
    assert shown[batch_at + 2]["data"]["text/plain"].startswith("<Figure size")

    [card] = payloads(run, "batch")[0]["calls"]
    assert card["code"] == {"language": "python", "source": PLOT, "insertable": True}
    assert card["displays_below"] == 2
    html = shown[batch_at]["data"]["text/html"]
    assert 'frame.plot.bar(x="klass"' in html  # the whole code, not a cut summary
    assert "2 outputs below" in shown[batch_at]["data"]["text/plain"]

    # The model got the text and the picture.
    result = server.requests[-1].body["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and not result.get("is_error")
    blocks = result["content"]
    assert [b["type"] for b in blocks] == ["text", "image"]
    assert blocks[1]["source"]["media_type"] == "image/png"
    assert "[result]" in blocks[0]["text"] and "84.7" in blocks[0]["text"]

    # The figure was shown once, under its card: the inline backend does not draw it again.
    after = kernel.run("import matplotlib.pyplot as plt\nprint(plt.get_fignums())")
    assert after.stdout.strip() == "[]"
    assert not [o for o in shown[batch_at + 4 :] if "image/png" in o["data"]]


def test_the_live_panel_ticks_and_shows_a_commands_newest_lines(
    kernel: Kernel, server: MessagesServer
) -> None:
    kernel.run("%agent allow Bash")
    command = "for i in 1 2 3 4; do echo step $i; sleep 0.8; done"
    server.add_turns(
        Turn([tool_use("Bash", {"command": command, "description": "count slowly"})]),
        Turn([text("Counted.")]),
    )
    run = kernel.run("%%agent\nCount slowly.", timeout=60)
    assert run.status == "ok", run.text()

    running = [u for u in live_updates(run) if u["status"] == "running"]
    elapsed = [u["calls"][0]["elapsed"] for u in running if u["calls"][0]["elapsed"] is not None]
    # Over about 3.2 s the clock moved at least once a second, with no event from the tool.
    assert len(elapsed) >= 3 and elapsed[-1] - elapsed[0] >= 2.0, elapsed
    tails = [u["calls"][0]["tail"] for u in running if u["calls"][0]["tail"]]
    # The newest lines arrived while the command ran, and grew as it printed more.
    assert tails and tails[0][-1].startswith("step"), tails
    assert len(tails[-1]) > len(tails[0]) and tails[-1][:2] == ["step 1", "step 2"], tails
    # Live updates are transient: the panel ends empty, the batch card has no tail.
    assert live_updates(run)[-1]["status"] == "idle"
    [card] = payloads(run, "batch")[0]["calls"]
    assert card["tail"] == [] and card["code"]["language"] == "shell"
    assert card["code"]["insertable"] is False


def test_a_checklist_updates_in_the_live_panel_and_stays_on_each_card(
    kernel: Kernel, server: MessagesServer
) -> None:
    first = [
        {"content": "Load data", "status": "in_progress", "activeForm": "Loading data"},
        {"content": "Plot", "status": "pending", "activeForm": "Plotting"},
    ]
    second = [
        {"content": "Load data", "status": "completed", "activeForm": "Loading data"},
        {"content": "Plot", "status": "in_progress", "activeForm": "Plotting"},
    ]
    server.add_turns(
        Turn([tool_use("ToolSearch", {"query": "todo checklist"})]),
        Turn([tool_use("TodoWrite", {"todos": first})]),
        Turn([tool_use("Sleep", {"duration_ms": 1500})]),
        Turn([tool_use("TodoWrite", {"todos": second})]),
        Turn([text("Half done.")]),
    )
    run = kernel.run("%%agent\nPlan it.", timeout=60)
    assert run.status == "ok", run.text()

    # While Sleep ran, the live panel showed the first checklist, the active item first.
    during = [
        u
        for u in live_updates(run)
        if u["status"] == "running" and u["calls"][0]["name"] == "Sleep" and u.get("checklist")
    ]
    assert during and [i["status"] for i in during[-1]["checklist"]] == ["in_progress", "pending"]
    checklists = [
        call["checklist"]
        for batch in payloads(run, "batch")
        for call in batch["calls"]
        if call["checklist"]
    ]
    assert [[item["status"] for item in c] for c in checklists] == [
        ["in_progress", "pending"],
        ["completed", "in_progress"],
    ]
    assert checklists[0][0]["active_form"] == "Loading data"
    plain = "\n".join(run.displays())
    assert "◐ Loading data" in plain and "☑ Load data" in plain and "◐ Plotting" in plain


def test_a_sub_agents_calls_nest_in_its_agent_card(kernel: Kernel, server: MessagesServer) -> None:
    server.add_turns(
        Turn(
            [
                tool_use(
                    "Agent",
                    {
                        "description": "find scripts",
                        "prompt": "List the Python files.",
                        "subagent_type": "general-purpose",
                    },
                )
            ]
        ),
        Turn([tool_use("Glob", {"pattern": "*.py"}), tool_use("Sleep", {"duration_ms": 1200})]),
        Turn([text("No Python files here.")]),
        Turn([text("The helper found no Python files.")]),
    )
    run = kernel.run("%%agent\nAsk a helper to list the scripts.", timeout=60)
    assert run.status == "ok", run.text()

    # Live: the Agent card carried its sub-agent's calls while they ran.
    nested = [
        [child["name"] for child in u["calls"][0]["children"]]
        for u in live_updates(run)
        if u["status"] == "running" and u["calls"] and u["calls"][0]["children"]
    ]
    assert ["Glob", "Sleep"] in nested, nested
    [agent] = payloads(run, "batch")[0]["calls"]
    assert agent["name"] == "Agent" or agent["name"].startswith("Agent")
    assert [(c["name"], c["status"]) for c in agent["children"]] == [
        ("Glob", "done"),
        ("Sleep", "done"),
    ]
    plain = next(d for d in run.displays() if "Glob" in d)
    assert "\n  ✓ Glob: *.py" in plain


def read_through_comm(kernel: Kernel, request: dict[str, Any]) -> dict[str, Any]:
    """What the lab extension does for "Open full output": open a comm, read the answer."""
    comm_id = uuid.uuid4().hex
    content = {"comm_id": comm_id, "target_name": "jupyter_toolhost.results", "data": request}
    kernel.client.shell_channel.send(kernel.client.session.msg("comm_open", content))
    answers: list[dict[str, Any]] = []
    closed = False
    deadline = time.monotonic() + 15
    while not (answers and closed):
        assert time.monotonic() < deadline, "the kernel did not answer on the comm"
        message = kernel.pump(timeout=0.1)
        if message is None or message["content"].get("comm_id") != comm_id:
            continue
        if message["msg_type"] == "comm_msg":
            answers.append(message["content"]["data"])
        closed = closed or message["msg_type"] == "comm_close"
    return answers[0]


def test_saved_results_are_read_through_the_kernel_and_nothing_else_is(
    kernel: Kernel, server: MessagesServer, tmp_path: Path
) -> None:
    server.add_turns(
        Turn([tool_use("Bash", {"command": "seq 1 20000", "description": "count"})]),
        Turn([text("Counted to 20000.")]),
    )
    run = kernel.run("%%agent\nCount to 20000.", timeout=60)
    assert run.status == "ok", run.text()
    [card] = payloads(run, "batch")[-1]["calls"]
    saved = card["persisted_path"]
    assert "/tool-results/" in saved

    whole = read_through_comm(kernel, {"path": saved, "offset": 0, "limit": 5_000_000})
    assert whole["ok"] is True, whole
    assert whole["text"].splitlines()[-1] == "20000" and len(whole["text"].splitlines()) == 20000
    assert whole["next_offset"] is None and whole["size"] == len(whole["text"])

    chunk = read_through_comm(kernel, {"path": saved, "offset": 0, "limit": 1000})
    assert chunk["ok"] and len(chunk["text"]) == 1000 and chunk["next_offset"] == 1000

    # The shown, relative path works too (the notebook's folder is the kernel's cwd).
    relative = card["persisted_path"].split("/.toolhost/", 1)[1]
    assert read_through_comm(kernel, {"path": f".toolhost/{relative}"})["ok"] is True

    # Anything else is refused with a message a person can act on.
    secret = tmp_path / "secret.txt"
    secret.write_text("password")
    for path in (str(secret), saved.rsplit("/tool-results/", 1)[0] + "/../../../secret.txt"):
        refused = read_through_comm(kernel, {"path": path})
        assert refused["ok"] is False and "password" not in json.dumps(refused)
    link = Path(saved).parent / "link.txt"
    link.symlink_to(secret)
    refused = read_through_comm(kernel, {"path": str(link)})
    assert refused == {
        "ok": False,
        "error": f"{link} is not a saved tool result of this kernel's sessions.",
    }
    missing = read_through_comm(kernel, {"path": saved + ".gone"})
    assert missing["ok"] is False and "no longer exists" in missing["error"]


def test_the_kernel_lists_its_saved_results_for_the_session_folder_command(
    kernel: Kernel, server: MessagesServer
) -> None:
    server.add_turns(
        Turn([tool_use("Bash", {"command": "seq 1 30000", "description": "count"})]),
        Turn([text("Counted to 30000.")]),
    )
    run = kernel.run("%%agent\nCount to 30000.", timeout=60)
    assert run.status == "ok", run.text()
    [card] = payloads(run, "batch")[-1]["calls"]
    listed = read_through_comm(kernel, {"list": True})
    assert listed["ok"] is True
    newest = listed["results"][0]
    assert newest["path"] == card["persisted_path"] and newest["size"] > 100_000
    assert all("/tool-results/" in item["path"] for item in listed["results"])


def test_a_widget_the_agent_makes_is_live_under_its_card(
    kernel: Kernel, server: MessagesServer
) -> None:
    kernel.run("%agent allow PythonExec")
    code = "import ipywidgets\nslider = ipywidgets.IntSlider(value=3, description='bins')\nslider"
    server.add_turns(Turn([tool_use("PythonExec", {"code": code})]), Turn([text("A slider.")]))
    run = kernel.run("%%agent\nGive me a slider for the bins.", timeout=60)
    assert run.status == "ok", run.text()
    shown = outputs(run)
    at = next(i for i, o in enumerate(shown) if o["data"].get(MIME, {}).get("kind") == "batch")
    view = shown[at + 1]["data"]["application/vnd.jupyter.widget-view+json"]
    # The view points at the live model in this kernel: the same object the namespace holds.
    check = kernel.run(f"print(slider.model_id == {view['model_id']!r}, slider.value)")
    assert check.stdout.strip() == "True 3"


def test_an_mcp_tools_progress_shows_as_a_bar_while_it_runs(
    kernel: Kernel, server: MessagesServer
) -> None:
    progress_server = Path(__file__).parents[1] / "mcp_servers" / "progress_server.py"
    added = kernel.run(f"%agent mcp add prog -- {sys.executable} {progress_server}", timeout=60)
    assert added.status == "ok", added.text()
    kernel.run("%agent allow mcp__prog__count_up")
    server.add_turns(
        Turn([tool_use("ToolSearch", {"query": "count up with progress"})]),
        # 60 steps of 0.05 s: 3 s for redraws every 0.25 s. At 20 steps a loaded machine
        # once drew a single point.
        Turn([tool_use("mcp__prog__count_up", {"steps": 60})]),
        Turn([text("Counted.")]),
    )
    run = kernel.run("%%agent\nCount up to 60.", timeout=60)
    assert run.status == "ok", run.text()
    fractions = [
        call["fraction"]
        for update in live_updates(run)
        for call in update["calls"]
        if call["name"].endswith("count_up") and call["fraction"] is not None
    ]
    # Several points of the bar were drawn, rising, while the tool ran (throttled redraws).
    assert len(fractions) >= 2 and fractions == sorted(fractions) and fractions[-1] > 0.5
    progress = [
        call["progress"]
        for update in live_updates(run)
        for call in update["calls"]
        if call["name"].endswith("count_up") and call["progress"]
    ]
    assert progress and progress[-1].startswith("step ")
    [card] = [
        c for b in payloads(run, "batch") for c in b["calls"] if c["name"].endswith("count_up")
    ]
    assert card["status"] == "done" and card["fraction"] is None  # the bar is for the live view
