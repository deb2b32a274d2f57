"""Record/replay cassettes: a `Model` wrapper that stores responses and serves them back.

A cassette is a small JSON file with one interaction per model request: a normalised
summary of the request (how many messages, the tool names, the newest message) and the
response (its complete content blocks, stop reason and usage; or the break or API error
that ended it). Only what replay needs is kept, so cassettes stay small and reviewable.

Recording rewrites the inner model's tool_use ids to `toolu_01`, `toolu_02`, ... (and maps
them back in the requests it forwards), so the conversation a session holds is the same
whether it was recorded or replayed, and the file is the same whether it was recorded
against the real API or the loopback test server. Replay checks each request against the
recorded one (message count and newest message) after normalising temp paths, the working
directory and session ids, and fails with a diff when they differ. Side requests made
through `for_purpose` (the small model's, for WebFetch's prompt) are stored in the same
order with their purpose and model id, and replay serves them only responses recorded
for that purpose.

Vocabulary: this is the *cassette mode* (`auto`, `record`, `replay`), spelled
`--cassette-mode` on the command line and in `%%agent`, `c.ToolHost.cassette_mode` in
traitlets config and `CassetteModel(path, cassette_mode=...)` here (`mode=` still works).
`--mode` / `permission_mode` is always the permission mode.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import os
import re
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeAlias, get_args

from .base import (
    AssistantMessage,
    BlockComplete,
    BlockStart,
    ContentBlock,
    MessageComplete,
    Model,
    ModelAPIError,
    ModelError,
    ModelEvent,
    ModelRequest,
    StreamBroken,
    TextChunk,
    Usage,
)

CassetteMode: TypeAlias = Literal["auto", "record", "replay"]
CASSETTE_MODES: tuple[CassetteMode, ...] = get_args(CassetteMode)
CASSETTE_VERSION = 1


class CassetteError(ModelError):
    """A cassette cannot serve this request (missing, exhausted, or a different request)."""


class CassetteMismatch(CassetteError):
    """The request differs from the recorded one; the message holds a diff."""


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


def request_summary(request: ModelRequest, *, purpose: str | None = None) -> dict[str, Any]:
    """What replay compares: message count, tool names and the newest message, normalised;
    for a side request (`purpose`, e.g. the small model's) also its purpose and model id."""
    last = _without_image_data(request.messages[-1]) if request.messages else None
    encoded = json.dumps(last, ensure_ascii=False, sort_keys=True)
    summary: dict[str, Any] = {
        "messages": len(request.messages),
        "tools": sorted(str(tool.get("name")) for tool in request.tools),
        "last": json.loads(normalise_text(encoded, cwd=request.cwd)),
    }
    if purpose is not None:
        summary = {"purpose": purpose, "model": request.model, **summary}
    return summary


IMAGE_DATA = "<image data>"
"""What replay compares in place of an image's bytes: a plot drawn again by another version
of matplotlib or freetype differs in its bytes, not in what the conversation is."""


def _without_image_data(value: Any) -> Any:
    """`value` with the base64 data of every image block replaced by `IMAGE_DATA`."""
    if isinstance(value, list):
        return [_without_image_data(item) for item in value]
    if not isinstance(value, dict):
        return value
    if value.get("type") == "image" and isinstance(value.get("source"), dict):
        source = value["source"]
        if source.get("type") == "base64":
            return {**value, "source": {**source, "data": IMAGE_DATA}}
    return {key: _without_image_data(item) for key, item in value.items()}


class CassetteModel:
    """Wraps a model: records its responses to `path`, or replays them from it.

    `cassette_mode="auto"` (the default) replays when the file exists, records when it does
    not and an API key is set, and otherwise fails saying how to record. `mode=` is the
    same parameter under its older name. `inner` is the model to record from (default:
    `AnthropicModel()`, created only when recording).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        cassette_mode: CassetteMode | None = None,
        mode: CassetteMode | None = None,
        inner: Model | None = None,
        inner_factory: Callable[[], Model] | None = None,
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
        self._interactions: list[dict[str, Any]] | None = None
        self._position = 0
        self._mode: Literal["record", "replay"] | None = None
        self._ids_out: dict[str, str] = {}
        """Record mode: the inner model's tool_use id -> the id the session sees."""

    @property
    def mode(self) -> Literal["record", "replay"]:
        """What this cassette does, once `auto` is resolved."""
        if self._mode is None:
            self._mode = self._resolve_mode()
        return self._mode

    @property
    def remaining(self) -> int:
        """Replay: recorded interactions not served yet."""
        return len(self._load()) - self._position

    def _resolve_mode(self) -> Literal["record", "replay"]:
        if self.requested_mode != "auto":
            return self.requested_mode
        if self.path.exists():
            return "replay"
        from .anthropic_model import has_credentials

        if self._inner is not None or has_credentials():
            return "record"
        raise CassetteError(
            f"The cassette {self.path} does not exist and there is nothing to record it from. "
            "Set ANTHROPIC_API_KEY and run again to record it (cassette mode 'auto' or 'record')."
        )

    def stream(
        self, request: ModelRequest, *, purpose: str | None = None
    ) -> AsyncIterator[ModelEvent]:
        """Serve (replay) or forward and store (record) one response. `purpose` marks a side
        request (see `for_purpose`); replay serves it only a response recorded for it."""
        if self.mode == "replay":
            return self._replay(request, purpose)
        return self._record(request, purpose)

    def for_purpose(self, purpose: str) -> Model:
        """A `Model` streaming through this cassette, in order with its other requests,
        whose requests are recorded and checked with `purpose` (the small model's)."""
        return _PurposeView(self, purpose)

    # ── replay ────────────────────────────────────────────────────────────────────────

    def _load(self) -> list[dict[str, Any]]:
        if self._interactions is None:
            if self.mode == "record":
                self._interactions = []
            else:
                self._interactions = _read(self.path)
        return self._interactions

    async def _replay(
        self, request: ModelRequest, purpose: str | None = None
    ) -> AsyncIterator[ModelEvent]:
        interactions = self._load()
        if self._position >= len(interactions):
            raise CassetteError(
                f"The cassette {self.path} has {len(interactions)} recorded requests and this "
                "run made another one. Re-record it (cassette mode 'record', with "
                "ANTHROPIC_API_KEY)."
            )
        number = self._position + 1
        actual = request_summary(request, purpose=purpose)
        if purpose is not None:
            _bring_forward(interactions, self._position, actual)
        recorded = interactions[self._position]
        if recorded["request"].get("purpose") != purpose:
            # Not consumed: the loop's next request still lines up with its recording.
            _check_match(self.path, number, recorded["request"], actual)
        self._position += 1
        _check_match(self.path, number, recorded["request"], actual)
        response = recorded["response"]
        for index, block in enumerate(response.get("content", [])):
            await asyncio.sleep(0)
            yield BlockStart(index, str(block.get("type")))
            if block.get("type") == "text" and block.get("text"):
                yield TextChunk(index, block["text"])
            yield BlockComplete(index, dict(block))
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

    # ── record ────────────────────────────────────────────────────────────────────────

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
        interactions = self._load()
        summary = request_summary(request, purpose=purpose)
        forwarded = _map_ids(request, {seen: real for real, seen in self._ids_out.items()})
        complete: list[ContentBlock] = []
        response: dict[str, Any]
        try:
            async for event in self._inner_model().stream(forwarded):
                if isinstance(event, BlockComplete):
                    block = self._rename(event.block)
                    complete.append(block)
                    yield BlockComplete(event.index, block)
                elif isinstance(event, MessageComplete):
                    message = event.message
                    response = {
                        "content": [self._rename(block) for block in message.content],
                        "stop_reason": message.stop_reason,
                        "usage": message.usage.to_dict(),
                        "model": message.model,
                    }
                    self._store(interactions, summary, response)
                    yield MessageComplete(
                        AssistantMessage(
                            response["content"], message.stop_reason, message.usage, message.model
                        )
                    )
                else:
                    yield event
        except StreamBroken as broken:
            self._store(interactions, summary, {"content": complete, "broken": broken.reason})
            raise StreamBroken(broken.reason, content=complete) from broken
        except ModelAPIError as error:
            failure = {"status": error.status, "message": str(error)}
            self._store(interactions, summary, {"content": [], "error": failure})
            raise

    def _rename(self, block: ContentBlock) -> ContentBlock:
        if block.get("type") != "tool_use" or "id" not in block:
            return block
        real = str(block["id"])
        if real not in self._ids_out:
            self._ids_out[real] = f"toolu_{len(self._ids_out) + 1:02d}"
        renamed = self._ids_out[real]
        return {key: (renamed if key == "id" else value) for key, value in block.items()}

    def _store(
        self, interactions: list[dict[str, Any]], summary: dict[str, Any], response: dict[str, Any]
    ) -> None:
        interactions.append({"request": summary, "response": response})
        _write(self.path, interactions)


class _PurposeView:
    """The cassette seen as a `Model` whose requests carry one purpose."""

    def __init__(self, cassette: CassetteModel, purpose: str) -> None:
        self.cassette = cassette
        self.purpose = purpose

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        return self.cassette.stream(request, purpose=self.purpose)


def _map_ids(request: ModelRequest, mapping: Mapping[str, str]) -> ModelRequest:
    """The request with the session's tool_use ids turned back into the inner model's."""
    if not mapping:
        return request
    messages = [_map_message(message, mapping) for message in request.messages]
    return ModelRequest(
        model=request.model,
        messages=messages,
        max_tokens=request.max_tokens,
        system=request.system,
        tools=request.tools,
        tool_choice=request.tool_choice,
        cwd=request.cwd,
    )


def _map_message(message: Mapping[str, Any], mapping: Mapping[str, str]) -> dict[str, Any]:
    content = message.get("content")
    if not isinstance(content, list):
        return dict(message)
    blocks = []
    for block in content:
        renamed = dict(block)
        for key in ("id", "tool_use_id"):
            if key in renamed and renamed[key] in mapping:
                renamed[key] = mapping[renamed[key]]
        blocks.append(renamed)
    return {**message, "content": blocks}


def _bring_forward(
    interactions: list[dict[str, Any]], position: int, actual: Mapping[str, Any]
) -> None:
    """Side requests of one turn can run concurrently (two WebFetch calls), so they may
    arrive in another order than they were recorded in: among the recorded requests of the
    same purpose that come next, serve the one this request matches."""
    purpose = actual.get("purpose")
    for index in range(position, len(interactions)):
        recorded = interactions[index]["request"]
        if recorded.get("purpose") != purpose:
            return
        if all(_canonical(recorded.get(k)) == _canonical(actual.get(k)) for k in _COMPARED):
            interactions.insert(position, interactions.pop(index))
            return


_COMPARED = ("purpose", "messages", "last")


def _check_match(
    path: Path, number: int, recorded: Mapping[str, Any], actual: Mapping[str, Any]
) -> None:
    """Same message count and same newest message (tool results included). The tool names
    are shown in a diff but do not decide: a tool added to the pool changes nothing the
    recording relied on, and a tool removed shows up as a different tool result. The
    purpose of a side request (absent on the loop's own) must match too."""
    if all(_canonical(recorded.get(k)) == _canonical(actual.get(k)) for k in _COMPARED):
        return
    diff = "\n".join(
        difflib.unified_diff(
            _pretty(recorded).splitlines(),
            _pretty(actual).splitlines(),
            fromfile=f"{path.name} request #{number} (recorded)",
            tofile="this run",
            lineterm="",
        )
    )
    raise CassetteMismatch(
        f"Request #{number} does not match what {path} recorded, so its recorded response "
        "cannot be replayed. Re-record the cassette (cassette mode 'record', with "
        f"ANTHROPIC_API_KEY) if the change is intended.\n{diff}"
    )


def _canonical(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _pretty(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, indent=1)


def _read(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CassetteError(
            f"The cassette {path} does not exist. Record it first: cassette mode 'record' "
            "(or 'auto') with ANTHROPIC_API_KEY set."
        ) from None
    except ValueError as exc:
        raise CassetteError(f"The cassette {path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("version") != CASSETTE_VERSION:
        raise CassetteError(f"{path} is not a version {CASSETTE_VERSION} cassette")
    interactions = data.get("interactions")
    if not isinstance(interactions, list):
        raise CassetteError(f"{path} has no interactions list")
    return interactions


def _write(path: Path, interactions: Sequence[dict[str, Any]]) -> None:
    """Write atomically, in a stable layout (two runs of the same record are equal bytes)."""
    data = {"version": CASSETTE_VERSION, "interactions": list(interactions)}
    text = json.dumps(data, ensure_ascii=False, indent=1) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
