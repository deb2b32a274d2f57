"""`Session`: the public Python API of the agent (no Jupyter in it).

A session holds the conversation (API-format messages), the tool pool, the permission
state, the model settings and the usage totals; `await session.run(prompt)` drives the
loop. Its files live in `.toolhost/sessions/<session>/` under the working directory:
`transcript.jsonl` (appended as the conversation grows; `Session.resume` reads it back)
and `tool-results/` (results too big to send whole).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.context import ToolUseContext
from ..core.conversation import Message
from ..core.errors import UsageError
from ..core.lifetime import Stopped
from ..core.tool import Tool, start_session
from ..core.types import PermissionMode, RuleBehavior
from ..model.base import Model, Usage
from ..orchestration.checkpoints import CheckpointStore
from .compaction import CompactBoundary
from .events import EventSink, LoopEvent, Notice, emit
from .loop_state import LoopSettings, RunResult
from .result_tokens import ResultLedger
from .sent import SentRequest
from .session_build import assemble, check_call, default_tools, transcript_path
from .session_config import SessionConfig, takes_options_of
from .transcript import load_transcript

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..mcp import McpManager
    from ..permissions.check import CheckReport
    from ..permissions.settings.settings_file import ClaudeImport

__all__ = ["Session", "SessionConfig", "default_tools"]


class Session:
    """A conversation with a model and a tool pool. `await session.run(prompt)` returns a
    `RunResult`: the final text (a `str`) with `.stop_reason`, `.usage` and `.cost_usd`.

    `Session(**options)` takes the fields of `SessionConfig` as keywords, each documented
    there (the model, the tools, permissions and folder trust, thinking, the sandbox, the
    loop's limits, ...); every one has a default, so `Session()` is a session on the
    built-in tools and the default model. `Session.from_config(config)` takes a
    `SessionConfig` made beforehand (one config can make several sessions); `config` is
    the one a session was made from. Its limits can be changed between runs in
    `settings`.

    Permissions are decided by the `PermissionEngine` with the settings files' rules, mode
    and hooks (their problems are in `settings_problems`, never raised), unless
    `can_use_tool` is given; what is left as "ask" goes to `approver`. The working folder's
    own settings apply whole only once it is trusted (`folder_trust` says whether, why and
    what is held back). Every tool result is redacted before the model, the cell or a saved
    file sees it (`SessionConfig.secrets`).
    """

    @takes_options_of(SessionConfig)
    def __init__(self, config: SessionConfig) -> None:
        self._start(config)

    @classmethod
    def from_config(cls, config: SessionConfig) -> Session:
        """A session made from `config` (`Session(**options)` makes the config itself)."""
        session = cls.__new__(cls)
        session._start(config)
        return session

    def _start(self, config: SessionConfig) -> None:
        self.config = config
        """The options this session was made from, as given."""
        # Scheduled prompts (CronCreate) queue behind the running one, through `run`, or
        # through the host's `run_scheduled(session, prompt)` when it shows them itself.
        run_scheduled = config.run_scheduled
        scheduled = self.run if run_scheduled is None else partial(run_scheduled, self)
        parts = assemble(config, run_prompt=scheduled)
        self._loop = parts.loop
        self._engine = parts.engine
        self._settings_watch = parts.settings_watch
        self.settings_problems: list[str] = parts.problems
        """What was wrong in the settings files (each with its file and line)."""
        self.claude_imports: list[ClaudeImport] = parts.claude_imports
        """What was read from Claude Code's settings files, file by file (only when
        `importClaudeCodeSettings` is on, or after `import_claude_settings()`)."""
        self.folder_trust = parts.folder_trust
        self.policy = parts.policy
        """The managed settings in force (`permissions.settings.managed`): what a hub's or a
        machine's administrator forbids, above every settings file and cell."""
        """Whether the working folder is trusted, why, and what its settings would do
        (`permissions.settings.trust.FolderTrust`); None with `load_settings=False`."""
        self.mcp = parts.mcp
        """The session's MCP servers (from `mcpServers` in the settings files); they connect
        on the first run, and their tools are offered from then on (deferred by default)."""
        self.last_result: RunResult | None = None
        self._task: asyncio.Task[Any] | None = None
        self._run_lock: asyncio.Lock | None = None
        self._running_sink: EventSink[LoopEvent] | None = None
        self._waiting: list[asyncio.Task[Any]] = []
        """Tasks of queued prompts, first come first served."""
        self._told: set[str] = set()
        """MCP renames the person has been told about."""
        self.last_stopped: Stopped | None = None
        """What the last `interrupt()` stopped, and what goes on."""

    @classmethod
    def resume(cls, session_id: str, **options: Any) -> Session:
        """A session continuing the transcript of `session_id` (same `cwd` as before)."""
        session = cls(session_id=session_id, **options)
        path = session.transcript_path
        if not path.exists():
            raise FileNotFoundError(f"no transcript for session {session_id!r} at {path}")
        session._loop.restore(load_transcript(path))
        if session.checkpoints is not None:
            session.checkpoints.load()  # its files can still be undone (set aside at start)
        return session

    # ── running ─────────────────────────────────────────────────────────────────────────

    async def run(
        self,
        prompt: str,
        *,
        on_event: EventSink[LoopEvent] | None = None,
        attachments: Sequence[str] = (),
    ) -> RunResult:
        """Send `prompt` and run tools until the model stops; returns the final text.

        `attachments` are text blocks sent with the prompt, each a block of its own (the
        cell's kernel variables, `jupyter.kernel.attached`).

        An empty prompt continues the conversation as it stands (e.g. after an interrupt).

        A prompt sent while another runs (a scheduled CronCreate prompt, or a second
        `run` from concurrent code) is queued: it waits until the running prompt ends, then
        runs as a turn of its own, first come first served, and returns its own answer. It
        never interrupts the running prompt (call `interrupt()` for that) and is not slipped
        into it at a turn boundary, so each `run` answers exactly its prompt. Both are told:
        a `Notice("queued", ...)` goes to the running prompt's sinks and to the new one's
        when it is queued, and another to the new one's when it starts.
        """
        if self._run_lock is None:
            self._run_lock = asyncio.Lock()
        if self.mcp is not None:
            await self.mcp.start()  # connects what is not connected yet; never raises
        queued = self._run_lock.locked() or bool(self._waiting)
        if queued:
            ahead = len(self._waiting)
            more = f" and {ahead} more" if ahead else ""
            text = f"Queued behind the running prompt{more}: {_quote(prompt)} starts when it ends."
            self._tell(Notice("queued", text), self._running_sink, on_event)
            waiter = asyncio.current_task()
            assert waiter is not None  # a coroutine awaited by asyncio runs in a task
            self._waiting.append(waiter)
            try:
                await self._run_lock.acquire()
            finally:
                self._waiting.remove(waiter)
        else:
            await self._run_lock.acquire()
        try:
            self._task = asyncio.current_task()
            self._running_sink = on_event
            if queued:
                started = f"Started the queued prompt {_quote(prompt)}."
                self._tell(Notice("queued", started), on_event)
            for text in self._settings_watch.changes() if self._settings_watch else ():
                self._tell(Notice("settings", text), on_event)
            for text in self.mcp.renamed() if self.mcp is not None else ():
                if text not in self._told:  # each rename is told once, in the cell it shows in
                    self._told.add(text)
                    self._tell(Notice("mcp", f"MCP: {text}"), on_event)
            notes: tuple[str, ...] = tuple(attachments)
            checkpoints = self.checkpoints
            if checkpoints is not None and prompt.strip():
                checkpoints.begin(prompt)  # each prompt (a cell) is a checkpoint of its own
                note = checkpoints.take_model_note()
                notes += (note,) if note else ()
            result = await self._loop.run(prompt, on_event=on_event, notes=notes)
        finally:
            self._task = None
            self._running_sink = None
            self._run_lock.release()
        self.last_result = result
        return result

    def _tell(self, notice: Notice, *extra: EventSink[LoopEvent] | None) -> None:
        """Hand `notice` to the session's sinks and to `extra` ones (each sink once)."""
        sinks: list[EventSink[LoopEvent]] = []
        for sink in (*self._loop.sinks, *extra):
            if sink is not None and all(sink is not seen for seen in sinks):
                sinks.append(sink)
        emit(sinks, notice)

    @property
    def running(self) -> bool:
        """Whether a prompt is running now."""
        return self._task is not None

    @property
    def queued_prompts(self) -> int:
        """How many prompts wait for the running one to end."""
        return len(self._waiting)

    async def close(self) -> None:
        """End the conversation (`end`), then disconnect its MCP servers. Awaited right
        after a prompt, in the task that ran it, no queued prompt gets to start."""
        self.end("the session was closed")
        await asyncio.sleep(0)  # the cancelled work starts unwinding
        if self.mcp is not None:
            await self.mcp.close()

    def end(self, reason: str = "the conversation ended") -> Stopped:
        """End what outlives a prompt, at once: queued prompts (their `run` raises
        `CancelledError`), scheduled prompts (a firing that runs is cancelled too),
        background subagents and background commands (their process groups are killed).
        Nothing of this conversation starts afterwards. Returns what was stopped."""
        for waiter in list(self._waiting):
            waiter.cancel()
        return self.context.get_app_state().lifetime.end(reason)

    def interrupt(self) -> bool:
        """Cancel the running prompt (as a kernel interrupt would), and stop the background
        work (`stop_background`); False if no prompt runs."""
        self.last_stopped = self.stop_background("interrupted")
        if self._task is None or self._task.done():
            return False
        self._task.cancel()
        return True

    def going_on(self) -> tuple[str, ...]:
        """What of this conversation runs on its own between prompts and goes on after a
        stop (its scheduled prompts), one line each."""
        return self.context.get_app_state().lifetime.going_on()

    def stop_background(self, reason: str = "interrupted") -> Stopped:
        """What the stop button does to work that outlives a prompt: background subagents
        and background commands are stopped, a scheduled prompt that runs or waits is
        cancelled; schedules go on (`Stopped.going_on` lists them). The conversation goes
        on."""
        return self.context.get_app_state().lifetime.interrupt(reason)

    async def compact(self) -> CompactBoundary | None:
        """Summarise the conversation now; returns the boundary (None if too short)."""
        return await self._loop.compact(trigger="manual")

    def set_tools(self, tools: Sequence[Tool[Any]]) -> None:
        """Offer another tool pool from the next request on (names must stay unique)."""
        pool = list(tools)
        names = [t.name for t in pool]
        if len(set(names)) != len(names):
            raise ValueError("tool names must be unique")
        current = self._loop.requests.tools
        context = self._loop.context
        start_session([t for t in pool if all(t is not old for old in current)], context)
        current[:] = pool
        context.options = replace(context.options, tools=tuple(pool))

    def attach_mcp(self, manager: McpManager | None = None) -> McpManager:
        """Use `manager` (or a new, empty one) for MCP servers; its tools are offered from
        the next request on. Servers added to it later (`%agent mcp add`) join too."""
        if manager is None:
            from ..mcp import McpManager

            manager = McpManager()
        self.mcp = manager
        self._loop.requests.extra_tools = manager.tools
        return manager

    def import_claude_settings(self) -> list[ClaudeImport]:
        """Read Claude Code's settings files (``~/.claude/settings.json``,
        ``.claude/settings.json``, ``.claude/settings.local.json``) into this session now:
        their allow/ask/deny rules, additionalDirectories and hooks, not their defaultMode
        (see `permissions.claude_settings`). Files imported before are skipped; problems go
        to `settings_problems`. Returns what this call imported, file by file."""
        from ..permissions.settings.claude_settings import import_into

        found, problems = import_into(
            self.context,
            hooks=self._loop.hooks,
            sources=self._engine.sources if self._engine is not None else None,
            skip={done.source for done in self.claude_imports},
            trusted=self._trusts_claude_files(),
        )
        self.claude_imports += found
        self.settings_problems += [p for p in problems if p not in self.settings_problems]
        return found

    def _trusts_claude_files(self) -> bool:
        """Whether the folder's Claude Code files may act when imported by hand: an answer
        given for this session holds; otherwise the folder is judged again with those files
        counted (they may be all the folder has, so it had nothing to trust before)."""
        from ..permissions.settings.trust import folder_trust

        found = self.folder_trust
        if found is None:
            return True
        if found.how in ("flag", "clicked", "declined"):
            return found.trusted
        return folder_trust(self.context.cwd, import_claude=True).trusted

    def end_cell(self) -> None:
        """The cell (or the run standing for one) has ended: what the person allowed "for
        this cell" no longer holds."""
        from ..permissions.engine import end_cell_rules

        end_cell_rules(self.context)

    def set_mode(self, mode: PermissionMode) -> None:
        """Change the permission mode (it lives in the app state's permission context);
        raises `UsageError` naming the policy for a mode the managed settings forbid."""
        refused = self.policy.refuse_mode(mode)
        if refused is not None:
            raise UsageError(refused)
        self.context.set_app_state(
            lambda state: replace(
                state,
                tool_permission_context=replace(state.tool_permission_context, mode=mode),
            )
        )

    @property
    def permission_mode(self) -> PermissionMode:
        return self.context.get_app_state().tool_permission_context.mode

    def add_rule(self, rule: str, behavior: RuleBehavior = "allow") -> None:
        """Add a permission rule for this session, in Claude Code's syntax (``"Bash(npm
        test:*)"``, ``"Read(./docs/**)"``, ``"WebFetch"``), from the next call on. It goes to
        the ``session`` source, beside the settings files' rules, and is not saved (see
        `permissions.settings.save_rule` for that). Raises `RuleError` (a `ValueError`)
        for a rule that does not parse, and `ValueError` for an unknown `behavior`."""
        from ..permissions.engine import add_session_rules
        from ..permissions.rules.rules import parse_rule

        if behavior not in ("allow", "ask", "deny"):
            raise ValueError(f"behavior must be allow, ask or deny, not {behavior!r}")
        parse_rule(rule)
        add_session_rules(self.context, (rule,), behavior)

    @property
    def rules(self) -> Mapping[str, Mapping[RuleBehavior, tuple[str, ...]]]:
        """The rules in force, by source (``"userSettings"``, ``"projectSettings"``,
        ``"localSettings"``, ``"session"``, ...) and behaviour; change them with `add_rule`."""
        return self.context.get_app_state().tool_permission_context.rules

    def check(self, tool_name: str, input: Mapping[str, Any] | str) -> CheckReport:
        """What the permission engine decides for this call in every mode, with the rule and
        settings file behind each decision, without running the call or asking anyone (see
        `permissions.check`). A string `input` goes to the tool's primary field."""
        return check_call(self._loop, tool_name, input)

    # ── state ───────────────────────────────────────────────────────────────────────────

    @property
    def messages(self) -> list[Message]:
        """The conversation in the Messages API's format (valid to send as it is). A `list`
        that notes its edits (`history.MessageList`): replace a message to change it, never
        change a message dict in place."""
        return self._loop.messages

    @property
    def compact_boundaries(self) -> list[CompactBoundary]:
        return self._loop.compact_boundaries

    @property
    def usage(self) -> Usage:
        """Tokens used by every request of this session."""
        return self._loop.usage

    @property
    def cost_usd(self) -> float | None:
        """Estimated cost of the session in USD (None for a model not in the price table)."""
        return self._loop.cost_usd

    @property
    def result_tokens(self) -> ResultLedger:
        """What each tool result added to the conversation and its share of the cost since
        (`.calls` by tool_use id, `.ranked()` costliest first; see `agent.result_tokens`)."""
        return self._loop.ledger

    @property
    def last_cache_expiry(self) -> str | None:
        """What the latest pause longer than the prompt cache's 5 minutes cost: how many
        tokens its first request wrote again (None when there was none)."""
        return self._loop.last_cache_expiry

    def request(self, n: int | None = None) -> dict[str, Any]:
        """The exact body sent to the model at turn `n`, as a new dict (see `sent_request`)."""
        return self.sent_request(n).body

    def sent_request(self, n: int | None = None) -> SentRequest:
        """What turn `n` sent: `.body` (the request body as sent, `"stream": true`
        included; a deep copy on each access) and `.usage` (the response's tokens, cache
        reads and writes included; None if it did not complete).

        Turns are the conversation's model requests, counted from 1; a negative `n` counts
        from the end, None is the last. The last 200 are kept; compaction's summary
        requests are not turns. Raises `IndexError`, saying which turns there are, when
        there is no such turn."""
        return self._loop.sent.get(n)

    @property
    def model_id(self) -> str:
        return self._loop.model_id

    @property
    def model(self) -> Model:
        """The model the session talks to (an `AnthropicModel`, a `CassetteModel`, ...)."""
        return self._loop.model

    @property
    def tools(self) -> list[Tool[Any]]:
        """The session's tool pool (`set_tools` changes it)."""
        return self._loop.requests.tools

    @property
    def context(self) -> ToolUseContext:
        return self._loop.context

    @property
    def session_id(self) -> str:
        return self._loop.context.session_id

    @property
    def session_dir(self) -> Path:
        return self._loop.context.session_dir()

    @property
    def transcript_path(self) -> Path:
        return transcript_path(self._loop.context)

    @property
    def checkpoints(self) -> CheckpointStore | None:
        """The files this session's prompts changed, as they were before (see
        `orchestration.checkpoints`); None when the pipeline keeps none."""
        return self._loop.pipeline.checkpoints

    @property
    def settings(self) -> LoopSettings:
        """The loop's limits; change them between runs."""
        return self._loop.settings


def _quote(prompt: str) -> str:
    """A prompt's first line, short enough for a one-line notice."""
    line = prompt.strip().splitlines()[0] if prompt.strip() else "(continue)"
    return repr(line if len(line) <= 60 else line[:59] + "…")
