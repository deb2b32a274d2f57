"""Record/replay cassettes: a `Model` wrapper that stores responses and serves them back.

A cassette is a small JSON file (`cassette_format`) with one interaction per model request:
a key for the whole normalised conversation, a short summary of the request (message count,
tool names, the newest message) and the response (its complete content blocks, stop reason
and usage; or the break or API error that ended it). Only what replay needs is kept:
thinking blocks whole (signature, data), and the pieces each streamed in.

Replay looks each request up by its key and serves the first not-yet-served interaction
with that key, wherever it is in the file: identical repeated requests are served in order,
and branches of one conversation (an Allow path and a Deny path that part at a tool_result)
live side by side. A request nothing matches raises `CassetteMismatch` (one line; the diff
against the closest recorded request is in `.diff`), or, in cassette mode `auto` with
something to record from, is forwarded and appended. Version-1 files (no keys) still replay
by position. Side requests made through `for_purpose` (the small model's, for WebFetch's
prompt) carry their purpose in the key, so each is only ever served a response recorded for
it, in whatever order concurrent ones arrive.

Recording rewrites the inner model's tool_use ids to `toolu_01`, `toolu_02`, ... (numbering
on from the highest id the conversation already holds, and mapping them back in the
requests it forwards), so a session holds the same conversation whether it was recorded or
replayed, and the file is the same against the real API or the loopback test server.

Vocabulary: this is the *cassette mode* (`auto`, `record`, `replay`), spelled
`--cassette-mode` on the command line and in `%%agent`, `c.ToolHost.cassette_mode` in
traitlets config and `CassetteModel(path, cassette_mode=...)` here (`mode=` still works).
`--mode` / `permission_mode` is always the permission mode.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, cast

from ..core.json_values import json_array, json_mapping
from ..core.types import CASSETTE_MODES as CASSETTE_MODES
from ..core.types import CassetteMode as CassetteMode
from .base import (
    AssistantMessage,
    BlockComplete,
    BlockStart,
    ContentBlock,
    MessageComplete,
    MessageStarted,
    Model,
    ModelAPIError,
    ModelEvent,
    ModelRequest,
    StreamBroken,
    TextChunk,
    ThinkingChunk,
    Usage,
)
from .cassette_format import (
    CASSETTE_VERSION,
    IMAGE_DATA,
    SCRIPTED_MODEL,
    SOURCE_ENV,
    CassetteError,
    CassetteFile,
    SourceKind,
    client_name,
    last_input_field,
    make_source,
    map_ids,
    new_session_id,
    normalise_text,
    read_cassette,
    replayed_input_complete,
    request_key,
    request_summary,
    source_kind,
    thinking_deltas,
    write_cassette,
)
from .cassette_miss import CassetteMismatch, canonical, closest, followed, mismatch

__all__ = [
    "CASSETTE_MODES",
    "CASSETTE_VERSION",
    "IMAGE_DATA",
    "SOURCE_ENV",
    "CassetteError",
    "CassetteMismatch",
    "CassetteMode",
    "CassetteModel",
    "normalise_text",
    "request_key",
    "request_summary",
]


_COMPARED = ("purpose", "messages", "last")
"""Summary fields that must agree as well as the key (a hand-edited summary is honoured)."""
_OUR_ID = re.compile(r"toolu_(\d+)$")


class CassetteModel:
    """Wraps a model: records its responses to `path`, or replays them from it.

    `cassette_mode="auto"` (the default) replays when the file exists, records when it does
    not and an API key is set, and otherwise fails saying how to record; replaying in `auto`
    with something to record from (an `inner` model, `inner_factory` or an API key), a
    request the file has no answer for is forwarded and appended to the file. `mode=` is
    the same parameter under its older name. `inner` is the model to record from (default:
    `AnthropicModel()`, created only when recording). `source="scripted"` (or
    `JUPYTER_TOOLHOST_CASSETTE_SOURCE=scripted` at record time) marks answers that came
    from a script, not a model: the file then names no model and stores no token counts.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        cassette_mode: CassetteMode | None = None,
        mode: CassetteMode | None = None,
        inner: Model | None = None,
        inner_factory: Callable[[], Model] | None = None,
        source: SourceKind | None = None,
    ) -> None:
        if cassette_mode is not None and mode is not None and cassette_mode != mode:
            raise ValueError(
                f"cassette_mode={cassette_mode!r} and mode={mode!r} disagree; give one"
            )
        mode = cassette_mode or mode or "auto"
        if mode not in CASSETTE_MODES:
            raise ValueError(
                f"cassette mode must be {', '.join(CASSETTE_MODES)}, not {mode!r} "
                "(permission modes such as 'dontAsk' go to Session(permission_mode=...))"
            )
        self.path = Path(path)
        self.requested_mode: CassetteMode = mode
        self._inner = inner
        self._inner_factory = inner_factory
        self._source_kind = source
        self._file: CassetteFile | None = None
        self._position = 0
        """Version 1: the next interaction to serve."""
        self._served: set[int] = set()
        """Version 2: the interactions served (or recorded) in this run."""
        self._counts: dict[str | None, int] = {}
        """Requests made so far, by purpose (numbers them in messages)."""
        self._mode: Literal["record", "replay"] | None = None
        self._forwarded = False
        self._ids_out: dict[str, str] = {}
        """Recording: the inner model's tool_use id -> the id the session sees."""
        self._id_floor = 0
        """The highest `toolu_NN` the session has seen; new ids number on from it."""

    @property
    def mode(self) -> Literal["record", "replay"]:
        """What this cassette does, once `auto` is resolved: `replay` when the file exists
        (in `auto`, a request it has no answer for is still recorded, one by one), `record`
        when it does not and there is something to record from. Raises `CassetteError`
        when neither works."""
        if self._mode is None:
            self._mode = self._resolve_mode()
        return self._mode

    @property
    def remaining(self) -> int:
        """Replay: recorded interactions not served yet."""
        cassette = self._load()
        if cassette.keyed:
            return len(cassette.interactions) - len(self._served)
        return len(cassette.interactions) - self._position

    @property
    def session_id(self) -> str | None:
        """The file's random 12-hex id: the loaded one when replaying, the one made for the
        file when recording (kept when more is appended); None when nothing is known yet
        (no file and nothing to record from, or a version-1 file)."""
        try:
            cassette = self._load()
        except CassetteError:
            return None
        if cassette.session is None and self.mode == "record":
            cassette.session = new_session_id()
        return cassette.session

    @property
    def source(self) -> dict[str, Any] | None:
        """The file's `source` (recorded: client, model, date; or scripted), once loaded or
        written; None before that and for version-1 files."""
        if self._file is None and self.path.exists() and self.requested_mode != "record":
            try:
                self._load()
            except CassetteError:
                return None
        return None if self._file is None else self._file.source

    @property
    def supports_defer_loading(self) -> bool:
        """Whether requests should use the API's `defer_loading` (for ``disclosure="auto"``):
        when replaying, whether the recording did; when recording, whether the model
        recorded from supports it."""
        try:
            if self.mode == "record":
                return bool(getattr(self._inner_model(), "supports_defer_loading", False))
            return self._load().disclosure == "defer_loading"
        except CassetteError:
            return False

    @property
    def replaying(self) -> bool:
        """True while every response served came from the file (no tokens spent): False in
        record mode and once a request was forwarded to the inner model."""
        try:
            return self.mode == "replay" and not self._forwarded
        except CassetteError:
            return False

    def _resolve_mode(self) -> Literal["record", "replay"]:
        if self.requested_mode != "auto":
            return self.requested_mode
        if self.path.exists():
            return "replay"
        if self._can_record():
            return "record"
        raise CassetteError(
            f"The cassette {self.path} does not exist and there is nothing to record it from. "
            "Set ANTHROPIC_API_KEY and run again to record it (cassette mode 'auto' or 'record')."
        )

    def _can_record(self) -> bool:
        from .anthropic_model import has_credentials

        return self._inner is not None or self._inner_factory is not None or has_credentials()

    def stream(
        self, request: ModelRequest, *, purpose: str | None = None
    ) -> AsyncIterator[ModelEvent]:
        """Serve (replay) or forward and store (record) one response. `purpose` marks a side
        request (see `for_purpose`); replay serves it only a response recorded for it."""
        self._counts[purpose] = self._counts.get(purpose, 0) + 1
        self._note_ids(request.messages)
        if self.mode == "replay":
            return self._replay(request, purpose, self._counts[purpose])
        return self._record(request, purpose)

    def for_purpose(self, purpose: str) -> Model:
        """A `Model` streaming through this cassette beside its other requests, whose
        requests are recorded and looked up with `purpose` (the small model's)."""
        return _PurposeView(self, purpose)

    # ── replay ────────────────────────────────────────────────────────────────────────

    def _load(self) -> CassetteFile:
        if self._file is None:
            if self.mode == "record":
                self._file = CassetteFile()
            else:
                self._file = read_cassette(self.path)
        return self._file

    async def _replay(
        self, request: ModelRequest, purpose: str | None, number: int
    ) -> AsyncIterator[ModelEvent]:
        async for event in self._answer(request, purpose, number):
            yield event

    def _answer(
        self, request: ModelRequest, purpose: str | None, number: int
    ) -> AsyncIterator[ModelEvent]:
        """The recorded response for `request`, or its recording (auto), or a mismatch."""
        cassette = self._load()
        if not cassette.keyed:
            return _serve(self._next_in_order(cassette, request, purpose, number))
        key = request_key(request, purpose=purpose)
        actual = request_summary(request, purpose=purpose)
        for index, interaction in enumerate(cassette.interactions):
            if index in self._served or interaction.get("key") != key:
                continue
            recorded = interaction.get("request", {})
            if all(canonical(recorded.get(k)) == canonical(actual.get(k)) for k in _COMPARED):
                self._served.add(index)
                response = interaction["response"]
                self._note_ids([response])
                return _serve(response)
        if self.requested_mode == "auto" and self._can_record():
            self._forwarded = True
            return self._record(request, purpose)
        same = [
            i.get("request", {})
            for i in cassette.interactions
            if i.get("request", {}).get("purpose") == purpose
        ]
        keys = [str(i.get("key")) for i in cassette.interactions]
        raise mismatch(
            path=self.path,
            number=number,
            request=request,
            purpose=purpose,
            actual=actual,
            recorded=same,
            near=closest(same, actual),
            after=followed(request, purpose, set(keys)),
            served=keys.count(key),
        )

    def _next_in_order(
        self, cassette: CassetteFile, request: ModelRequest, purpose: str | None, number: int
    ) -> dict[str, Any]:
        """Version 1: the next recorded interaction, which must match the request."""
        interactions = cassette.interactions
        if self._position >= len(interactions):
            raise CassetteError(
                f"The cassette {self.path} has {len(interactions)} recorded requests and this "
                "run made another one. Re-record it (cassette mode 'record', with "
                "ANTHROPIC_API_KEY)."
            )
        actual = request_summary(request, purpose=purpose)
        if purpose is not None:
            _bring_forward(interactions, self._position, actual)
        recorded = interactions[self._position]["request"]
        if recorded.get("purpose") == purpose:
            self._position += 1  # consumed even when it differs, as version 1 always did
        # else: not consumed, so the loop's next request still lines up with its recording.
        if not all(canonical(recorded.get(k)) == canonical(actual.get(k)) for k in _COMPARED):
            raise mismatch(
                path=self.path,
                number=number,
                request=request,
                purpose=purpose,
                actual=actual,
                recorded=[i["request"] for i in interactions],
                near=recorded if recorded.get("messages") == actual["messages"] else None,
                after=number - 1,
            )
        return interactions[self._position - 1]["response"]

    # ── record ────────────────────────────────────────────────────────────────────────

    def credentials(self) -> dict[str, str]:
        """The credentials of the model it records from, once there is one."""
        found: Any = getattr(self._inner, "credentials", None)
        if not callable(found):
            return {}
        named = cast(Mapping[Any, Any], found())
        return {str(k): str(v) for k, v in named.items()}

    def _inner_model(self) -> Model:
        if self._inner is None:
            if self._inner_factory is not None:
                self._inner = self._inner_factory()
            else:
                from .anthropic_model import AnthropicModel

                self._inner = AnthropicModel()
        return self._inner

    async def _record(
        self, request: ModelRequest, purpose: str | None = None
    ) -> AsyncIterator[ModelEvent]:
        key = request_key(request, purpose=purpose)
        summary = request_summary(request, purpose=purpose)
        forwarded = map_ids(request, {seen: real for real, seen in self._ids_out.items()})
        scripted = self._scripted()
        complete: list[ContentBlock] = []
        pieces: dict[str, list[str]] = {}  # each thinking block's streamed pieces
        whole = False  # the last block's input_complete
        entry = {"key": key, "request": summary}
        if any(tool.get("defer_loading") for tool in request.tools):
            self._load().disclosure = "defer_loading"
        try:
            async for event in self._inner_model().stream(forwarded):
                if isinstance(event, BlockComplete):
                    block = self._rename(event.block)
                    complete.append(block)
                    whole = event.input_complete
                    yield replace(event, block=block)
                elif isinstance(event, MessageComplete):
                    message = event.message
                    response: dict[str, Any] = {
                        "content": [self._rename(block) for block in message.content],
                        "stop_reason": message.stop_reason,
                        "usage": {} if scripted else message.usage.to_dict(),
                        "model": SCRIPTED_MODEL if scripted else message.model,
                        **last_input_field(whole, message.stop_reason),
                        **thinking_deltas(pieces),
                    }
                    self._store({**entry, "response": response})
                    yield MessageComplete(
                        AssistantMessage(
                            response["content"],
                            message.stop_reason,
                            Usage.from_dict(response["usage"]),
                            response["model"],
                        )
                    )
                else:
                    if isinstance(event, ThinkingChunk):
                        pieces.setdefault(str(event.index), []).append(event.thinking)
                    yield event
        except StreamBroken as broken:
            response = {"content": complete, "broken": broken.reason}
            self._store({**entry, "response": {**response, **last_input_field(whole, None)}})
            raise StreamBroken(broken.reason, content=complete) from broken
        except ModelAPIError as error:
            failure = {"status": error.status, "message": str(error)}
            self._store({**entry, "response": {"content": [], "error": failure}})
            raise

    def _scripted(self) -> bool:
        if self._source_kind is None:
            self._source_kind = source_kind(None)
        return self._source_kind == "scripted"

    def _note_ids(self, messages: Iterable[Mapping[str, Any]]) -> None:
        for message in messages:
            for item in json_array(message.get("content")) or ():
                block = json_mapping(item)
                if block is not None and block.get("type") == "tool_use":
                    found = _OUR_ID.match(str(block.get("id", "")))
                    if found:
                        self._id_floor = max(self._id_floor, int(found.group(1)))

    def _rename(self, block: ContentBlock) -> ContentBlock:
        if block.get("type") != "tool_use" or "id" not in block:
            return block
        real = str(block["id"])
        if real not in self._ids_out:
            self._id_floor += 1
            self._ids_out[real] = f"toolu_{self._id_floor:02d}"
        renamed = self._ids_out[real]
        return {key: (renamed if key == "id" else value) for key, value in block.items()}

    def _store(self, interaction: dict[str, Any]) -> None:
        cassette = self._load()
        if cassette.session is None:
            cassette.session = new_session_id()
        if cassette.source is None:
            model = str(interaction["response"].get("model") or "")
            kind: SourceKind = "scripted" if self._scripted() else "recorded"
            cassette.source = make_source(kind, client=client_name(self._inner), model=model)
        self._served.add(len(cassette.interactions))
        cassette.interactions.append(interaction)
        cassette.version = CASSETTE_VERSION
        write_cassette(self.path, cassette)


async def _serve(response: Mapping[str, Any]) -> AsyncIterator[ModelEvent]:
    """Stream a recorded response as the model streamed it: its input usage first (what a
    stream interrupted early is billed), then its blocks."""
    if response.get("usage"):
        recorded = Usage.from_dict(response["usage"])
        yield MessageStarted(replace(recorded, output_tokens=0, thinking_tokens=0))
    for index, block in enumerate(response.get("content", [])):
        await asyncio.sleep(0)
        yield BlockStart(index, str(block.get("type")))
        if block.get("type") == "text" and block.get("text"):
            yield TextChunk(index, block["text"])
        elif block.get("type") == "thinking" and block.get("thinking"):
            for piece in response.get("thinking_deltas", {}).get(str(index)) or [block["thinking"]]:
                yield ThinkingChunk(index, str(piece))
        yield BlockComplete(index, dict(block), replayed_input_complete(response, index))
    await asyncio.sleep(0)
    if "error" in response:
        error = response["error"]
        raise ModelAPIError(str(error.get("message")), status=error.get("status"))
    if "broken" in response:
        raise StreamBroken(str(response["broken"]), content=response.get("content", []))
    yield MessageComplete(
        AssistantMessage(
            [dict(block) for block in response["content"]],
            response.get("stop_reason"),
            Usage.from_dict(response.get("usage")),
            str(response.get("model", "")),
        )
    )


class _PurposeView:
    """The cassette seen as a `Model` whose requests carry one purpose."""

    def __init__(self, cassette: CassetteModel, purpose: str) -> None:
        self.cassette = cassette
        self.purpose = purpose

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        return self.cassette.stream(request, purpose=self.purpose)


def _bring_forward(
    interactions: list[dict[str, Any]], position: int, actual: Mapping[str, Any]
) -> None:
    """Version 1: side requests of one turn can run concurrently (two WebFetch calls), so
    they may arrive in another order than they were recorded in: among the recorded
    requests of the same purpose that come next, serve the one this request matches."""
    purpose = actual.get("purpose")
    for index in range(position, len(interactions)):
        recorded = interactions[index]["request"]
        if recorded.get("purpose") != purpose:
            return
        if all(canonical(recorded.get(k)) == canonical(actual.get(k)) for k in _COMPARED):
            interactions.insert(position, interactions.pop(index))
            return
