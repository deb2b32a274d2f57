"""Why a cassette has no response for a request: one line a person can act on, and a diff.

The line compares the request with the closest recorded one (same purpose and message
count, the most similar newest message) and says how far the conversation followed the
recording before it went another way; the long unified diff goes to `CassetteMismatch.diff`.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.json_values import json_array, json_blocks, json_mapping
from .base import ModelRequest
from .cassette_format import CassetteError, conversation_key, tool_names

RERECORD = "Re-record: --cassette-mode record (or auto with ANTHROPIC_API_KEY to add this branch)."


class CassetteMismatch(CassetteError):
    """No recorded interaction matches the request. `str()` is one line saying what differed
    and how to re-record; `diff` is the unified diff against the closest recorded request."""

    def __init__(self, message: str, *, diff: str = "") -> None:
        super().__init__(message)
        self.diff = diff


def canonical(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _pretty(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, indent=1)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def followed(request: ModelRequest, purpose: str | None, keys: set[str]) -> int:
    """How many earlier requests of this conversation (its prefixes that end on a user
    message) the cassette recorded."""
    tools = tool_names(request)
    count = 0
    for end in range(1, len(request.messages)):
        if request.messages[end - 1].get("role") != "user":
            continue
        prefix = request.messages[:end]
        if conversation_key(prefix, tools=tools, purpose=purpose, cwd=request.cwd) in keys:
            count += 1
    return count


def closest(
    candidates: Sequence[Mapping[str, Any]], actual: Mapping[str, Any]
) -> Mapping[str, Any] | None:
    """Of recorded request summaries, the one with the same message count whose newest
    message is most like `actual`'s."""
    same = [c for c in candidates if c.get("messages") == actual.get("messages")]
    if not same:
        return None
    wanted = canonical(actual.get("last"))[:4000]

    def likeness(recorded: Mapping[str, Any]) -> float:
        text = canonical(recorded.get("last"))[:4000]
        return difflib.SequenceMatcher(None, text, wanted, autojunk=False).ratio()

    return max(same, key=likeness)


def describe_newest(request: ModelRequest, recorded: Any = None, actual: Any = None) -> str:
    """The newest message in a few words: a prompt, or tool results and their tools (only
    those that differ from the `recorded` newest message, when it answered the same calls;
    `actual` is this request's newest message as normalised for comparing with it)."""
    if not request.messages:
        return "an empty conversation"
    last = request.messages[-1]
    content = last.get("content")
    if isinstance(content, str):
        return f"a {last.get('role', 'user')} message {content[:40]!r}"
    blocks = json_blocks(content)
    results = [b for b in blocks if b.get("type") == "tool_result"]
    if not results:
        texts = " ".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
        return f"a {last.get('role', 'user')} message {texts[:40]!r}"
    before, now = _results_by_id(recorded), _results_by_id(actual)
    if before.keys() == now.keys() == {str(b.get("tool_use_id")) for b in results}:
        differ = {i for i in now if canonical(now[i]) != canonical(before[i])}
        results = [b for b in results if str(b.get("tool_use_id")) in differ] or results
    names = _tool_use_names(request.messages[:-1])
    tools = ", ".join(names.get(str(b.get("tool_use_id")), "a tool") for b in results)
    errors = " (an error)" if any(b.get("is_error") for b in results) else ""
    kind = "a tool_result" if len(results) == 1 else "tool_results"
    return f"{kind} for {tools}{errors}"


def _results_by_id(message: object) -> dict[str, Mapping[str, object]]:
    found = json_mapping(message)
    blocks = json_blocks(found.get("content")) if found is not None else []
    return {str(b.get("tool_use_id")): b for b in blocks if b.get("type") == "tool_result"}


def _tool_use_names(messages: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    for message in reversed(messages):
        content = message.get("content")
        if message.get("role") == "assistant" and json_array(content) is not None:
            return {
                str(b.get("id")): str(b.get("name"))
                for b in json_blocks(content)
                if b.get("type") == "tool_use"
            }
    return {}


def mismatch(
    *,
    path: Path,
    number: int,
    request: ModelRequest,
    purpose: str | None,
    actual: Mapping[str, Any],
    recorded: Sequence[Mapping[str, Any]],
    near: Mapping[str, Any] | None,
    after: int,
    served: int = 0,
) -> CassetteMismatch:
    """The error for a request nothing in the cassette answers. `recorded` are the summaries
    of the same purpose, `near` the closest of them (or None), `after` how many requests of
    this conversation matched before it, `served` how many recordings of this very request
    were all served already."""
    what = "Request" if purpose is None else f"{purpose} request"
    head = f"{what} #{number} does not match {path.name}"
    went = f"after {_plural(after, 'recorded request')} this conversation went another way"
    if served:
        like = _plural(served, "recorded request")
        reason = f"the cassette has {like} like this one and this run asked once more"
    elif near is None:
        reason = (
            f"{went}: the cassette has {_plural(len(recorded), 'recorded request')} and none "
            f"with {actual.get('messages')} messages"
        )
    elif canonical(near.get("last")) != canonical(actual.get("last")):
        newest = describe_newest(request, near.get("last"), actual.get("last"))
        reason = f"{went}: the newest message is {newest} that the cassette never saw"
    elif canonical(near.get("tools")) != canonical(actual.get("tools")):
        added = sorted(set(actual.get("tools") or ()) - set(near.get("tools") or ()))
        removed = sorted(set(near.get("tools") or ()) - set(actual.get("tools") or ()))
        change = "; ".join(
            part
            for part in (
                f"added {', '.join(added)}" if added else "",
                f"removed {', '.join(removed)}" if removed else "",
            )
            if part
        )
        reason = f"the tools offered differ from the recording ({change or 'reordered'})"
    else:
        reason = f"{went}: an earlier message differs from every recording"
    diff = "\n".join(
        difflib.unified_diff(
            _pretty(near).splitlines() if near is not None else [],
            _pretty(actual).splitlines(),
            fromfile=f"{path.name} closest recorded request",
            tofile=f"this run, request #{number}",
            lineterm="",
        )
    )
    message = f"{head}: {reason}. {RERECORD}"
    return CassetteMismatch(" ".join(message.split()), diff=diff)
