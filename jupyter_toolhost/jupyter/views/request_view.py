"""`%agent request [N]`: the exact request of one turn, in parts an educator can open.

Four `<details>` parts, each with its size in bytes and in tokens: the system prompt; the
`tools` array (one line per tool, deferred tools and the cache breakpoint marked); the
messages (each tool_use linked to its tool_result and back, text clipped with its full
length stated); the API parameters. Above them: the turn's usage (input, output, cache
reads and writes) and what deferral saved; below them: the whole body as pretty JSON and
how to get it as a dict (`session.request(N)`). An image block is shown as the image under
its name ("[image: image/png, 12.3 KB]"), in that JSON too by its name: never as base64 text.

Tokens come from the API's count_tokens endpoint when the session's model is the
Anthropic client with a key (`model.token_count`), else they are estimates, labelled as
such (bytes / 4). Plain HTML with inline styles (no script), so it shows the same without
the lab extension, in nbviewer and in an HTML export; plain text is the fallback.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...agent.clearing import CLEARED_PREFIX
from ...agent.sent import SentRequest, encode
from ...core.numbers import format_number
from ...disclosure.deferral import extract_discovered_tool_names
from ...model.base import ModelError
from ...model.token_count import can_count, count_parts
from .render import BORDER, ERROR, FG2, MUTED, PRE, WARN, Rendered, esc, notice_display, short

CLIP = 2_000
"""Characters of a text (or JSON) shown in a message before it is clipped."""
JSON_CLIP = 500_000
"""Characters of the pretty-printed body shown at the end (the rest: `session.request`)."""
ESTIMATE = "estimate: bytes/4"
PARTS = ("system", "tools", "messages")
_DEFERRED = f"color:{WARN}"
_BREAKPOINT = "◆ cache breakpoint"
_BOX = "font-size:13px;line-height:1.4"
_SUMMARY = "cursor:pointer;font-size:13px"
_BLOCK = f"margin:2px 0 2px 8px;padding-left:6px;border-left:2px solid {BORDER}"
_TABLE = "font-size:13px;width:100%;table-layout:auto;margin:2px 0"
_CELL = "text-align:left;vertical-align:top;padding:2px 6px"
"""JupyterLab right-aligns table cells in HTML outputs; this view's read left to right."""
_DESCRIPTION = f"color:{FG2};min-width:16em;white-space:normal"
_TWO_LINES = (
    "display:-webkit-box;-webkit-box-orient:vertical;-webkit-line-clamp:2;overflow:hidden;"
    "line-height:1.4"
)
"""A tool's description in the table: two lines at most, cut with "…" by the browser (the
whole text is the cell's tooltip), so twenty tools fit a screen at 1024 px."""
_SHOWN_CHARS = 400
_TITLE_CHARS = 4_000
_SHOWN_IMAGES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


@dataclass(frozen=True, slots=True)
class Tokens:
    """Token figures for the view: per part and in all, counted or estimated."""

    parts: Mapping[str, int]
    total: int
    counted: bool
    note: str = ""
    """Why the figures are estimates when the endpoint could have been asked."""

    def label(self, value: int) -> str:
        if self.counted:
            return f"{value:,} tokens (count_tokens)"
        return f"≈ {value:,} tokens ({ESTIMATE})"


def request_view(session: Any, n: int | None = None) -> Rendered:
    """The view of turn `n` of `session` (None: the last), or a notice when there is none."""
    try:
        sent: SentRequest = session.sent_request(n)
    except IndexError as exc:
        return notice_display(str(exc))
    body = sent.body
    return request_display(sent, body=body, tokens=tokens_for(session.model, body))


def tokens_for(model: object, body: Mapping[str, Any]) -> Tokens:
    """Counts from the endpoint when `model` can ask it, else estimates (bytes / 4)."""

    note = ""
    if can_count(model):
        try:
            found = count_parts(model, body)
        except ModelError as exc:
            note = f"{exc}; the figures are estimates"
        else:
            parts = {"system": found.system, "tools": found.tools, "messages": found.messages}
            return Tokens(parts, found.total, counted=True)
    unbilled = sum(_size(t) for t in _unloaded_in_body(body))
    parts = {part: _size(body[part]) // 4 if part in body else 0 for part in PARTS}
    parts["tools"] = max(0, _size(body.get("tools", [])) - unbilled) // 4 if "tools" in body else 0
    return Tokens(parts, max(0, _size(body) - unbilled) // 4, counted=False, note=note)


def request_display(sent: SentRequest, *, body: Mapping[str, Any], tokens: Tokens) -> Rendered:
    """The four parts, usage, deferral and JSON of one sent request, as HTML and text."""
    turn = sent.turn
    prefix = f"toolhost-req{turn}-"
    params = {k: v for k, v in body.items() if k not in PARTS}
    total = f"{_size(body):,} bytes · " + (
        f"{tokens.total:,} input tokens (count_tokens)"
        if tokens.counted
        else f"≈ {tokens.total:,} input tokens ({ESTIMATE})"
    )
    head = [
        f"Request of turn {turn} · model {body.get('model', '?')} · {total}",
        _usage_line(sent),
        _deferral_line(sent, body),
        breakpoints_line(body),
    ]
    cleared = cleared_line(body)
    if cleared:
        head.append(cleared)
    if tokens.note:
        head.append(tokens.note)
    copy = (
        f"As a dict: session.request({turn}) (in a notebook the %%agent session is "
        "jupyter_toolhost.jupyter.cell.current_host().session)."
    )
    system, tools, messages = (
        body.get("system", []),
        body.get("tools", []),
        body.get("messages", []),
    )
    sections = [
        _part(
            "System prompt",
            f"{len(system)} block" + ("" if len(system) == 1 else "s"),
            system,
            tokens.label(tokens.parts["system"]),
            _system_html(system),
        ),
        _part(
            "Tools",
            _tools_count(tools, sent),
            tools,
            tokens.label(tokens.parts["tools"]),
            _tools_html(tools, body, sent),
        ),
        _part(
            "Messages",
            f"{len(messages)}",
            messages,
            tokens.label(tokens.parts["messages"]),
            _messages_html(messages, prefix),
        ),
        _part(
            "API parameters",
            ", ".join(params),
            params,
            "no tokens of their own (settings, not content)",
            _params_html(params),
        ),
    ]
    pretty = json.dumps(_images_named(body), ensure_ascii=False, indent=2)
    clipped = pretty[:JSON_CLIP] + (
        f"\n… ({len(pretty):,} characters in all)" if len(pretty) > JSON_CLIP else ""
    )
    html_text = (
        f'<div style="{_BOX}">'
        + f"<div><b>{esc(head[0])}</b></div>"
        + "".join(f'<div style="{MUTED}">{esc(line)}</div>' for line in head[1:])
        + "".join(html for html, _ in sections)
        + f'<details><summary style="{_SUMMARY}">JSON of the request body</summary>'
        + f'<pre style="{PRE}">{esc(clipped)}</pre></details>'
        + f'<div style="{MUTED}">{esc(copy)}</div></div>'
    )
    plain = "\n".join([*head, *(text for _, text in sections), copy])
    return Rendered({"text/html": _from_home(html_text, esc), "text/plain": _from_home(plain)})


HOME_NOTE = "Paths in your home folder are written from ~ here; the request holds them whole."


def _from_home(text: str, escape: Callable[[str], str] = str) -> str:
    """`text` with the home folder written as ``~`` (a notebook that keeps this view, or a
    picture of it, need not carry the person's own paths), and a line saying so."""
    home = os.path.expanduser("~").rstrip(os.sep)
    if not home or escape(home + os.sep) not in text:
        return text
    shown = text.replace(escape(home + os.sep), "~" + os.sep)
    return shown + (
        f'<div style="{MUTED}">{esc(HOME_NOTE)}</div>' if escape is esc else "\n" + HOME_NOTE
    )


# ── the header lines ─────────────────────────────────────────────────────────────────────


def _usage_line(sent: SentRequest) -> str:
    usage = sent.usage
    if usage is None:
        return "Usage: none (the response is still streaming, or it did not complete)."
    # The API's input_tokens leaves out what was read from or written to the cache: lead
    # with the sum, the figure to set beside the request's own token count above.
    read, wrote = usage.cache_read_input_tokens, usage.cache_creation_input_tokens
    total = usage.input_tokens + read + wrote
    return (
        f"Usage (from the API): {total:,} input tokens in all = {usage.input_tokens:,} new "
        f"+ {read:,} read from the cache + {wrote:,} written to the cache"
        + (
            f" ({usage.cache_creation_1h_input_tokens:,} for 1 h)"
            if usage.cache_creation_1h_input_tokens
            else ""
        )
        + " · output "
        f"{usage.output_tokens:,} tokens."
    )


def cleared_line(body: Mapping[str, Any]) -> str | None:
    """How many old tool results this request sends as notes naming their saved copies
    (`agent.clearing`); None when it sends none."""

    count = 0
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, Mapping) else None
        for block in content if isinstance(content, list) else []:
            if (
                isinstance(block, Mapping)
                and block.get("type") == "tool_result"
                and str(block.get("content", "")).startswith(CLEARED_PREFIX)
            ):
                count += 1
    if not count:
        return None
    return (
        f"Cleared: {count} old tool result{'s' if count != 1 else ''} sent as a note naming "
        "the saved copy (the model can Read it again)."
    )


def breakpoints_line(body: Mapping[str, Any]) -> str:
    """Where the request's prompt-cache breakpoints sit (the API takes at most 4)."""
    spots: list[str] = []
    for index, tool in enumerate(body.get("tools") or [], 1):
        if isinstance(tool, Mapping) and "cache_control" in tool:
            spots.append(f"tool {index} ({tool.get('name')})")
    for index, block in enumerate(body.get("system") or [], 1):
        if isinstance(block, Mapping) and "cache_control" in block:
            spots.append(f"system block {index}")
    for number, message in enumerate(body.get("messages") or [], 1):
        content = message.get("content") if isinstance(message, Mapping) else None
        for index, block in enumerate(content if isinstance(content, list) else [], 1):
            if isinstance(block, Mapping) and "cache_control" in block:
                spots.append(f"message {number} block {index} ({block.get('type')})")
    if not spots:
        return "Cache breakpoints: none (nothing of this request is cached)."
    return f"Cache breakpoints ({len(spots)} of 4): " + " · ".join(spots) + "."


def _deferral_line(sent: SentRequest, body: Mapping[str, Any]) -> str:
    """What deferral saved against sending every tool's full definition."""
    unloaded = sent.deferral.unloaded
    if not unloaded and sent.deferral.finder is None:
        return "Deferral: no tool is deferred; every tool is sent in full."
    if not unloaded:
        return "Deferral: every deferred tool is loaded on this request; nothing saved."
    sizes = {tool.name: _definition_size(tool) for tool in unloaded}
    saved = sum(sizes.values())
    in_body = {str(t.get("name")) for t in body.get("tools", []) if isinstance(t, Mapping)}
    travelled = sum(name in in_body for name in sizes)
    how = f"{len(sizes) - travelled} not sent"
    if travelled:
        how += f", {travelled} sent with defer_loading, not billed"
    line = (
        f"Deferral saved {saved:,} bytes (≈ {saved // 4:,} tokens, {ESTIMATE}) against "
        f"sending every tool's full definition: {len(sizes)} deferred tool"
        + ("" if len(sizes) == 1 else "s")
        + f" not loaded ({how})."
    )
    finder = sent.deferral.finder
    found = [t for t in body.get("tools", []) if isinstance(t, Mapping) and t.get("name") == finder]
    if found:
        line += f" {finder}, offered because tools are deferred, costs {_size(found[0]):,} bytes."
    return line


def _definition_size(tool: Any) -> int:
    try:
        return _size(tool.to_api())
    except Exception:
        return 0


# ── the parts ────────────────────────────────────────────────────────────────────────────


def _part(
    title: str, what: str, value: Any, tokens: str, inner: tuple[str, list[str]]
) -> tuple[str, str]:
    """One collapsible part: (HTML, plain text) with its size in bytes and tokens."""
    label = f"{title} — {what} · {_size(value):,} bytes · {tokens}"
    inner_html, lines = inner
    html_text = (
        f'<details style="margin:4px 0"><summary style="{_SUMMARY}"><b>{esc(title)}</b> — '
        f"{esc(label.removeprefix(title + ' — '))}</summary>{inner_html}</details>"
    )
    return html_text, "\n".join([label, *(f"  {line}" for line in lines)])


def _system_html(blocks: Sequence[Any]) -> tuple[str, list[str]]:
    html_parts, lines = [], []
    for index, block in enumerate(blocks, 1):
        text = str(block.get("text", "")) if isinstance(block, Mapping) else str(block)
        mark = (
            f" · {_BREAKPOINT}" if isinstance(block, Mapping) and "cache_control" in block else ""
        )
        head = f"block {index} · {len(text):,} characters{mark}"
        html_parts.append(f'<div style="{MUTED}">{esc(head)}</div>{_pre(text)}')
        lines.append(f"{head}: {short(text, 80)}")
    return "".join(html_parts), lines


def _tools_count(tools: Sequence[Any], sent: SentRequest) -> str:
    """The Tools part's count, in the deferral line's words: what was sent, in full or with
    ``defer_loading``, and how many deferred tools were not loaded."""
    sent_names = {str(t.get("name")) for t in tools if isinstance(t, Mapping)}
    deferred = sum(_deferred(t) for t in tools)
    count = f"{len(tools)} sent ({len(tools) - deferred} in full, {deferred} with defer_loading)"
    unloaded = [tool.name for tool in sent.deferral.unloaded]
    if unloaded:
        not_sent = sum(name not in sent_names for name in unloaded)
        count += f" · {_deferred_count(len(unloaded))} not loaded ({not_sent} not sent)"
    return count


def _whole(text: str) -> str:
    """`text` as a tooltip shows it: whole, lines kept, cut (and marked) only past
    `_TITLE_CHARS`."""
    return text if len(text) <= _TITLE_CHARS else text[:_TITLE_CHARS] + "…"


def _deferred_count(count: int) -> str:
    return f"{count} deferred tool" + ("" if count == 1 else "s")


def _tools_html(
    tools: Sequence[Any], body: Mapping[str, Any], sent: SentRequest
) -> tuple[str, list[str]]:
    """One row per tool sent (its marks under its name; its description left-aligned, at
    most two lines, whole in the cell's tooltip), then the deferred tools not sent."""
    loaded = extract_discovered_tool_names(body.get("messages", []))
    rows, lines = [], []
    for index, tool in enumerate(tools, 1):
        if not isinstance(tool, Mapping):
            continue
        name = str(tool.get("name", "?"))
        marks = []
        if _deferred(tool):
            state = "loaded by a tool_reference" if name in loaded else "not loaded, not billed"
            marks.append(f"◇ deferred (defer_loading): {state}")
        if "input_schema" not in tool and "type" in tool:
            marks.append(f"server tool {tool['type']}")
        if "cache_control" in tool:
            marks.append(_BREAKPOINT)
        style = f"{_CELL};{_DEFERRED}" if _deferred(tool) else _CELL
        description = str(tool.get("description", ""))
        marks_html = "".join(f'<div style="{MUTED}">{esc(mark)}</div>' for mark in marks)
        rows.append(
            f'<tr><td style="{style}">{index}</td>'
            f'<td style="{style}"><code style="white-space:nowrap">{esc(name)}</code>'
            f"{marks_html}</td>"
            f'<td style="{_CELL};text-align:right">{_size(tool):,}</td>'
            f'<td class="toolhost-description" style="{_CELL};{_DESCRIPTION}" '
            f'title="{esc(_whole(description))}">'
            f'<div style="{_TWO_LINES}">{esc(short(description, _SHOWN_CHARS))}</div></td></tr>'
        )
        lines.append(f"{index}. {name} ({_size(tool):,} bytes)" + "".join(f" [{m}]" for m in marks))
    head = "".join(f"<th style='{_CELL}'>{c}</th>" for c in ("#", "name", "bytes", "description"))
    table = (
        f'<table style="{_TABLE}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
    sent_names = {str(t.get("name")) for t in tools if isinstance(t, Mapping)}
    not_sent = [tool.name for tool in sent.deferral.unloaded if tool.name not in sent_names]
    if not_sent:
        line = (
            f"Not sent: {_deferred_count(len(not_sent))}, named in the first user message for "
            f"{sent.deferral.finder or 'a tool search'} to load: " + ", ".join(not_sent)
        )
        table += f'<div style="{MUTED}">{esc(line)}</div>'
        lines.append(line)
    return table, lines


def _messages_html(messages: Sequence[Any], prefix: str) -> tuple[str, list[str]]:
    uses = {b["id"]: str(b.get("name", "")) for b in _blocks_of(messages, "tool_use")}
    answered = {str(b.get("tool_use_id")) for b in _blocks_of(messages, "tool_result")}
    html_parts, lines = [], []
    for index, message in enumerate(messages, 1):
        role = str(message.get("role", "?")) if isinstance(message, Mapping) else "?"
        content = message.get("content", "") if isinstance(message, Mapping) else message
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        head = f"#{index} {role} · {_size(message):,} bytes"
        inner = []
        lines.append(head)
        for block in blocks:
            block_html, text = _block(block, prefix, uses, answered)
            inner.append(block_html)
            lines.append(f"  {text}")
        html_parts.append(
            f'<div style="{_BLOCK}"><div style="{MUTED}">{esc(head)}</div>{"".join(inner)}</div>'
        )
    return "".join(html_parts), lines


def _block(block: Any, prefix: str, uses: Mapping[str, str], answered: set[str]) -> tuple[str, str]:
    """One content block: (HTML, one line of text)."""
    if not isinstance(block, Mapping):
        return _pre(str(block)), short(str(block), 100)
    kind = str(block.get("type", "?"))
    mark = f" · {_BREAKPOINT}" if "cache_control" in block else ""
    match kind:
        case "text":
            text = str(block.get("text", ""))
            shown = _label(f"text · {len(text):,} characters{mark}") + _pre(text)
            return shown, f"text: {short(text, 100)}"
        case "tool_use":
            return _use_html(block, prefix, answered, mark)
        case "tool_result":
            return _result_html(block, prefix, uses, mark)
        case "image":
            shown, named = _image_html(block)
            return shown, named
        case "thinking":
            text = str(block.get("thinking", ""))
            shown = _label(f"thinking · {len(text):,} characters") + _pre(text)
            return shown, f"thinking: {short(text, 80)}"
        case _:
            raw = encode(_images_named(block))
            return _label(f"{kind} · {len(raw):,} bytes{mark}") + _pre(
                raw
            ), f"{kind}: {short(raw, 80)}"


def _use_html(
    block: Mapping[str, Any], prefix: str, answered: set[str], mark: str
) -> tuple[str, str]:
    """A tool_use, anchored, with a link down to its tool_result."""
    use_id, name = str(block.get("id")), str(block.get("name"))
    link = ""
    if use_id in answered:
        link = f' <a href="#{_anchor(prefix, "result", use_id)}">→ its tool_result</a>'
    anchor = _anchor(prefix, "use", use_id)
    html_text = (
        f'<div id="{anchor}" style="{MUTED}">tool_use <b>{esc(name)}</b> '
        f"<code>{esc(use_id)}</code>{esc(mark)}{link}</div>"
        + _pre(json.dumps(block.get("input"), ensure_ascii=False, indent=1))
    )
    return html_text, f"tool_use {use_id} {name} {short(encode(block.get('input')), 80)}"


def _result_html(
    block: Mapping[str, Any], prefix: str, uses: Mapping[str, str], mark: str
) -> tuple[str, str]:
    """A tool_result, anchored, with a link up to its tool_use."""
    use_id = str(block.get("tool_use_id"))
    name = uses.get(use_id)
    target = f"<code>{esc(use_id)}</code>"
    if name is not None:
        target = f'<a href="#{_anchor(prefix, "use", use_id)}">← {esc(use_id)} ({esc(name)})</a>'
    error = f' <b style="color:{ERROR}">is_error</b>' if block.get("is_error") else ""
    inner, text = _result_content(block.get("content", ""))
    anchor = _anchor(prefix, "result", use_id)
    html_text = (
        f'<div id="{anchor}" style="{MUTED}">tool_result for {target}{error}{esc(mark)}</div>'
        + inner
    )
    return html_text, f"tool_result {use_id}{' is_error' if error else ''}: {text}"


def _result_content(content: Any) -> tuple[str, str]:
    if isinstance(content, str):
        return _pre(content), short(content, 80)
    html_parts, texts = [], []
    for item in content if isinstance(content, list) else [content]:
        if isinstance(item, Mapping) and item.get("type") == "text":
            text = str(item.get("text", ""))
            html_parts.append(_pre(text))
            texts.append(short(text, 80))
        elif isinstance(item, Mapping) and item.get("type") == "tool_reference":
            name = str(item.get("tool_name"))
            html_parts.append(
                f'<div style="{_DEFERRED}">tool_reference: loads <code>{esc(name)}</code></div>'
            )
            texts.append(f"[loads {name}]")
        elif isinstance(item, Mapping) and item.get("type") == "image":
            shown, named = _image_html(item)
            html_parts.append(shown)
            texts.append(named)
        else:
            raw = encode(_images_named(item))
            html_parts.append(_pre(raw))
            texts.append(short(raw, 60))
    return "".join(html_parts), " ".join(texts)


def _image_name(block: Mapping[str, Any]) -> str:
    """ "[image: image/png, 12.3 KB]": a block with a `source` (an image, a document) by its
    type, media type and decoded size."""
    kind = str(block.get("type") or "block")
    source = block.get("source")
    source = source if isinstance(source, Mapping) else {}
    media = str(source.get("media_type") or "unknown type")
    data = source.get("data")
    if source.get("type") == "base64" and isinstance(data, str):
        size = len(data) * 3 // 4 - data[-2:].count("=")
        return f"[{kind}: {media}, {format_number(size, 'bytes')}]"
    if source.get("type") == "url":
        return f"[{kind}: {short(str(source.get('url')), 80)}]"
    return f"[{kind}: {media}]"


def _image_html(block: Mapping[str, Any]) -> tuple[str, str]:
    """An image block as the image itself (an inline PNG, JPEG, GIF or WebP, at most 240 px
    high) under its name; other sources by name only. Never its base64 as text."""
    named = _image_name(block)
    source = block.get("source")
    source = source if isinstance(source, Mapping) else {}
    media, data = source.get("media_type"), source.get("data")
    label = f'<div style="{MUTED}">{esc(named)}</div>'
    if source.get("type") == "base64" and media in _SHOWN_IMAGES and isinstance(data, str):
        image = (
            f'<img src="data:{media};base64,{esc(data)}" alt="{esc(named)}" '
            f'style="max-width:100%;max-height:240px;margin:2px 0">'
        )
        return label + image, named
    return label, named


def _images_named(value: Any) -> Any:
    """`value` (a request body, a block) with the base64 data of each image or document
    block replaced by its name (`_image_name`)."""
    if isinstance(value, Mapping):
        source = value.get("source")
        if isinstance(source, Mapping) and source.get("type") == "base64" and "data" in source:
            return {**value, "source": {**source, "data": _image_name(value)}}
        return {key: _images_named(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_images_named(item) for item in value]
    return value


def _params_html(params: Mapping[str, Any]) -> tuple[str, list[str]]:
    rows = "".join(
        f"<tr><td><code>{esc(key)}</code></td><td><code>{esc(encode(value))}</code></td></tr>"
        for key, value in params.items()
    )
    return f'<table style="font-size:13px"><tbody>{rows}</tbody></table>', [
        f"{key}: {encode(value)}" for key, value in params.items()
    ]


# ── small helpers ────────────────────────────────────────────────────────────────────────


def _size(value: Any) -> int:
    """Bytes of `value` as the client sends it (compact UTF-8 JSON)."""
    return len(encode(value).encode())


def _deferred(tool: Any) -> bool:
    return isinstance(tool, Mapping) and tool.get("defer_loading") is True


def _unloaded_in_body(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Deferred definitions in the body that nothing references (the API does not bill them)."""
    loaded = extract_discovered_tool_names(body.get("messages", []))
    return [t for t in body.get("tools", []) if _deferred(t) and t.get("name") not in loaded]


def _blocks_of(messages: Sequence[Any], kind: str) -> list[Mapping[str, Any]]:
    return [
        block
        for message in messages
        if isinstance(message, Mapping) and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, Mapping) and block.get("type") == kind
    ]


def _anchor(prefix: str, kind: str, tool_use_id: str) -> str:
    return prefix + kind + "-" + re.sub(r"[^A-Za-z0-9_-]", "_", tool_use_id)


def _label(text: str) -> str:
    return f'<div style="{MUTED}">{esc(text)}</div>'


def _pre(text: str) -> str:
    """A text, clipped at `CLIP` characters with its full length stated."""
    if len(text) <= CLIP:
        return f'<pre style="{PRE}">{esc(text)}</pre>'
    rest = f"… (clipped: {len(text):,} characters in all)"
    return f'<pre style="{PRE}">{esc(text[:CLIP])}</pre><div style="{MUTED}">{esc(rest)}</div>'
