"""Plain data shared by every layer: permission results, decision reasons, tool calls and results.

Nothing here does I/O or imports a front end; the pipeline, the permission system and the
renderers all speak in these types.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from .errors import ToolhostError

PermissionMode: TypeAlias = Literal[
    "default", "acceptEdits", "bypassPermissions", "dontAsk", "plan", "auto"
]
PERMISSION_MODES: tuple[PermissionMode, ...] = (
    "default",
    "acceptEdits",
    "bypassPermissions",
    "dontAsk",
    "plan",
    "auto",
)
CassetteMode: TypeAlias = Literal["auto", "record", "replay"]
CASSETTE_MODES: tuple[CassetteMode, ...] = ("auto", "record", "replay")
"""What a cassette does: replay when it exists, else record (auto); record; replay."""
DISCLOSURE_OPTIONS: tuple[str, ...] = (
    "auto",
    "defer_loading",
    "discovered",
    "server_bm25",
    "server_regex",
)
"""What a user may choose (`Session(disclosure=...)`, `%%agent --disclosure`, the CLI):
``auto`` picks per model; ``server_bm25`` / ``server_regex`` are ``defer_loading`` with the
API's server-side tool search in place of ToolSearch."""

RuleBehavior: TypeAlias = Literal["allow", "ask", "deny"]
InterruptBehavior: TypeAlias = Literal["cancel", "block"]

ReasonKind: TypeAlias = Literal[
    "rule", "mode", "hook", "tool", "approver", "classifier", "default", "safety", "other"
]


@dataclass(frozen=True, slots=True)
class DecisionReason:
    """Why a permission decision was made: shown to people and asserted by tests."""

    kind: ReasonKind
    detail: str
    source: str | None = None
    """Where the deciding thing came from: a settings file path, a hook command, a mode."""

    def __str__(self) -> str:
        return f"{self.detail} ({self.source})" if self.source else self.detail


@dataclass(frozen=True, slots=True)
class PermissionAllow:
    """Run the call, optionally with rewritten input."""

    updated_input: Mapping[str, Any] | None = None
    reason: DecisionReason | None = None
    behavior: Literal["allow"] = "allow"
    context: tuple[str, ...] = ()
    """What the model is told beside the call's result about this decision (a person
    edited the input, say)."""


@dataclass(frozen=True, slots=True)
class PermissionDeny:
    """Do not run the call; `message` goes back to the model."""

    message: str
    reason: DecisionReason | None = None
    behavior: Literal["deny"] = "deny"


@dataclass(frozen=True, slots=True)
class PermissionAsk:
    """A person (or an approver standing in for one) must decide."""

    message: str
    reason: DecisionReason | None = None
    suggested_rules: tuple[str, ...] = ()
    """Rules that "Always allow" would add, e.g. one per sub-command of a compound command."""
    updated_input: Mapping[str, Any] | None = None
    plan: str | None = None
    """The plan this ask presents for approval (ExitPlanMode's), in Markdown; None for an
    ordinary call."""
    behavior: Literal["ask"] = "ask"


PermissionResult: TypeAlias = PermissionAllow | PermissionDeny | PermissionAsk


@dataclass(frozen=True, slots=True)
class ToolPermissionContext:
    """The permission state of a session; it lives in the app state, not on the context.

    `rules` maps a source name (``"userSettings"``, ``"projectSettings"``, ``"localSettings"``,
    ``"session"``, ...) to the rule strings of each behaviour from that source.
    """

    mode: PermissionMode = "default"
    rules: Mapping[str, Mapping[RuleBehavior, tuple[str, ...]]] = field(
        default_factory=dict[str, Mapping[RuleBehavior, tuple[str, ...]]]
    )
    additional_working_directories: tuple[str, ...] = ()
    pre_plan_mode: PermissionMode | None = None
    """The mode to restore when plan mode ends."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool_use block from the model."""

    id: str
    name: str
    input: Any
    """The raw input as the model sent it (normally a dict; anything else fails validation)."""


ContentBlock: TypeAlias = dict[str, Any]
ToolResultContent: TypeAlias = str | list[ContentBlock]


@dataclass(slots=True)
class ToolResult:
    """The one tool_result a tool_use gets, plus what the front end needs to show it."""

    tool_use_id: str
    content: ToolResultContent
    is_error: bool = False
    tool_name: str = ""
    persisted_path: str | None = None
    """Where the full output was saved when it went over the budget."""
    original_size: int | None = None
    decision: PermissionResult | None = None
    additional_context: tuple[str, ...] = ()
    """Text hooks asked to add for the model (sent beside the result)."""
    output: Any = None
    """The tool's raw output object before it was turned into content (None on error)."""
    context_modifier: Any = None
    """A state change the tool asked for (`ToolOutput.context_modifier`), applied by the
    orchestrator after the call's batch, in call order."""
    displays: tuple[dict[str, Any], ...] = ()
    """Rich outputs for people (`ToolOutput.displays`: Jupyter mimebundles); never part of
    the tool_result block, so the model does not see them."""

    def to_block(self) -> ContentBlock:
        """The Messages API `tool_result` block."""
        block: ContentBlock = {
            "type": "tool_result",
            "tool_use_id": self.tool_use_id,
            "content": self.content,
        }
        if self.is_error:
            block["is_error"] = True
        return block


class ToolError(ToolhostError):
    """Raise from a tool to report a failure the model can act on (no traceback is shown)."""


class ToolInputError(ToolError):
    """The input was well-formed but makes no sense (a file that does not exist, ...)."""
