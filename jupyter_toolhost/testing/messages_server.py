"""A loopback HTTP server that speaks the Anthropic Messages API, for tests and benchmarks.

Owns the scripted conversation (`Turn`, `text`, `tool_use`), the server's life cycle (a
stdlib `ThreadingHTTPServer` on 127.0.0.1 in a daemon thread), and the record of what
clients sent (`MessagesServer.requests`) and what went wrong (`MessagesServer.errors`).
Request validation lives in `validation.py`, thinking's signing and checks in
`thinking.py`, the JSON and SSE shapes of answers in `sse.py`, and the HTTP plumbing
(handler threads, writing replies and streams) in `transport.py`.

Endpoints: `POST /v1/messages` (JSON or `"stream": true` SSE) and
`POST /v1/messages/count_tokens`. Token counts are synthetic: a quarter of the request
body's byte length, less the deferred tools nothing has referenced yet (`api_view`); a
scripted call to a deferred tool nothing has loaded is refused as a script error. Nothing
here imports `anthropic`.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Self, cast

from jupyter_toolhost.agent.thinking import thinking_on
from jupyter_toolhost.testing.api_view import (
    billed_bytes,
    referenced_tool_names,
    visible_tool_names,
)
from jupyter_toolhost.testing.prompt_cache import PromptCache
from jupyter_toolhost.testing.sse import (
    ERROR_MESSAGES,
    Hold,
    error_body,
    error_type,
    message_object,
    stream_steps,
)
from jupyter_toolhost.testing.thinking import (
    RedactedThinkingBlock,
    Signer,
    ThinkingBlock,
    omitted,
    thinking_tokens,
)
from jupyter_toolhost.testing.transport import (
    DropReply,
    JsonReply,
    LoopbackHTTPServer,
    Reply,
    StreamReply,
)
from jupyter_toolhost.testing.validation import validate_request

__all__ = [
    "MessagesServer",
    "RawBlock",
    "RecordedError",
    "RecordedRequest",
    "Script",
    "TextBlock",
    "ToolUseBlock",
    "Turn",
    "raw",
    "text",
    "tool_use",
]

MESSAGES_PATH = "/v1/messages"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"

# --- the script -------------------------------------------------------------------------


@dataclass(frozen=True)
class TextBlock:
    text: str


@dataclass(frozen=True)
class ToolUseBlock:
    name: str
    input: dict[str, Any]
    id: str | None = None  # None: the server assigns toolu_01, toolu_02, ...


@dataclass(frozen=True)
class RawBlock:
    """Any other content block, sent as given: a server tool's `server_tool_use` or its
    result block (`tool_search_tool_result`, ...)."""

    block: dict[str, Any]


ContentBlock = TextBlock | ToolUseBlock | RawBlock | ThinkingBlock | RedactedThinkingBlock


def text(value: str) -> TextBlock:
    """A text content block."""
    return TextBlock(value)


def raw(block: dict[str, Any]) -> RawBlock:
    """A content block sent exactly as given (server tools' blocks)."""
    return RawBlock(block)


def tool_use(name: str, input: dict[str, Any], id: str | None = None) -> ToolUseBlock:
    """A tool_use content block; without `id` the server numbers it `toolu_01`, `toolu_02`..."""
    return ToolUseBlock(name, input, id)


@dataclass
class Turn:
    """What the server answers to one `POST /v1/messages`.

    `stop_reason` defaults to `tool_use` when any block is a tool_use, else `end_turn`;
    `output_tokens` defaults to a quarter of the content's JSON length. Streaming only:
    `block_delay` sleeps between content blocks, `cut_after_blocks=N` sends N complete
    blocks then drops the connection (no `message_delta`/`message_stop`), `cut_mid_block`
    drops it half-way through the first tool_use's `input_json_delta`s; with `clean_cut`
    the HTTP body is ended properly at the cut point instead (a stream that just stops).
    A non-streaming request to a cut turn gets its connection dropped before any response.
    A `max_tokens` (or `model_context_window_exceeded`) turn whose last block is a tool_use
    streams that block's input JSON cut half-way and then ends the block
    (`content_block_stop`, then `message_delta`), as the API does when the tokens run out
    mid-input; `cut_input=False` streams it whole (the limit fell exactly at its end),
    `cut_input=True` cuts it under any stop reason.
    `holds={i: Hold(...)}` waits right after block `i`'s `content_block_stop` until the
    hold's event is set or its timeout passes (a test sets it when a tool has started).

    `status` turns this into an injected error answer (429, 529, 500, ...) with the real
    API's error body; it is consumed like any turn, so a client retry gets the next one.
    The answer's usage splits the input as the API does (see `prompt_cache`): what the
    request's breakpoints read from the server's prompt cache, what they wrote, and the
    rest. `cache_read_input_tokens` / `cache_creation_input_tokens`, when either is set,
    are reported as given instead (the whole input then stays `input_tokens`), and the
    cache is left as it was.
    `thinking(...)` / `redacted_thinking(...)` blocks (from `testing.thinking`) are signed
    by the server and stream as the API's do; the usage reports their synthetic count as
    `output_tokens_details.thinking_tokens` (`thinking_tokens` overrides it), included in
    `output_tokens`. A thinking block in a turn answering a request without thinking on is
    a script error.
    `retry_after` (seconds) is sent as `retry-after: <whole seconds>` plus
    `retry-after-ms`: anthropic 2.16 ignores `retry-after: 0` and falls back to its own
    backoff (0.375-0.5 s for the first retry), while a positive `retry-after-ms` is
    obeyed, which keeps retries fast.
    `None` omits both headers.
    """

    content: list[ContentBlock] = field(default_factory=list)
    stop_reason: str | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    block_delay: float = 0.0
    delay_before: float = 0.0
    status: int | None = None
    error_message: str | None = None
    retry_after: float | None = 0.01
    cut_after_blocks: int | None = None
    cut_mid_block: bool = False
    clean_cut: bool = False
    thinking_tokens: int | None = None
    cut_input: bool | None = None
    holds: dict[int, Hold] = field(default_factory=dict[int, Hold])

    def __post_init__(self) -> None:
        if self.cut_mid_block and self.first_tool_use() is None:
            raise ValueError("cut_mid_block needs a tool_use block to cut")
        if self.status is not None and not 400 <= self.status <= 599:
            raise ValueError(f"status must be an HTTP error status, got {self.status}")

    def first_tool_use(self) -> int | None:
        """Index of the first tool_use block, if any."""
        return next(
            (i for i, block in enumerate(self.content) if isinstance(block, ToolUseBlock)), None
        )

    @property
    def is_cut(self) -> bool:
        return self.cut_after_blocks is not None or self.cut_mid_block

    def cut_input_block(self) -> int | None:
        """The index of the tool_use whose input streams cut half-way (see `cut_input`)."""
        last = len(self.content) - 1
        if last < 0 or not isinstance(self.content[last], ToolUseBlock):
            return None
        cuts = self.stop_reason in ("max_tokens", "model_context_window_exceeded")
        cut = cuts if self.cut_input is None else self.cut_input
        return last if cut else None


Script = Sequence[Turn] | Callable[[dict[str, Any]], Turn]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as received: path, parsed JSON body ({} if unparseable), headers."""

    path: str
    body: dict[str, Any]
    headers: dict[str, str]  # lower-cased names
    raw: bytes


@dataclass(frozen=True)
class RecordedError:
    """A response the server gave because the client or the script was wrong."""

    path: str
    status: int
    type: str
    message: str


class _Failure(Exception):
    """Abort the request with an error answer that is recorded in `server.errors`."""

    def __init__(self, status: int, message: str, error_code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_code = error_code


# --- the server -------------------------------------------------------------------------


class MessagesServer:
    """Scripted Messages API on `http://127.0.0.1:<free port>`; use as a context manager.

    `script` is a sequence of `Turn`s consumed one per valid `/v1/messages` request, or a
    callable `(request_json) -> Turn`. Invalid requests (see `validation.py`) get the real
    API's 400 and do not consume a turn. Running out of turns answers 500 with
    `x-should-retry: false`, so clients fail at once instead of retrying.
    """

    def __init__(
        self,
        script: Script = (),
        *,
        model: str | None = None,
        signing_key: bytes | None = None,
        clock: Callable[[], float] = time.monotonic,
        sdk_types: bool = True,
    ) -> None:
        self._lock = threading.Lock()
        self.sdk_types = sdk_types
        """Hold each body to the `anthropic` SDK's request types (False: a peer client such
        as Claude Code, which sends keys the installed SDK no longer lists)."""
        self.prompt_cache = PromptCache(clock)
        """What the requests' breakpoints wrote, and when each entry expires (`clock`)."""
        self.signer = Signer(signing_key)
        """Signs the thinking blocks this server issues and checks those sent back (a
        random key unless `signing_key` is given: another server's blocks fail)."""
        self._turns: deque[Turn] = deque()
        self._respond: Callable[[dict[str, Any]], Turn] | None = None
        if callable(script):
            self._respond = script
        else:
            self._turns.extend(script)
        self._model = model
        self._counters = {"msg": 0, "req": 0, "toolu": 0}
        self.requests: list[RecordedRequest] = []
        self.errors: list[RecordedError] = []
        self.usages: list[dict[str, Any]] = []
        """The usage of each message answered, in order (what the client is billed)."""
        self._httpd: LoopbackHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle

    def start(self) -> Self:
        if self._httpd is not None:
            return self
        # The SDK's request types are compiled once per process (about a second): here, so
        # that no timed request pays for it.
        from jupyter_toolhost.model.request_types import prepare

        prepare()
        self._httpd = LoopbackHTTPServer(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="MessagesServer",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.drop_connections()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("MessagesServer is not running; use it as a context manager")
        return f"http://127.0.0.1:{self._httpd.server_port}"

    # script

    def add_turns(self, *turns: Turn) -> None:
        """Append turns to a sequence script (e.g. between two phases of a test)."""
        with self._lock:
            self._turns.extend(turns)

    @property
    def remaining_turns(self) -> int:
        with self._lock:
            return len(self._turns)

    # request handling (runs in handler threads)

    def handle(
        self, method: str, path: str, headers: dict[str, str], raw: bytes, request_id: str
    ) -> Reply:
        """Answer one HTTP request (called by the handler threads of `transport`)."""
        body = self._parse(raw)
        with self._lock:
            self.requests.append(RecordedRequest(path, body or {}, headers, raw))
        try:
            if method != "POST" or path not in (MESSAGES_PATH, COUNT_TOKENS_PATH):
                raise _Failure(404, f"Not found: {method} {path}")
            if body is None:
                raise _Failure(400, "The request body is not valid JSON.")
            problem = validate_request(
                body,
                count_tokens=path == COUNT_TOKENS_PATH,
                signer=self.signer,
                headers=headers,
                sdk_types=self.sdk_types,
            )
            if problem is not None:
                raise _Failure(400, problem.message, problem.error_code)
            input_tokens = billed_bytes(body, raw) // 4
            if path == COUNT_TOKENS_PATH:
                return JsonReply(200, {"input_tokens": input_tokens})
            return self._answer(body, input_tokens, request_id)
        except _Failure as failure:
            return self._fail(path, failure, request_id)

    @staticmethod
    def _parse(raw: bytes) -> dict[str, Any] | None:
        try:
            body = json.loads(raw)
        except ValueError:
            return None
        return body if isinstance(body, dict) else None

    def _fail(self, path: str, failure: _Failure, request_id: str) -> JsonReply:
        kind = error_type(failure.status)
        with self._lock:
            self.errors.append(RecordedError(path, failure.status, kind, failure.message))
        # A broken script is not transient: tell clients not to retry it.
        headers = {"x-should-retry": "false"} if failure.status >= 500 else {}
        body = error_body(kind, failure.message, request_id, failure.error_code)
        return JsonReply(failure.status, body, headers)

    def _next_turn(self, body: dict[str, Any]) -> Turn:
        if self._respond is not None:
            try:
                return self._respond(body)
            except Exception as exc:
                raise _Failure(500, f"MessagesServer script callable raised: {exc!r}") from exc
        with self._lock:
            if self._turns:
                return self._turns.popleft()
            served = sum(r.path == MESSAGES_PATH for r in self.requests)
        raise _Failure(
            500,
            f"MessagesServer script exhausted: request #{served} to {MESSAGES_PATH} "
            "has no scripted turn left",
        )

    def _answer(self, body: dict[str, Any], input_tokens: int, request_id: str) -> Reply:
        turn = self._next_turn(body)
        if turn.status is not None:
            return _injected_error(turn, request_id)
        _check_visible(turn, body)
        _check_thinking_allowed(turn, body)
        message = self._render(turn, str(self._model or body["model"]), input_tokens, body)
        delay = turn.delay_before
        if not body.get("stream"):
            if turn.is_cut:
                return DropReply(delay)
            pauses = turn.block_delay * max(0, len(turn.content) - 1)
            return JsonReply(200, message, delay=delay + pauses)
        steps = stream_steps(
            message,
            block_delay=turn.block_delay,
            cut_after_blocks=turn.cut_after_blocks,
            cut_mid_block=turn.first_tool_use() if turn.cut_mid_block else None,
            clean_cut=turn.clean_cut,
            cut_input=turn.cut_input_block(),
            holds=turn.holds,
        )
        return StreamReply(steps, delay)

    def _render(
        self, turn: Turn, model: str, input_tokens: int, body: dict[str, Any]
    ) -> dict[str, Any]:
        hidden = omitted(body)
        content = [self._render_block(block, omitted=hidden) for block in turn.content]
        stop_reason = turn.stop_reason or (
            "tool_use" if turn.first_tool_use() is not None else "end_turn"
        )
        thoughts = [b for b in turn.content if isinstance(b, ThinkingBlock | RedactedThinkingBlock)]
        thought = turn.thinking_tokens
        if thought is None:
            thought = thinking_tokens(thoughts) if thoughts else 0
        output_tokens = turn.output_tokens
        if output_tokens is None:
            visible = [b for b, s in zip(content, turn.content, strict=True) if s not in thoughts]
            output_tokens = max(1, len(json.dumps(visible)) // 4 + thought)
        read, written = turn.cache_read_input_tokens, turn.cache_creation_input_tokens
        if read is None and written is None:
            bill = self.prompt_cache.bill(body, input_tokens)
            input_tokens = bill.input_tokens
            read, written = bill.cache_read_input_tokens, bill.cache_creation_input_tokens
        usage: dict[str, Any] = {
            "input_tokens": input_tokens,
            "output_tokens": max(output_tokens, thought),
            "cache_creation_input_tokens": written or 0,
            "cache_read_input_tokens": read or 0,
        }
        if thoughts or turn.thinking_tokens is not None:
            usage["output_tokens_details"] = {"thinking_tokens": thought}
        with self._lock:
            self.usages.append({"model": model, "tools": bool(body.get("tools")), **usage})
        return message_object(self.next_id("msg"), model, content, stop_reason, usage)

    def _render_block(self, block: ContentBlock, *, omitted: bool = False) -> dict[str, Any]:
        if isinstance(block, TextBlock):
            return {"type": "text", "text": block.text}
        if isinstance(block, RawBlock):
            return dict(block.block)
        if isinstance(block, ThinkingBlock | RedactedThinkingBlock):
            return self.signer.render(block, omitted=omitted)
        block_id = block.id or self.next_id("toolu")
        return {"type": "tool_use", "id": block_id, "name": block.name, "input": block.input}

    def next_id(self, prefix: Literal["msg", "req", "toolu"]) -> str:
        """Deterministic ids per server: `toolu_01`, `toolu_02`, ... (also `msg_`, `req_`)."""
        with self._lock:
            self._counters[prefix] += 1
            return f"{prefix}_{self._counters[prefix]:02d}"


def _check_visible(turn: Turn, body: dict[str, Any]) -> None:
    """A script may not call a deferred tool that nothing has loaded: the model behind the
    real API cannot see it (a test that does so tests an impossible conversation). A server
    tool search earlier in the same turn loads what it found."""
    hidden = {
        str(tool.get("name"))
        for tool in body.get("tools") or []
        if isinstance(tool, dict) and tool.get("defer_loading") is True
    } - visible_tool_names(body)
    for block in turn.content:
        if isinstance(block, RawBlock):
            hidden -= referenced_tool_names({"messages": [block.block]})
        elif isinstance(block, ToolUseBlock) and block.name in hidden:
            raise _Failure(
                500,
                f"MessagesServer script calls {block.name}, a deferred tool that no "
                "tool_reference has loaded: the model cannot see it yet",
            )


def _check_thinking_allowed(turn: Turn, body: dict[str, Any]) -> None:
    """A script may not think in answer to a request that did not turn thinking on: the
    real model never does, and the loop would be tested on an impossible conversation."""
    thinks = any(isinstance(b, ThinkingBlock | RedactedThinkingBlock) for b in turn.content)
    if thinks and not thinking_on(body.get("thinking")):
        raise _Failure(
            500,
            "MessagesServer script answers with a thinking block, but the request did not "
            "turn thinking on",
        )


def _injected_error(turn: Turn, request_id: str) -> JsonReply:
    status = cast(int, turn.status)
    message = turn.error_message or f"{ERROR_MESSAGES.get(status, 'Error')} (injected)"
    headers: dict[str, str] = {}
    if turn.retry_after is not None:
        headers["retry-after"] = str(int(turn.retry_after))
        headers["retry-after-ms"] = str(max(0, round(turn.retry_after * 1000)))
    body = error_body(error_type(status), message, request_id)
    return JsonReply(status, body, headers, turn.delay_before)
