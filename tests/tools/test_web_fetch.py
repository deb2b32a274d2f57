"""WebFetch against a real HTTP server on loopback; WebSearch with and without a backend."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from loopback_http import serve

from jupyter_toolhost.core.context import ToolUseContext, ToolUseOptions
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.core.types import ToolCall, ToolError, ToolResult
from jupyter_toolhost.orchestration.pipeline import Pipeline
from jupyter_toolhost.tools import builtin_tools, web_fetch, web_search
from jupyter_toolhost.tools.web_fetch.prompt import MAX_BYTES

PAGE = b"""<html><head><title>T</title><style>p{color:red}</style>
<script>alert(1)</script></head>
<body><h1>Hello</h1><p>Some <b>bold</b> text and a <a href="/x">link</a>.</p></body></html>"""


class Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        path = self.path
        if path == "/page":
            self._send(200, "text/html; charset=utf-8", PAGE)
        elif path == "/leaky":
            self._send(200, "text/plain", b"config: ghp_FAKEtokenFORtestsONLY0123456789abcdef")
        elif path == "/json":
            self._send(200, "application/json", b'{"a": 1}')
        elif path.startswith("/hop/"):
            left = int(path.rsplit("/", 1)[1])
            self.send_response(302)
            self.send_header("Location", "/page" if left == 0 else f"/hop/{left - 1}")
            self.end_headers()
        elif path == "/elsewhere":
            self.send_response(301)
            self.send_header("Location", "http://example.invalid/page")
            self.end_headers()
        elif path == "/missing":
            self._send(404, "text/plain", b"nope")
        elif path == "/binary":
            self._send(200, "application/octet-stream", b"\x00\x01")
        elif path == "/huge":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            chunk = b"a" * 65536
            try:
                for _ in range(MAX_BYTES // len(chunk) + 10):
                    self.wfile.write(chunk)
            except OSError:
                pass
        elif path == "/slow":
            threading.Event().wait(2)
            with contextlib.suppress(OSError):  # the client gave up first, as the test wants
                self._send(200, "text/plain", b"late")

    def _send(self, code: int, content_type: str, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server() -> Iterator[str]:
    with serve(Handler) as port:
        yield f"http://127.0.0.1:{port}"


def make_context(tmp_path: Path, **options: Any) -> ToolUseContext:
    """A context in `tmp_path`; `options` are `ToolUseOptions` fields (`small_model`)."""
    return ToolUseContext(options=ToolUseOptions(tools=builtin_tools(), **options), cwd=tmp_path)


async def run(context: ToolUseContext, name: str, call_input: dict[str, Any]) -> ToolResult:
    pipeline = Pipeline(ResultStore(context.session_dir() / "tool-results"))
    return await pipeline.run(ToolCall(id="toolu_web", name=name, input=call_input), context)


async def test_fetch_converts_html_to_markdown(server: str, tmp_path: Path) -> None:
    result = await run(make_context(tmp_path), "WebFetch", {"url": f"{server}/page"})
    assert not result.is_error, result.content
    text = str(result.content)
    assert "# Hello" in text and "**bold**" in text and "[link](/x)" in text
    assert "alert" not in text and "color:red" not in text


def test_page_text_keeps_its_punctuation() -> None:
    """Whatever markdownify's release, the model reads a page's numbers and signs as they are
    written, not escaped for a Markdown renderer."""
    from jupyter_toolhost.tools.web_fetch import html_to_markdown

    page = "<p>Version <b>7.3</b> - out 1.2.2026 [beta] (a+b=c) #1</p>"
    assert html_to_markdown(page) == "Version **7.3** - out 1.2.2026 [beta] (a+b=c) #1"


async def test_prompt_without_a_small_model_says_it_was_not_applied(
    server: str, tmp_path: Path
) -> None:
    result = await run(
        make_context(tmp_path), "WebFetch", {"url": f"{server}/page", "prompt": "Title?"}
    )
    assert "prompt was not applied" in str(result.content) and "# Hello" in str(result.content)


async def test_prompt_goes_to_the_configured_small_model(server: str, tmp_path: Path) -> None:
    seen: list[str] = []

    async def small_model(prompt: str) -> str:
        seen.append(prompt)
        return "The page greets you."

    context = make_context(tmp_path, small_model=small_model)
    result = await run(context, "WebFetch", {"url": f"{server}/page", "prompt": "What is it?"})
    assert str(result.content).endswith("The page greets you.")
    assert "# Hello" in seen[0] and "What is it?" in seen[0]


async def test_redirects_are_followed_up_to_the_limit(server: str, tmp_path: Path) -> None:
    context = make_context(tmp_path)
    ok = await run(context, "WebFetch", {"url": f"{server}/hop/4"})
    assert not ok.is_error and "# Hello" in str(ok.content)
    assert "redirected from" in str(ok.content)
    too_many = await run(context, "WebFetch", {"url": f"{server}/hop/5"})
    assert too_many.is_error and "Too many redirects" in str(too_many.content)
    elsewhere = await run(context, "WebFetch", {"url": f"{server}/elsewhere"})
    assert elsewhere.is_error and "another host" in str(elsewhere.content)
    assert "http://example.invalid/page" in str(elsewhere.content)


async def test_json_is_returned_as_is(server: str, tmp_path: Path) -> None:
    result = await run(make_context(tmp_path), "WebFetch", {"url": f"{server}/json"})
    assert str(result.content).endswith('{"a": 1}')


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/missing", "HTTP 404"),
        ("/binary", "application/octet-stream"),
        ("/huge", "larger than"),
    ],
)
async def test_bad_responses_are_errors(
    server: str, tmp_path: Path, path: str, expected: str
) -> None:
    result = await run(make_context(tmp_path), "WebFetch", {"url": f"{server}{path}"})
    assert result.is_error and expected in str(result.content)


async def test_timeouts_and_bad_urls(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(web_fetch, "TIMEOUT_SECONDS", 0.5)
    context = make_context(tmp_path)
    slow = await run(context, "WebFetch", {"url": f"{server}/slow"})
    assert slow.is_error and "Timed out" in str(slow.content)
    bad = await run(context, "WebFetch", {"url": "file:///etc/passwd"})
    assert bad.is_error and "http(s)" in str(bad.content)
    refused = await run(context, "WebFetch", {"url": "http://127.0.0.1:9/"})
    assert refused.is_error and "Could not fetch" in str(refused.content)


def test_web_fetch_flags_and_url() -> None:
    tool = web_fetch.make_tool()
    parsed = web_fetch.WebFetchInput(url="https://example.com/a")
    assert tool.flag(tool.is_read_only, parsed) and tool.flag(tool.is_concurrency_safe, parsed)
    assert tool.get_url is not None and tool.get_url(parsed) == "https://example.com/a"


async def test_web_search_is_disabled_until_configured(tmp_path: Path) -> None:
    tool = web_search.make_tool()
    assert not tool.is_enabled()
    result = await run(make_context(tmp_path), "WebSearch", {"query": "python"})
    assert result.is_error and "No such tool" in str(result.content)
    with pytest.raises(ToolError, match="No search backend is configured"):
        await tool.call(web_search.WebSearchInput(query="python"), make_context(tmp_path))


async def test_web_search_with_a_backend(tmp_path: Path) -> None:
    calls: list[tuple[Any, ...]] = []

    def backend(query: str, allowed: Any, blocked: Any) -> list[dict[str, str]]:
        calls.append((query, allowed, blocked))
        return [{"title": "Python", "url": "https://python.org", "snippet": "The language."}]

    web_search.configure(backend)
    try:
        context = ToolUseContext(
            options=ToolUseOptions(tools=[web_search.make_tool()]), cwd=tmp_path
        )
        result = await run(
            context, "WebSearch", {"query": "python", "allowed_domains": ["python.org"]}
        )
    finally:
        web_search.configure(None)
    assert not result.is_error
    assert "1. Python\n   https://python.org\n   The language." in str(result.content)
    assert calls == [("python", ["python.org"], None)]


async def test_a_token_on_the_page_is_redacted_before_the_small_model_reads_it(
    server: str, tmp_path: Path
) -> None:
    seen: list[str] = []

    def small_model(prompt: str) -> str:
        seen.append(prompt)
        return "read"

    context = make_context(tmp_path, small_model=small_model)
    result = await run(context, "WebFetch", {"url": f"{server}/leaky", "prompt": "Config?"})
    assert not result.is_error, result.content
    [prompt] = seen
    assert "config: [redacted: GitHub token]" in prompt and "ghp_FAKE" not in prompt
