"""A loopback HTTP server that speaks the Anthropic Messages API, for tests and benchmarks.

Owns the server's life cycle (a stdlib `ThreadingHTTPServer` on 127.0.0.1 in a daemon
thread), its answers to the scripted conversation, and the record of what clients sent
(`MessagesServer.requests`) and what went wrong (`MessagesServer.errors`). The script
itself (`Turn`, `text`, `tool_use`) is in `script.py`, request validation in
`validation.py`, thinking's signing and checks in `thinking.py`, the JSON and SSE shapes of
answers in `sse.py`, and the HTTP plumbing (handler threads, writing replies and streams)
in `transport.py`.

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
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, Self, cast

from jupyter_toolhost.core.errors import ToolhostError
from jupyter_toolhost.model.thinking import thinking_on
from jupyter_toolhost.testing.api_view import (
    billed_bytes,
    referenced_tool_names,
    visible_tool_names,
)
from jupyter_toolhost.testing.prompt_cache import PromptCache
from jupyter_toolhost.testing.script import (
    ContentBlock,
    RawBlock,
    Script,
    TextBlock,
    ToolUseBlock,
    Turn,
    raw,
    text,
    tool_use,
)
from jupyter_toolhost.testing.sse import (
    ERROR_MESSAGES,
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


@dataclass(frozen=True)
class RecordedRequest:
    """One request as received: path, parsed JSON body ({} if unparseable), headers."""

    path: str
    body: dict[str, Any]
    headers: dict[str, str]  # lower-cased names
    raw: bytes

    @property
    def api_key(self) -> str | None:
        """The key the request carried: `x-api-key`, or a bearer token (clients differ, and
        so do releases of one client: the `anthropic` SDK moved its key to a bearer token)."""
        scheme, _, token = self.headers.get("authorization", "").partition(" ")
        return self.headers.get("x-api-key") or (token if scheme == "Bearer" else None)


@dataclass(frozen=True)
class RecordedError:
    """A response the server gave because the client or the script was wrong."""

    path: str
    status: int
    type: str
    message: str


class _Failure(ToolhostError):
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
        long = 0
        if read is None and written is None:
            bill = self.prompt_cache.bill(body, input_tokens)
            input_tokens = bill.input_tokens
            read, written = bill.cache_read_input_tokens, bill.cache_creation_input_tokens
            long = bill.cache_creation_1h_input_tokens
        usage: dict[str, Any] = {
            "input_tokens": input_tokens,
            "output_tokens": max(output_tokens, thought),
            "cache_creation_input_tokens": written or 0,
            "cache_read_input_tokens": read or 0,
            "cache_creation": {
                "ephemeral_5m_input_tokens": (written or 0) - long,
                "ephemeral_1h_input_tokens": long,
            },
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
