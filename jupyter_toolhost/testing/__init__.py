"""Test support shipped with the package: a loopback Messages API server."""

from __future__ import annotations

from jupyter_toolhost.testing.invalid_request import InvalidRequest
from jupyter_toolhost.testing.messages_server import (
    MessagesServer,
    RawBlock,
    RecordedError,
    RecordedRequest,
    Script,
    TextBlock,
    ToolUseBlock,
    Turn,
    raw,
    text,
    tool_use,
)
from jupyter_toolhost.testing.sse import Hold
from jupyter_toolhost.testing.thinking import (
    RedactedThinkingBlock,
    ThinkingBlock,
    redacted_thinking,
    thinking,
)
from jupyter_toolhost.testing.validation import validate_request

__all__ = [
    "Hold",
    "InvalidRequest",
    "MessagesServer",
    "RawBlock",
    "RecordedError",
    "RecordedRequest",
    "RedactedThinkingBlock",
    "Script",
    "TextBlock",
    "ThinkingBlock",
    "ToolUseBlock",
    "Turn",
    "raw",
    "redacted_thinking",
    "text",
    "thinking",
    "tool_use",
    "validate_request",
]
