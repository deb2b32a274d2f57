"""What a person reads in a cell, at the level of the view (the real `LiveView`, its display
seam a plain callable) and of PythonExec on a real IPython shell: the answer as Markdown,
records set apart from it, "Waiting for you" and run times without the wait, interrupted
calls that keep what they printed, no raw `<tool_use_error>` tags, cut previews that say so,
and `%agent output` showing a saved result through the kernel."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from jupyter_toolhost.agent.events import PermissionAnswered, PermissionRequested
from jupyter_toolhost.core.context import ToolUseContext, ToolUseOptions
from jupyter_toolhost.core.error_results import error_content
from jupyter_toolhost.core.numbers import format_number
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.core.types import ToolCall, ToolResult
from jupyter_toolhost.jupyter.config import ToolHost
from jupyter_toolhost.jupyter.host import AgentHost
from jupyter_toolhost.jupyter.kernel.captured import INTERRUPTED_LINE
from jupyter_toolhost.jupyter.kernel.kernel_tools import execute, kernel_tools
from jupyter_toolhost.jupyter.magic.commands import run_line
from jupyter_toolhost.jupyter.views.answer import EMPTY_ANSWER
from jupyter_toolhost.jupyter.views.live import LiveView
from jupyter_toolhost.jupyter.views.previews import cut_marker
from jupyter_toolhost.jupyter.views.render import MIME_TYPE, Rendered
from jupyter_toolhost.orchestration.events import CallFinished, CallQueued, CallStarted
from jupyter_toolhost.orchestration.pipeline import Pipeline
from jupyter_toolhost.permissions.api import (
    ApprovalDecision,
    ApprovalRequest,
    BasicCanUseTool,
)


class Page:
    """Everything the view showed, in order: ("display"|"update", id, bundle)."""

    def __init__(self) -> None:
        self.log: list[tuple[str, int, Rendered]] = []

    def display(self, obj: Rendered, **kwargs: Any) -> Any:
        number = len(self.log)
        self.log.append(("display", number, obj))
        page = self

        class Handle:
            def update(self, new: Rendered) -> None:
                page.log.append(("update", number, new))

        return Handle() if kwargs.get("display_id") else None

    def stored(self) -> list[Rendered]:
        """What a saved notebook keeps: each display as last updated."""
        last: dict[int, Rendered] = {}
        order: list[int] = []
        for what, number, obj in self.log:
            if what == "display":
                order.append(number)
            last[number] = obj
        return [last[n] for n in order]

    def first(self) -> list[Rendered]:
        """What nbval compares: each display as first shown."""
        return [obj for what, _, obj in self.log if what == "display"]

    def view(self) -> LiveView:
        return LiveView(describe=lambda name, raw: (name, str(raw)), display=self.display)


def _is_answer(shown: Rendered) -> bool:
    """A piece of the model's words: HTML with no toolhost payload (cards and notices have
    one), and some text."""
    return (
        "text/html" in shown.data
        and MIME_TYPE not in shown.data
        and bool(shown.data.get("text/plain"))
    )


def _request(call_id: str) -> ApprovalRequest:
    return ApprovalRequest(
        "Write", "Write", "out.txt", {}, "Write needs approval", None, (), call_id
    )


def test_the_answer_is_markdown_streamed_then_shown_final_and_records_stand_apart() -> None:
    page = Page()
    lines: list[str] = []
    view = LiveView(
        describe=lambda name, raw: (name, str(raw)), display=page.display, write=lines.append
    )
    view.start()
    for piece in ("Use **pandas**", " and `df.groupby`:\n\n", "- one\n- two"):
        view.text(piece)
    view.line("Denied Write: out.txt")
    view.text("Done.")
    view.finish(footer=False)
    final = [o for o in page.stored() if _is_answer(o)]
    assert [o.data["text/plain"] for o in final] == [
        "Use **pandas** and `df.groupby`:\n\n- one\n- two",
        "Done.",
    ]
    # Rendered here, cleaned, as HTML: no front end gets Markdown whose raw HTML it would keep.
    assert "<strong>pandas</strong>" in final[0].data["text/html"]
    assert "<li>two</li>" in final[0].data["text/html"]
    assert all("text/markdown" not in o.data for _, _, o in page.log)
    # While it streamed, the Markdown so far was drawn in place.
    drawn = [o.data["text/plain"] for w, _, o in page.log if w == "update" and _is_answer(o)]
    assert drawn and drawn[0] == "Use **pandas**"
    # The streaming displays start and end empty: nbval's first form and the saved last
    # form are the same, and the final Markdown is one display shown once.
    for what, number, obj in page.log:
        if what == "display" and obj is EMPTY_ANSWER:
            updates = [o for w, n, o in page.log if w == "update" and n == number]
            assert updates[-1] is EMPTY_ANSWER
    compared = [o.data.get("text/plain") for o in page.first()]
    assert compared == [o.data.get("text/plain") for o in page.stored()]
    # The record is not the model's words: a plain line of the cell's stdout, between the
    # two pieces of Markdown (the first piece ended before it).
    assert lines == ["Denied Write: out.txt\n"]
    first_md = next(i for i, (w, _, o) in enumerate(page.log) if w == "display" and _is_answer(o))
    assert page.log[first_md][2].data["text/plain"].endswith("- two")


def test_waiting_for_a_person_is_not_running_and_not_the_tools_time() -> None:
    page = Page()
    view = page.view()
    view.start()
    call = ToolCall("toolu_w", "Write", {"file_path": "out.txt"})
    view.on_tool_event(CallQueued(call, "Write", False))
    started = time.perf_counter() - 20.0
    view.on_tool_event(CallStarted("toolu_w", started))
    asked = started + 1.0
    view.on_tool_event(PermissionRequested(_request("toolu_w"), asked_at=asked))
    live = [o for w, _, o in page.log if w == "update" and MIME_TYPE in o.data]
    panel = live[-1]
    assert panel.data["text/plain"].startswith("Waiting for you · ")
    assert panel.data[MIME_TYPE]["calls"][0]["label"] == "waiting for you"
    assert panel.data[MIME_TYPE]["status"] == "Waiting for you"
    # The waiting card's clock is the wait's (asked 19 s ago), not the call's 20 s.
    assert 18.5 < panel.data[MIME_TYPE]["calls"][0]["elapsed"] < 25
    assert "waiting for you" in panel.data["text/html"]
    assert "running" not in panel.data["text/plain"].splitlines()[0]
    answered = asked + 16.8
    decision = ApprovalDecision("deny", "use notes.md")
    view.on_tool_event(PermissionAnswered(_request("toolu_w"), decision, asked, answered))
    result = ToolResult(
        "toolu_w", error_content("Denied by the user"), tool_name="Write", is_error=True
    )
    view.on_tool_event(CallFinished("toolu_w", result, 17.0, "denied", 0))
    view.finish(footer=False)
    [batch] = [o for o in page.stored() if o.data.get(MIME_TYPE, {}).get("kind") == "batch"]
    card = batch.data[MIME_TYPE]["calls"][0]
    assert card["duration"] == pytest.approx(0.2, abs=1e-6)  # 17.0 s wall − 16.8 s waiting
    assert card["waited"] == pytest.approx(16.8)
    html = batch.data["text/html"]
    assert ">200 ms</span>" in html and ">· waited 16.8 s for approval</span>" in html
    for shown in (html, batch.data["text/plain"], json.dumps(batch.data[MIME_TYPE])):
        assert "tool_use_error" not in shown


def test_an_interrupted_call_says_so_and_keeps_what_it_printed() -> None:
    page = Page()
    view = page.view()
    view.start()
    for call_id, tool in (("toolu_b", "Bash"), ("toolu_p", "PythonExec")):
        view.on_tool_event(CallQueued(ToolCall(call_id, tool, {}), tool, False))
        view.on_tool_event(CallStarted(call_id, time.perf_counter()))
    from jupyter_toolhost.orchestration.events import CallProgress

    tail = ("step 1", "step 2", "step 3")
    view.on_tool_event(CallProgress("toolu_b", "3 lines", tail=tail))
    stopped = ToolResult(
        "toolu_b", error_content("Cancelled: interrupted"), tool_name="Bash", is_error=True
    )
    view.on_tool_event(CallFinished("toolu_b", stopped, 1.0, "cancelled", 0, "interrupt"))
    printed = f"[stdout]\nrow 1\nrow 2\n\n[error]\nKeyboardInterrupt\n{INTERRUPTED_LINE}"
    failed = ToolResult("toolu_p", error_content(printed), tool_name="PythonExec", is_error=True)
    view.on_tool_event(CallFinished("toolu_p", failed, 1.0, "error", 0))
    view.finish(footer=False)
    [batch] = [o for o in page.stored() if o.data.get(MIME_TYPE, {}).get("kind") == "batch"]
    cards = batch.data[MIME_TYPE]["calls"]
    assert [c["label"] for c in cards] == ["interrupted", "interrupted"]
    assert cards[0]["tail"] == list(tail)  # the lines Bash printed before the stop
    html, plain = batch.data["text/html"], batch.data["text/plain"]
    assert "printed before the stop" in html and "step 3" in html
    assert "row 2" in html  # PythonExec's own output is in its result
    for shown in (html, plain, json.dumps(cards)):
        assert "<tool_use_error>" not in shown and "&lt;tool_use_error&gt;" not in shown


@settings(max_examples=60, deadline=None)
@given(lines=st.lists(st.text(alphabet="abc é€\t", max_size=30), min_size=1, max_size=60))
def test_the_cut_marker_counts_what_is_left(tmp_path_factory: Any, lines: list[str]) -> None:
    folder = tmp_path_factory.mktemp("cut")
    path = folder / "saved.txt"
    text = "\n".join(lines) + "\n"
    path.write_text(text, encoding="utf-8")
    shown_count = max(1, len(lines) // 3)
    shown = "".join(f"{line}\n" for line in lines[:shown_count])  # whole lines
    marker = cut_marker(shown=shown, path=str(path))
    more = len(lines) - shown_count
    assert marker == (
        f"… {more:,} more line{'s' * (more != 1)}, "
        f"{format_number(len(text.encode()), 'bytes')} saved"
    )


def test_sizes_are_kb_of_1024_bytes_as_the_model_is_told() -> None:
    assert format_number(108_851, "bytes") == "106.3 KB"  # Claude Code's block says 106.3KB for it
    assert (
        format_number(1023, "bytes") == "1,023 B"
        and format_number(5 * 1024 * 1024, "bytes") == "5.0 MB"
    )


@pytest.fixture
def shell() -> Any:
    return InteractiveShell.instance()


async def test_python_exec_reports_its_printed_lines_while_it_runs(shell: Any) -> None:
    reported: list[tuple[float, tuple[str, ...]]] = []
    said: list[str] = []
    code = (
        "import time\n"
        "for i in range(4):\n"
        "    print(f'line {i}', flush=True)\n"
        "    time.sleep(0.3)\n"
        "'end'"
    )
    started = time.perf_counter()
    output = await execute(
        shell,
        code,
        progress=lambda p: (reported.append((time.perf_counter(), p.tail)), said.append(p.text)),
    )
    ended = time.perf_counter()
    assert "line 3" in str(output.data)
    # The first line was reported long before the run ended, while it slept (a blocked
    # event loop does not matter: the report is made from the print itself).
    first = next(at for at, tail in reported if "line 0" in tail)
    assert first - started < 0.25 and ended - first > 0.8
    assert reported[-1][1][-1] == "line 3"
    assert said[0] == "1 line printed so far" and said[-1] == "4 lines printed so far"


async def test_the_cells_own_displays_pass_while_python_exec_captures(shell: Any) -> None:
    from jupyter_toolhost.jupyter.kernel.captured import ipython_display, streaming_capture

    real: list[Any] = []

    class Publisher:
        def publish(self, data: Any, metadata: Any = None, *args: Any, **kwargs: Any) -> None:
            real.append(data)

        def clear_output(self, wait: bool = False) -> None:
            pass

    saved = shell.display_pub
    shell.display_pub = Publisher()
    try:
        with streaming_capture(shell, lambda tail, count: None) as captured:
            from IPython.display import display

            display({"text/plain": "the user's own"}, raw=True)
            ipython_display(Rendered({"text/plain": "the live panel"}))
    finally:
        shell.display_pub = saved
    assert [o.data["text/plain"] for o in captured.outputs] == ["the user's own"]
    assert real == [{"text/plain": "the live panel"}]


async def test_a_stopped_run_of_code_ends_with_the_interrupted_line(
    shell: Any, tmp_path: Path
) -> None:
    class Allow:
        async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
            return ApprovalDecision("allow")

    pipeline = Pipeline(results=ResultStore(tmp_path), can_use_tool=BasicCanUseTool(Allow()))
    context = ToolUseContext(options=ToolUseOptions(tools=kernel_tools(shell)), cwd=tmp_path)
    code = "print('before the stop')\nraise KeyboardInterrupt"
    result = await pipeline.run(ToolCall("toolu_k", "PythonExec", {"code": code}), context)
    assert result.is_error
    text = str(result.content)
    assert "before the stop" in text
    assert text.removesuffix("</tool_use_error>").endswith(INTERRUPTED_LINE)
    await asyncio.sleep(0)


def test_agent_output_shows_a_saved_result_a_page_at_a_time_through_the_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JUPYTER_TOOLHOST_HOME", raising=False)
    saved = tmp_path / ".toolhost" / "sessions" / "s1" / "tool-results" / "toolu_1.txt"
    saved.parent.mkdir(parents=True)
    saved.write_text("".join(f"{n}\n" for n in range(30_000)))
    host = AgentHost(InteractiveShell.instance(), ToolHost())
    relative = ".toolhost/sessions/s1/tool-results/toolu_1.txt"
    size = format_number(saved.stat().st_size, "bytes")
    # Given relative or absolute, the path shown is relative to the notebook's folder.
    for typed in (relative, str(saved)):
        shown = run_line(host, f"output {typed}")
        assert shown is not None
        plain = shown.data["text/plain"].splitlines()
        assert plain[0] == f"{relative} · {size}, lines 1–1,000 of 30,000"
        assert plain[1] == "0" and plain[-2] == "999"
        assert plain[-1] == f"… 29,000 more lines: %agent output {relative} --from 1001"
        page = shown.data["text/html"]
        assert str(tmp_path) not in page and str(tmp_path) not in shown.data["text/plain"]
        # A box of bounded height that scrolls, the cut marked under it.
        assert "max-height:24em;overflow:auto" in page
        assert page.index("</pre>") < page.index("29,000 more lines")
        assert len(shown.data["text/plain"]) < 10_000
    last = run_line(host, f"output {relative} --from 29001")
    assert last is not None
    plain = last.data["text/plain"].splitlines()
    assert plain[0] == f"{relative} · {size}, lines 29,001–30,000 of 30,000"
    assert plain[1] == "29000" and plain[-2] == "29999"
    assert plain[-1] == f"end of the file; the start: %agent output {relative}"
    past = run_line(host, f"output {relative} --from 40000")
    assert past is not None and "has 30,000 lines" in past.data["text/plain"]
    with pytest.raises(UsageError, match="--from takes a line number"):
        run_line(host, f"output {relative} --from x")
    # A small file is shown whole, with nothing cut.
    small = saved.with_name("toolu_2.txt")
    small.write_text("one\ntwo\n")
    whole = run_line(host, f"output {relative.replace('toolu_1', 'toolu_2')}")
    assert whole is not None
    assert whole.data["text/plain"].splitlines()[1:] == ["one", "two"]
    assert "toolhost-cut" not in whole.data["text/html"]
    # Only saved results are served, as through the lab extension's comm.
    (tmp_path / "secret.txt").write_text("no")
    refused = run_line(host, "output secret.txt")
    assert refused is not None and "not a saved tool result" in refused.data["text/plain"]


NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_link_in_a_shipped_notebooks_export_resolves(path: Path) -> None:
    """nbconvert's HTML of each shipped notebook: a link is an anchor of the page, a page
    on the web (the template's), or a file next to the notebook, never in a hidden folder
    (a Jupyter server refuses those)."""
    from html.parser import HTMLParser

    import nbformat
    from nbconvert import HTMLExporter

    class Links(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.hrefs: list[str] = []
            self.ids: set[str] = set()

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found = dict(attrs)
            if found.get("id"):
                self.ids.add(str(found["id"]))
            if tag == "a" and found.get("href"):
                self.hrefs.append(str(found["href"]))

    exported, _ = HTMLExporter().from_notebook_node(nbformat.read(path, as_version=4))
    links = Links()
    links.feed(exported)
    for href in links.hrefs:
        if href.startswith(("http://", "https://", "mailto:")):
            continue
        if href.startswith("#"):
            assert href[1:] in links.ids, f"{path.name}: anchor {href} names no element"
            continue
        assert not any(p.startswith(".") for p in Path(href).parts), f"{path.name}: {href}"
        assert (path.parent / href.split("#")[0]).exists(), f"{path.name}: {href} is missing"
    assert "<tool_use_error>" not in exported and "&lt;tool_use_error&gt;" not in exported


def test_a_saved_result_is_named_by_a_path_a_person_reads_never_the_machines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jupyter_toolhost.jupyter.kernel.results_comm import list_results, read_result
    from jupyter_toolhost.jupyter.views.render import shown_path

    notebook, home = tmp_path / "work" / "nb", tmp_path / "home"
    notebook.mkdir(parents=True)
    home.mkdir()
    monkeypatch.chdir(notebook)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("JUPYTER_TOOLHOST_HOME", raising=False)
    saved = notebook / ".toolhost" / "sessions" / "s1" / "tool-results" / "toolu_1.txt"
    saved.parent.mkdir(parents=True)
    saved.write_text("big\n")
    relative = ".toolhost/sessions/s1/tool-results/toolu_1.txt"
    # What the lab extension's tab and list show: the kernel says how to name the file.
    answer = read_result({"path": str(saved), "encoding": "base64"})
    assert answer["ok"] and answer["shown_path"] == relative, answer
    assert answer["path"] == str(saved)  # what it asks for the next chunk with
    [listed] = list_results()["results"]
    assert listed["shown_path"] == relative
    assert shown_path(str(home / "elsewhere" / "x.txt")) == "~/elsewhere/x.txt"
    assert shown_path(str(tmp_path / "other" / "tool-results" / "x.txt")) == "tool-results/x.txt"
