"""`SessionConfig`: everything a `Session` is made from, each option documented once, here.

`Session(**options)` takes exactly these fields as keywords (type checkers and `help()` see
them through `takes_options_of`), makes a `SessionConfig` and hands it whole to `assemble`;
`Session.from_config(config)` takes one already made. The config is what was asked for:
the limits a running session goes by are its `settings` (`loop_state.LoopSettings`), made
from it once and changed between runs.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from ..core.context import SandboxOptions
from ..core.tool import Tool
from ..core.types import PermissionMode, RuleBehavior
from ..disclosure.deferral import DISCLOSURE_OPTIONS, DisclosureOption
from ..hooks.hooks import Hooks
from ..model.base import Model
from ..permissions.api import Approver, CanUseTool
from .events import EventSink, LoopEvent
from .loop_state import LoopSettings

if TYPE_CHECKING:
    from ..mcp import McpManager


@dataclass(kw_only=True)
class SessionConfig:
    """The options of a `Session`; every one has a default."""

    # ── the model and the tools ─────────────────────────────────────────────────────

    tools: Sequence[Tool[Any]] | None = None
    """The tool pool (names unique); None: the built-in pool (`tools.builtin_tools()`)."""
    model: str | Model | None = None
    """A model id, or a `Model` (an `AnthropicModel`, a `CassetteModel`, ...). The id comes
    from this option (a string), then `JUPYTER_TOOLHOST_MODEL`, then `DEFAULT_MODEL`."""
    model_id: str | None = None
    """The id to send when `model` is a `Model`, resolved the same way."""
    small_model: str | None = None
    """The id of the fast model that answers WebFetch's `prompt` on the same client (else
    `JUPYTER_TOOLHOST_SMALL_MODEL`, else `claude-haiku-4-5`; ``""`` or ``"none"``: off)."""
    mcp: McpManager | None = None
    """The session's MCP servers; None: those of `mcpServers` in the settings files. They
    connect on the first run, and their tools are offered from then on (deferred by
    default)."""
    disclosure: DisclosureOption = "auto"
    """How deferred tools (MCP tools, by default) reach the model: ``auto`` uses the
    Messages API's own `defer_loading` when the model supports it (`AnthropicModel`, a
    cassette recorded that way), so a discovery keeps the prompt cache, and ``discovered``
    otherwise; ``defer_loading``, ``discovered``, ``server_bm25`` and ``server_regex`` (the
    API's server-side tool search instead of ToolSearch) force one. Change it between runs
    through `settings.disclosure`."""
    thinking: Mapping[str, Any] | None = None
    """The Messages API's own `thinking` object, sent as it is with every request (e.g.
    ``{"type": "enabled", "budget_tokens": 10000}``; add ``"display": "omitted"`` for
    signatures without the text); None: off. Each request then asks for `max_tokens` plus
    the budget, so the answer keeps its `max_tokens`. Thinking tokens are billed as output
    tokens (in `usage.output_tokens`, counted apart in `usage.thinking_tokens`). Subagents
    think as their session does. Checked when the session is made: a malformed one raises
    `ValueError` in the API's words. Change it between runs through `settings.thinking`."""
    context_management: Mapping[str, Any] | None = None
    """The API's (beta) context editing object; checked and changed as `thinking` is. For
    example: ``{"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}``"""

    # ── where it works and what it keeps ────────────────────────────────────────────

    cwd: str | os.PathLike[str] | None = None
    """The working folder (its files live in `.toolhost/sessions/<session>/` under it);
    None: the process's."""
    session_id: str | None = None
    """The session's id; None: the cassette's (a session on one), else a new one."""
    write_transcript: bool = True
    """Append the conversation to `transcript.jsonl` (what `Session.resume` reads back)."""
    secrets: Mapping[str, str] | None = None
    """Label -> value of more secrets to redact (the kernel's signing key, for instance).
    Every tool result is redacted before the model, the cell or a saved file sees it
    (`core.redaction`): the model's own key or token, the credentials in the environment,
    these, and well-known token shapes become ``[redacted: LABEL]``."""
    sandbox: SandboxOptions | None = None
    """How the Bash sandbox runs commands (required or off, the network, more paths to
    hide); None: the environment decides."""

    # ── permissions ─────────────────────────────────────────────────────────────────

    permission_mode: PermissionMode | None = None
    """The starting mode, after `JUPYTER_TOOLHOST_PERMISSION_MODE` (so CI can force
    `dontAsk`) and before the settings' `defaultMode`; else `default`. In `auto` mode the
    session's own model judges calls that would ask (`ModelClassifier`); when it is unsure,
    offline or slow, the call is asked as in `default` mode."""
    approver: Approver | None = None
    """Who answers what is left as "ask"; None: it is denied with advice."""
    can_use_tool: CanUseTool | None = None
    """The decision function; None: the `PermissionEngine`, with the rules, default mode and
    hooks of the settings files (`~/.toolhost/settings.json`, `.toolhost/settings.json`,
    `.toolhost/settings.local.json` under `cwd`; problems in them are in
    `Session.settings_problems`, never raised). Claude Code's settings files
    (`.claude/settings.json`, ...) add their rules and hooks only with
    `"importClaudeCodeSettings": true` in those files, or after
    `Session.import_claude_settings()`: off by default, since their allow rules widen what
    runs."""
    rules: Iterable[tuple[str, RuleBehavior]] = ()
    """``(rule, behavior)`` pairs the session starts with, as its own (the ``session``
    source); `Session.add_rule()` adds more later."""
    load_settings: bool = True
    """Read the settings files; False: rules come only from code."""
    trust_folder: bool | None = None
    """Whether the working folder is trusted for this session. The files of the folder
    itself (``.toolhost/settings.json``, ``settings.local.json``, Claude Code's ``.claude/``
    files when imported) apply whole only once it is: listed in the user's
    ``trustedFolders``, trusted before with the same actions
    (``~/.toolhost/trusted-folders.json``), or True here. Until then only their deny and ask
    rules and a narrower mode apply; their hooks, MCP servers, allow rules, wider mode and
    directories are held back, and `Session.folder_trust` says what (see
    `permissions.settings.trust`). False holds them back even in a trusted folder."""
    hooks: Hooks | None = None
    """Hooks run around tool calls and prompts, besides the settings files'."""

    # ── the loop's limits (`settings` of the running session) ──────────────────────

    max_turns: int = 100
    """Model responses per run."""
    max_tokens: int = 8192
    """`max_tokens` of each request."""
    time_budget_s: float | None = None
    """Wall-clock seconds per run; when spent, the run is interrupted and returns."""
    compact_threshold_tokens: int | None = 150_000
    """Compact before a request when the previous one used more context than this."""
    stream_retries: int = 3
    """How often a response stream that broke before any tool call is asked for again."""
    retry_backoff_s: float = 1.0
    """The first retry waits this long; each further one twice as long (at most 30 s)."""

    # ── what the session reports and runs ──────────────────────────────────────────

    on_event: EventSink[LoopEvent] | None = None
    """Gets every run's events (`events`)."""
    run_scheduled: Callable[[Any, str], Awaitable[Any]] | None = None
    """How scheduled prompts (CronCreate) run: `run_scheduled(session, prompt)`, with the
    `Session` (not named in the type: the session module builds on this one); None: through
    `Session.run`. A notebook shows them in an area of their own."""

    def loop_settings(self) -> LoopSettings:
        """The loop's starting limits, `disclosure`, `thinking` and `context_management`
        checked (a `ValueError` says what is wrong before any request is sent)."""
        from .session_setup import thinking_options

        if self.disclosure not in DISCLOSURE_OPTIONS:
            raise ValueError(
                f"disclosure must be one of {', '.join(DISCLOSURE_OPTIONS)}, "
                f"not {self.disclosure!r}"
            )
        thinking, context_management = thinking_options(self.thinking, self.context_management)
        return LoopSettings(
            max_turns=self.max_turns,
            max_tokens=self.max_tokens,
            time_budget_s=self.time_budget_s,
            stream_retries=self.stream_retries,
            retry_backoff_s=self.retry_backoff_s,
            compact_threshold_tokens=self.compact_threshold_tokens,
            disclosure=self.disclosure,
            thinking=thinking,
            context_management=context_management,
        )


P = ParamSpec("P")
S = TypeVar("S")


def takes_options_of(
    config: Callable[P, Any],
) -> Callable[[Callable[[S, Any], None]], Callable[Concatenate[S, P], None]]:
    """Make `__init__(self, config)` take the keyword options of `config`'s constructor
    instead: `Session(max_turns=5)` builds the config and passes it whole. Type checkers
    see each option with its type, and `help()` / `inspect.signature` list them."""

    def decorate(init: Callable[[S, Any], None]) -> Callable[Concatenate[S, P], None]:
        @functools.wraps(init)
        def __init__(self: S, *args: P.args, **kwargs: P.kwargs) -> None:
            init(self, config(*args, **kwargs))

        options = list(inspect.signature(config).parameters.values())
        self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)
        __init__.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [self_param, *options], return_annotation=None
        )
        return __init__

    return decorate
