"""The cassette file: what a request is reduced to, its key, and the JSON on disk.

Version 2 (written since branches):

```
{"version": 2,
 "source": {"kind": "recorded", "client": "anthropic 0.71.0", "model": "claude-...",
            "recorded_at": "2026-12-01"}
        or {"kind": "scripted", "note": "scripted answers stand in for the model"},
 "session": "<12 hex>",
 "disclosure": "defer_loading",        (only when a request sent `defer_loading` tools)
 "interactions": [{"key": "<sha256 hex>", "request": {...summary...}, "response": {...}}]}
```

`key` is the sha256 of the whole normalised conversation a request carries (every message,
the sorted tool names and the side-request purpose); replay looks interactions up by it.
`request` is the short, reviewable summary (message count, tool names, newest message)
that explains a miss. `disclosure` says the recording used the API's deferred loading, so a
replay with ``disclosure="auto"`` builds the same requests; without it, replay uses the
``discovered`` style (files recorded before the field existed). Version-1 files (no
source, session or keys) are still read; they replay by position. Nothing else is ever
written: no headers, keys, environment or URLs.

A `response` is `{"content": [...], "stop_reason": ..., "usage": ..., "model": ...}`, or
`{"content": [...], "broken": "<reason>"}` for a stream that broke. One that stopped at
`max_tokens` (any of `base.CUTTING_STOPS`) or broke may also hold
`"last_input_complete": true`: its last block, a tool_use, had a whole input
(`BlockComplete.input_complete`) when it was recorded, so it was started at once and
replay starts it too. Without the field that block is treated as possibly cut and never
started (the only behaviour before the field existed, so older files replay as recorded).
Every other recorded block is whole by construction (the stream went on past it), so
replay marks every other tool_use block `input_complete`. A response whose thinking block
streamed in several pieces holds them in `"thinking_deltas": {"<block index>": [...]}`,
so replay streams the same `ThinkingChunk`s.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal, TypeAlias, cast

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ..core.json_checks import field_problems
from ..core.json_values import json_array, json_mapping, json_object
from ..core.private import private_folder, private_opener
from .base import CUTTING_STOPS, ModelError, ModelRequest

CASSETTE_VERSION = 2
READABLE_VERSIONS = (1, 2)
SOURCE_ENV = "JUPYTER_TOOLHOST_CASSETTE_SOURCE"
"""Set to `scripted` when recording against scripted answers (the loopback server)."""
SCRIPTED_MODEL = "scripted"
"""The model a scripted cassette names in every response: no real model answered."""

SourceKind: TypeAlias = Literal["recorded", "scripted"]


LAST_INPUT_COMPLETE = "last_input_complete"


def last_input_field(whole: bool, stop_reason: str | None) -> dict[str, bool]:
    """`{"last_input_complete": true}` for a response whose last block's verdict decides
    what replay does (a `CUTTING_STOPS` stop, or `stop_reason` None: a broken stream) when
    that block's input was whole; nothing otherwise, so other files keep their bytes."""
    ended_early = stop_reason is None or stop_reason in CUTTING_STOPS
    return {LAST_INPUT_COMPLETE: True} if whole and ended_early else {}


def replayed_input_complete(response: Mapping[str, Any], index: int) -> bool:
    """`BlockComplete.input_complete` for recorded block `index` of `response`: true for a
    tool_use, except the last block of a `CUTTING_STOPS` or broken response, which is whole
    only when the recording says so (`last_input_field`)."""
    content = json_array(response.get("content")) or []
    block = json_mapping(content[index])
    if block is None or block.get("type") != "tool_use":
        return False
    ended_early = response.get("stop_reason") in CUTTING_STOPS or "broken" in response
    if index == len(content) - 1 and ended_early:
        return response.get(LAST_INPUT_COMPLETE) is True
    return True


def thinking_deltas(pieces: Mapping[str, list[str]]) -> dict[str, Any]:
    """The `thinking_deltas` field of a response: the pieces of each thinking block that
    streamed in more than one (nothing when none did, so other files keep their bytes)."""
    split = {index: list(parts) for index, parts in pieces.items() if len(parts) > 1}
    return {"thinking_deltas": split} if split else {}


class CassetteError(ModelError):
    """A cassette cannot serve this request (missing, exhausted, or a different request)."""


def _tmp_roots() -> list[str]:
    roots = {tempfile.gettempdir(), os.path.realpath(tempfile.gettempdir())}
    return sorted(roots, key=len, reverse=True)


_SESSION_DIR = re.compile(r"(sessions[/\\])[A-Za-z0-9_.-]+")


def normalise_text(text: str, *, cwd: str | None) -> str:
    """Replace what differs between two runs of the same conversation: the working
    directory, temp paths and session ids."""
    if cwd:
        for variant in sorted({cwd, os.path.realpath(cwd)}, key=len, reverse=True):
            text = text.replace(variant, "<cwd>")
    for root in _tmp_roots():
        text = re.sub(re.escape(root) + r"[/\\][^\s\"'<>]*", "<tmp>", text)
    text = text.replace(str(Path.home()), "~")
    return _SESSION_DIR.sub(r"\1<session>", text)


IMAGE_DATA = "<image data>"
"""What replay compares in place of an image's bytes: a plot drawn again by another version
of matplotlib or freetype differs in its bytes, not in what the conversation is."""


def _without_image_data(value: object) -> object:
    """`value` with the base64 data of every image block replaced by `IMAGE_DATA`."""
    items = json_array(value)
    if items is not None:
        return [_without_image_data(item) for item in items]
    found = json_object(value)
    if found is None:
        return value
    source = json_object(found.get("source"))
    if found.get("type") == "image" and source is not None and source.get("type") == "base64":
        return {**found, "source": {**source, "data": IMAGE_DATA}}
    return {key: _without_image_data(item) for key, item in found.items()}


def tool_names(request: ModelRequest) -> list[str]:
    """The names of the tools a request offers, sorted."""
    return sorted(str(tool.get("name")) for tool in request.tools)


def request_summary(request: ModelRequest, *, purpose: str | None = None) -> dict[str, Any]:
    """What a person reads (and a miss is explained with): message count, tool names and the
    newest message, normalised; for a side request also its purpose and model id."""
    last = _without_image_data(request.messages[-1]) if request.messages else None
    encoded = json.dumps(last, ensure_ascii=False, sort_keys=True)
    summary: dict[str, Any] = {
        "messages": len(request.messages),
        "tools": tool_names(request),
        "last": json.loads(normalise_text(encoded, cwd=request.cwd)),
    }
    if purpose is not None:
        summary = {"purpose": purpose, "model": request.model, **summary}
    return summary


def conversation_key(
    messages: Sequence[Any], *, tools: Sequence[str], purpose: str | None, cwd: str | None
) -> str:
    """The sha256 (hex) of a normalised conversation: its messages (images as placeholders),
    sorted tool names and purpose. Equal keys mean replay can serve the same response."""
    payload = {
        "messages": [_without_image_data(message) for message in messages],
        "tools": sorted(tools),
        "purpose": purpose,
    }
    text = normalise_text(json.dumps(payload, ensure_ascii=False, sort_keys=True), cwd=cwd)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def request_key(request: ModelRequest, *, purpose: str | None = None) -> str:
    """The key of the whole conversation `request` carries (see `conversation_key`)."""
    return conversation_key(
        request.messages, tools=tool_names(request), purpose=purpose, cwd=request.cwd
    )


def source_kind(requested: SourceKind | None) -> SourceKind:
    """`requested`, else `scripted` when `JUPYTER_TOOLHOST_CASSETTE_SOURCE=scripted`."""
    if requested is not None:
        return requested
    return "scripted" if os.environ.get(SOURCE_ENV, "").strip() == "scripted" else "recorded"


def make_source(kind: SourceKind, *, client: str, model: str) -> dict[str, Any]:
    """The `source` object for a file first written now."""
    if kind == "scripted":
        return {"kind": "scripted", "note": "scripted answers stand in for the model"}
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    return {"kind": "recorded", "client": client, "model": model, "recorded_at": today}


def client_name(inner: object) -> str:
    """`anthropic <version>` for the Anthropic client; the class name for another model."""
    from .anthropic_model import AnthropicModel

    if isinstance(inner, AnthropicModel):
        from importlib.metadata import PackageNotFoundError, version

        try:
            return f"anthropic {version('anthropic')}"
        except PackageNotFoundError:  # pragma: no cover - anthropic is a dependency
            return "anthropic"
    return type(inner).__name__


def new_session_id() -> str:
    """A random 12-hex id for a new cassette file."""
    return secrets.token_hex(6)


@dataclass
class CassetteFile:
    """A cassette's contents in memory."""

    version: int = CASSETTE_VERSION
    source: dict[str, Any] | None = None
    session: str | None = None
    interactions: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    disclosure: str | None = None
    """``"defer_loading"`` once a recorded request sent deferred tools that way."""

    @property
    def keyed(self) -> bool:
        """Whether interactions are looked up by key (version 2) or by position (1)."""
        return self.version >= 2


def _object_or_nothing(value: object) -> object:
    """`source` that is not an object has always been read as no source, not refused."""
    return json_object(value)


def _readable_version(version: float) -> float:
    if version not in READABLE_VERSIONS:
        raise PydanticCustomError(
            "version",
            "this package reads cassettes of version 1 or {current}, not {version}; "
            "re-record it with this version (cassette mode 'record')",
            {"current": CASSETTE_VERSION, "version": version},
        )
    return version


class _Checked(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


class _Block(_Checked):
    type: str


class _Failure(_Checked):
    status: int | None = None
    message: str | None = None


class _Response(_Checked):
    content: list[_Block]
    stop_reason: str | None = None
    usage: dict[str, object] | None = None
    model: str | None = None
    broken: str | None = None
    error: _Failure | None = None
    last_input_complete: bool | None = None
    thinking_deltas: dict[str, list[str]] | None = None


class _Interaction(_Checked):
    key: str | None = None
    request: dict[str, object] | None = None
    response: _Response | None = None

    @model_validator(mode="after")
    def _servable(self, info: ValidationInfo) -> _Interaction:
        """What replay serves needs a request and a response: an interaction with a key
        (version 2), and every interaction of a version-1 file (served in order)."""
        context = json_object(info.context) or {}
        positional = context.get("version") == 1
        if (self.key is not None or positional) and (self.request is None or self.response is None):
            raise PydanticCustomError(
                "interaction", "needs a 'request' object and a 'response' object", {}
            )
        return self


class _Cassette(_Checked):
    version: Annotated[float, AfterValidator(_readable_version)]
    source: Annotated[dict[str, object] | None, BeforeValidator(_object_or_nothing)] = None
    interactions: list[_Interaction]


_CASSETTE = TypeAdapter(_Cassette)
_INTERACTION = '{"key": "<sha256>", "request": {...}, "response": {"content": [...]}}'
_EXPECTED = {
    "": f'an object such as {{"version": {CASSETTE_VERSION}, "interactions": [...]}}',
    "version": f"1 or {CASSETTE_VERSION}",
    "interactions": f"a list of recorded interactions such as [{_INTERACTION}]",
    "interactions[*]": f"a recorded interaction such as {_INTERACTION}",
    "interactions[*].key": "the request's sha256 key (hex text)",
    "interactions[*].request": "the request's summary (an object)",
    "interactions[*].response": 'the recorded response, such as {"content": [...]}',
    "interactions[*].response.content": 'a list of content blocks such as [{"type": "text"}]',
    "interactions[*].response.content[*]": 'a content block such as {"type": "text"}',
    "interactions[*].response.content[*].type": 'the block\'s type, such as "text"',
    "interactions[*].response.usage": "the usage object the API returned",
    "interactions[*].response.thinking_deltas": (
        'an object of block indexes to lists of text, such as {"0": ["Let me", " see"]}'
    ),
}
"""What belongs at each place of a cassette, in the words a problem shows."""


def read_cassette(path: Path) -> CassetteFile:
    """Load a version-1 or version-2 cassette; `CassetteError` names the field that is wrong."""
    try:
        data: object = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CassetteError(
            f"The cassette {path} does not exist. Record it first: cassette mode 'record' "
            "(or 'auto') with ANTHROPIC_API_KEY set."
        ) from None
    except ValueError as exc:
        raise CassetteError(f"The cassette {path} is not valid JSON: {exc}") from None
    found = json_object(data) or {}
    try:
        checked = _CASSETTE.validate_python(data, context={"version": found.get("version")})
    except ValidationError as error:
        problems = "; ".join(map(str, field_problems(error, expected=_EXPECTED)))
        raise CassetteError(f"The cassette {path} cannot be replayed: {problems}") from None
    session, disclosure = found.get("session"), found.get("disclosure")
    return CassetteFile(
        version=int(checked.version),
        source=checked.source,
        session=str(session) if session else None,
        interactions=[
            cast("dict[str, Any]", item) for item in json_array(found["interactions"]) or ()
        ],
        disclosure=disclosure if isinstance(disclosure, str) else None,
    )


def write_cassette(path: Path, cassette: CassetteFile) -> None:
    """Write atomically as version 2, in a stable layout (the same record, the same bytes)."""
    data = {
        "version": CASSETTE_VERSION,
        "source": cassette.source,
        "session": cassette.session,
        **({"disclosure": cassette.disclosure} if cassette.disclosure else {}),
        "interactions": list(cassette.interactions),
    }
    text = json.dumps(data, ensure_ascii=False, indent=1) + "\n"
    private_folder(path.parent)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8", opener=private_opener) as out:
        out.write(text)
    os.replace(tmp, path)


def map_ids(request: ModelRequest, mapping: Mapping[str, str]) -> ModelRequest:
    """The request with the session's tool_use ids turned back into the inner model's."""
    if not mapping:
        return request
    messages = [map_message(message, mapping) for message in request.messages]
    return replace(request, messages=messages)


def map_message(message: Mapping[str, Any], mapping: Mapping[str, str]) -> dict[str, Any]:
    content = json_array(message.get("content"))
    if content is None:
        return dict(message)
    blocks: list[object] = []
    for item in content:
        block = json_mapping(item)
        if block is None:
            blocks.append(item)  # not a block: nothing to rename
            continue
        renamed = dict(block)
        for key in ("id", "tool_use_id"):
            value = renamed.get(key)
            if isinstance(value, str) and value in mapping:
                renamed[key] = mapping[value]
        blocks.append(renamed)
    return {**message, "content": blocks}
