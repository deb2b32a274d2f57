"""WebFetch: fetch a URL with httpx and return it as Markdown (HTML via `markdownify`).

Limits: at most `MAX_REDIRECTS` same-host redirects (a redirect to another host is reported,
not followed), `MAX_BYTES` of body, `TIMEOUT_SECONDS` per request. The `prompt` is applied
by the small model in ``context.options.small_model``: a callable taking one
prompt string and returning the answer (sync or async). A `Session` puts one there, on its
own model client (`jupyter_toolhost.model.small`). Without one, or when it fails (no key,
no network, an API error), the page is returned as Markdown with a note saying why the
prompt was not applied.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from pydantic import BaseModel, ConfigDict, Field

from ...core.context import ToolUseContext
from ...core.errors import ToolhostError
from ...core.tool import Tool, build_tool
from ...core.types import ToolError, ToolInputError
from .prompt import (
    DESCRIPTION,
    MAX_BYTES,
    MAX_MARKDOWN_CHARS,
    MAX_REDIRECTS,
    NAME,
    TIMEOUT_SECONDS,
)

if TYPE_CHECKING:
    import httpx

SmallModel = Callable[[str], "str | Awaitable[str]"]
USER_AGENT = "jupyter-toolhost WebFetch"
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript")


class WebFetchInput(BaseModel):
    """Input of WebFetch."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(description="The http(s) URL to fetch.")
    prompt: str | None = Field(default=None, description="What to extract from the page.")


class _Redirected(ToolhostError):
    def __init__(self, location: str) -> None:
        super().__init__(location)
        self.location = location


def html_to_markdown(html: str) -> str:
    """Markdown for an HTML page, scripts and styles dropped (bs4 comes with markdownify)."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    for hidden in soup(["script", "style", "noscript", "template"]):
        hidden.decompose()
    # Punctuation is not escaped: the reader is a model. markdownify before 0.14 escaped it
    # by default (version 7.3 became "7\.3"); the newer releases don't.
    text = MarkdownConverter(heading_style="ATX", escape_misc=False).convert_soup(soup)
    lines = [line.rstrip() for line in text.splitlines()]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()


async def fetch_text(url: str) -> tuple[str, str, str]:
    """GET `url` within the limits; returns (final url, content type, body text)."""
    import httpx

    async with httpx.AsyncClient(
        follow_redirects=False,
        timeout=httpx.Timeout(TIMEOUT_SECONDS),
        headers={"User-Agent": USER_AGENT},
    ) as client:
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            try:
                return current, *await _get(client, current)
            except _Redirected as redirect:
                target = urljoin(current, redirect.location)
                if urlsplit(target).netloc != urlsplit(current).netloc:
                    raise ToolError(
                        f"{current} redirects to another host: {target}\n"
                        "Fetch that URL with WebFetch if you want its content."
                    ) from None
                current = target
    raise ToolError(f"Too many redirects (more than {MAX_REDIRECTS}) fetching {url}")


async def _get(client: httpx.AsyncClient, url: str) -> tuple[str, str]:
    import httpx

    try:
        async with client.stream("GET", url) as response:
            if response.is_redirect and "location" in response.headers:
                raise _Redirected(response.headers["location"])
            if response.status_code >= 400:
                raise ToolError(f"HTTP {response.status_code} {response.reason_phrase} for {url}")
            content_type = response.headers.get("content-type", "").split(";")[0].strip()
            if content_type and not content_type.startswith(_TEXT_TYPES):
                raise ToolError(f"{url} is {content_type}, not text; WebFetch reads text only.")
            declared = int(response.headers.get("content-length") or 0)
            if declared > MAX_BYTES:
                raise ToolError(_too_big(url))
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_BYTES:
                    raise ToolError(_too_big(url))
            encoding = response.charset_encoding or "utf-8"
            return content_type, bytes(body).decode(encoding, errors="replace")
    except httpx.TimeoutException:
        raise ToolError(f"Timed out after {TIMEOUT_SECONDS:.0f} s fetching {url}") from None
    except httpx.HTTPError as exc:
        raise ToolError(f"Could not fetch {url}: {type(exc).__name__}: {exc}") from None


def _too_big(url: str) -> str:
    return f"{url} is larger than {MAX_BYTES // (1024 * 1024)} MB; WebFetch refused it."


async def web_fetch(input: WebFetchInput, context: ToolUseContext) -> str:
    """Fetch, convert, and (with a small model configured) apply the prompt."""
    parts = urlsplit(input.url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ToolInputError(f"Not a full http(s) URL: {input.url!r}")
    final_url, content_type, body = await fetch_text(input.url)
    markdown = html_to_markdown(body) if content_type in ("text/html", "") else body
    if len(markdown) > MAX_MARKDOWN_CHARS:
        markdown = (
            markdown[:MAX_MARKDOWN_CHARS] + f"\n\n[Content cut at {MAX_MARKDOWN_CHARS} chars]"
        )
    # The small model is a model too: a secret on the page (a local server's token) is
    # redacted before it reads the page, as the result is before the main model does.
    markdown = context.options.redactor.text(markdown)
    source = f"Fetched {final_url}" + (
        f" (redirected from {input.url})" if final_url != input.url else ""
    )
    if not input.prompt:
        return f"{source}\n\n{markdown}"
    model = context.options.small_model
    if model is None:
        return _unapplied(source, "No small model is configured", markdown)
    try:
        answer = model(_model_prompt(markdown, input.prompt))
        if inspect.isawaitable(answer):
            answer = await answer
    except Exception as exc:  # the page is still worth having; the note says what failed
        detail = str(exc) if len(str(exc)) <= 500 else str(exc)[:499] + "…"
        reason = f"The small model could not answer ({type(exc).__name__}: {detail})"
        return _unapplied(source, reason, markdown)
    return f"{source}\n\n{answer}"


def _unapplied(source: str, reason: str, markdown: str) -> str:
    return (
        f"{source}\n({reason}, so the prompt was not applied; here is the page as "
        f"Markdown.)\n\n{markdown}"
    )


def _model_prompt(markdown: str, prompt: str) -> str:
    return (
        f"Web page content:\n---\n{markdown}\n---\n\n{prompt}\n\n"
        "Answer from the content above only, concisely."
    )


def _summary(input: WebFetchInput) -> str:
    return input.url


def make_tool() -> Tool[WebFetchInput]:
    """A fresh WebFetch tool."""
    return build_tool(
        name=NAME,
        input_model=WebFetchInput,
        call=web_fetch,
        description=DESCRIPTION,
        read_only=True,
        concurrency_safe=True,
        get_url=_summary,
        render_tool_use=_summary,
        search_hint="fetch url web page http download read website markdown",
    )


TOOL = make_tool()
