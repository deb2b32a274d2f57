"""What every tool call receives: `ToolUseContext` and the pieces it is made of.

It holds: options (tools, model, MCP clients), the app state read
with `get_app_state()` and changed atomically with `set_app_state(f)` (the permission context
lives there), the LRU cache of files read, an abort signal with child signals, the sub-agent's
id and query chain tracking.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from .lifetime import Lifetime
from .redaction import Redactor
from .types import ToolPermissionContext


class AbortSignal:
    """A cancellation flag that both coroutines and worker threads can watch.

    Every call gets its own as `context.abort`: async tools are cancelled when it fires;
    sync tools poll it (`context.cancelled()`, `aborted`, `wait_blocking(timeout)`).

    `child()` makes a signal that fires when this one does, but aborting the child leaves
    the parent alone (the sibling-abort signal of a batch is such a child).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reason: str | None = None
        self._event = threading.Event()
        self._callbacks: list[Callable[[str], None]] = []

    @property
    def aborted(self) -> bool:
        return self._event.is_set()

    @property
    def reason(self) -> str | None:
        return self._reason

    def abort(self, reason: str = "aborted") -> None:
        """Fire the signal once; later calls are ignored."""
        with self._lock:
            if self._event.is_set():
                return
            self._reason = reason
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(reason)

    def add_callback(self, callback: Callable[[str], None]) -> Callable[[], None]:
        """Call `callback(reason)` on abort (at once if already aborted); returns a remover."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return lambda: self._remove(callback)
        callback(self._reason or "aborted")
        return lambda: None

    def _remove(self, callback: Callable[[str], None]) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

    def child(self) -> AbortSignal:
        """A signal aborted with this one, whose own abort does not reach this one."""
        child = AbortSignal()
        remove = self.add_callback(child.abort)
        child.add_callback(lambda _reason: remove())
        return child

    async def wait(self) -> str:
        """Wait until aborted; returns the reason."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[str] = loop.create_future()

        def resolve(reason: str) -> None:
            loop.call_soon_threadsafe(_set_result_once, future, reason)

        remove = self.add_callback(resolve)
        try:
            return await future
        finally:
            remove()

    def wait_blocking(self, timeout: float | None = None) -> bool:
        """For sync tools in worker threads: wait up to `timeout`; True if aborted."""
        return self._event.wait(timeout)


def _set_result_once(future: asyncio.Future[str], value: str) -> None:
    if not future.done():
        future.set_result(value)


@dataclass(frozen=True, slots=True)
class FileState:
    """What a tool knew about a file when it read it."""

    mtime_ns: int
    size: int
    partial: bool = False
    """Read with an offset/limit: enough to edit, recorded as such."""


class FileStateCache:
    """LRU cache of files read, keyed by resolved path, with their modification times.

    Edit and Write use it to refuse to change a file that was not read, or that changed on
    disk since it was read.
    """

    def __init__(self, max_entries: int = 500) -> None:
        self._entries: OrderedDict[str, FileState] = OrderedDict()
        self._max_entries = max_entries
        self._lock = threading.Lock()

    @staticmethod
    def key(path: str | os.PathLike[str]) -> str:
        return str(Path(path).resolve())

    def record(self, path: str | os.PathLike[str], *, partial: bool = False) -> FileState:
        """Remember the file as it is on disk now."""
        key = self.key(path)
        stat = os.stat(key)
        state = FileState(mtime_ns=stat.st_mtime_ns, size=stat.st_size, partial=partial)
        with self._lock:
            self._entries[key] = state
            self._entries.move_to_end(key)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)
        return state

    def get(self, path: str | os.PathLike[str]) -> FileState | None:
        key = self.key(path)
        with self._lock:
            state = self._entries.get(key)
            if state is not None:
                self._entries.move_to_end(key)
            return state

    def forget(self, path: str | os.PathLike[str]) -> None:
        with self._lock:
            self._entries.pop(self.key(path), None)

    def changed_since_read(self, path: str | os.PathLike[str]) -> bool | None:
        """None if never read; otherwise whether the file on disk differs from what was read."""
        state = self.get(path)
        if state is None:
            return None
        try:
            stat = os.stat(self.key(path))
        except FileNotFoundError:
            return True
        return stat.st_mtime_ns != state.mtime_ns or stat.st_size != state.size

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[str]:
        with self._lock:
            return iter(list(self._entries))


@dataclass(frozen=True, slots=True)
class AppState:
    """Session-wide state tools may read and change; replaced whole, never mutated."""

    tool_permission_context: ToolPermissionContext = field(default_factory=ToolPermissionContext)
    todos: tuple[Any, ...] = ()
    working_directory: Path | None = None
    """Where the session works now, when a tool moved it (EnterWorktree); None: the folder
    the session started in. The loop gives each message's calls this as `context.cwd`."""
    shell_cwd: str | None = None
    """The directory a shell tool's next command starts in: the shell tool keeps it between
    calls, and the permission engine resolves the command's paths against it. None: the
    working directory."""
    written_paths: tuple[str, ...] = ()
    """Absolute paths the calls allowed so far may have written: the permission engine
    records them, so a rule never trusts a program the agent just wrote (`permissions.written`)."""
    extras: dict[str, Any] = field(default_factory=dict[str, Any])
    """State owned by individual tools (tasks, the worktree, the task board, ...), keyed by
    owner; the session's own state has the fields above."""
    lifetime: Lifetime = field(default_factory=Lifetime)
    """The conversation's end and interrupt hooks: tools that start work outliving a call
    (scheduled prompts, background agents and commands) register how to stop it there."""


class AppStateStore:
    """Holds the `AppState`; `update(f)` applies `f` atomically, even from worker threads."""

    def __init__(self, state: AppState | None = None) -> None:
        self._state = state or AppState()
        self._lock = threading.Lock()
        self._listeners: list[Callable[[AppState], None]] = []

    def get(self) -> AppState:
        return self._state

    def update(self, f: Callable[[AppState], AppState]) -> AppState:
        with self._lock:
            self._state = f(self._state)
            state = self._state
        for listener in list(self._listeners):
            listener(state)
        return state

    def subscribe(self, listener: Callable[[AppState], None]) -> None:
        self._listeners.append(listener)


@dataclass(frozen=True, slots=True)
class QueryTracking:
    """Which query chain a call belongs to, and how deep in sub-agents it is."""

    chain_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    depth: int = 0

    def child(self) -> QueryTracking:
        return QueryTracking(chain_id=self.chain_id, depth=self.depth + 1)


@dataclass(slots=True)
class SandboxOptions:
    """How the Bash sandbox runs shell commands (see `tools.bash.sandbox`).

    One object per session, shared by every copy of its options (a subagent's included), so
    a change made between runs reaches every later command."""

    enabled: bool | None = None
    """True requires the sandbox, False turns it off; None: ``JUPYTER_TOOLHOST_BASH_SANDBOX``
    decides (on where bubblewrap can start)."""
    network: bool | None = None
    """Whether sandboxed commands share the host's network; None:
    ``JUPYTER_TOOLHOST_BASH_SANDBOX_NETWORK`` decides (off unless set)."""
    allowed_domains: tuple[str, ...] = ()
    """``sandbox.network.allowedDomains``: the hosts sandboxed commands reach through the
    kernel's proxy (`tools.bash.network`); empty: no network (unless `network` shares it)."""
    denied_domains: tuple[str, ...] = ()
    """``sandbox.network.deniedDomains``: hosts the proxy refuses whatever allows them."""
    hidden_paths: tuple[str, ...] = ()
    """More paths to hide from commands (a front end names its kernel's connection file)."""
    environment: Mapping[str, str] | None = None
    """The sandbox's environment variables as read once for the session (`freeze`), so that
    nothing a command changes later reaches the setting; None until read."""


@dataclass(frozen=True, slots=True)
class ToolUseOptions:
    """Configuration of a query: the tool pool, the model and what the session provides to
    tools (its small model, web search, sandbox settings, a way to run a prompt)."""

    tools: Sequence[Any] = ()
    """The tool pool: `core.tool.Tool` values (`Tool` builds on this module, so the field
    can't name it without an import cycle)."""
    main_loop_model: str = ""
    mcp_clients: Sequence[Any] = ()
    extras: dict[str, Any] = field(default_factory=dict[str, Any])
    """Options of individual tools (a tool's own settings, keyed by owner); what the session
    itself provides has the fields below."""
    subagent_runner: Any = None
    """A `core.runner.SubagentRunner` (which builds on this module, so the field can't name
    it without an import cycle): it starts subagents of the agent this context belongs to;
    the session sets it. None: no subagents here."""
    small_model: Callable[[str], Any] | None = None
    """The fast model that answers WebFetch's `prompt`: takes one prompt, returns the answer
    (or an awaitable of it). None: no small model."""
    web_search: Any = None
    """The session's web search backend (a `tools.web_search.SearchBackend`); None: none."""
    sandbox: SandboxOptions = field(default_factory=SandboxOptions)
    run_prompt: Callable[[str], Any] | None = None
    """Runs a prompt in the session, queued behind the running one (scheduled prompts use
    it). None: this host cannot run prompts on its own."""
    question_asker: Any = None
    """Who answers AskUserQuestion (a `tools.ask_user.QuestionAsker`); None: no one."""
    redactor: Redactor = field(default_factory=Redactor.from_environment)
    """What every tool result is redacted with (`core.redaction`): the session gives it the
    model's credentials and the kernel's signing key; by default, the credentials of this
    process's environment and the token shapes."""


@dataclass(frozen=True, slots=True)
class ChecklistItem:
    """One line of a checklist a tool reports (TodoWrite's todos, the Task tools' board)."""

    content: str
    status: Literal["pending", "in_progress", "completed"]
    active_form: str | None = None
    """How the item reads while it is in progress ("Running the tests")."""


@dataclass(frozen=True, slots=True)
class PersonWait:
    """A running call waits for a person: a question it asked them (AskUserQuestion).

    Reported through `context.progress` when the wait begins (`answered_at` None) and when
    it ends. Front ends show the time in between as a wait ("waiting for you"), never as
    the call running, and leave it out of the call's run time, as they do for an approval
    prompt. Times are `time.perf_counter()` values."""

    asked_at: float
    answered_at: float | None = None
    what: str = "your answer"
    """What the person is asked for, for a label ("waited 8.0 s for your answer")."""


@dataclass(frozen=True, slots=True)
class Progress:
    """What a running call reports through `context.progress(...)`; front ends show it live.

    A bare string given to `context.progress` means `Progress(text=...)`.
    """

    text: str = ""
    fraction: float | None = None
    """How much is done, from 0.0 to 1.0, when the tool knows."""
    tail: tuple[str, ...] = ()
    """The last lines of output so far (a running command's)."""
    checklist: tuple[ChecklistItem, ...] | None = None
    """The whole checklist after the call (None: the call reports no checklist)."""
    wait: PersonWait | None = None
    """The call began or ended a wait for a person (see `ToolUseContext.waiting_for_person`)."""


def as_progress(value: str | Progress) -> Progress:
    """`value` as a `Progress` (a bare string is its text)."""
    return value if isinstance(value, Progress) else Progress(text=str(value))


def new_session_id() -> str:
    """A fresh session id (12 hex digits)."""
    return uuid.uuid4().hex[:12]


def toolhost_home(cwd: str | os.PathLike[str] | None = None) -> Path:
    """Where `.toolhost/` state lives: `JUPYTER_TOOLHOST_HOME`, else `<cwd>/.toolhost`."""
    override = os.environ.get("JUPYTER_TOOLHOST_HOME")
    if override:
        return Path(override)
    return Path(cwd if cwd is not None else os.getcwd()) / ".toolhost"


@dataclass(slots=True)
class ToolUseContext:
    """Everything a tool's `call(input, context)` may use besides its input."""

    options: ToolUseOptions = field(default_factory=ToolUseOptions)
    app_state: AppStateStore = field(default_factory=AppStateStore)
    read_file_state: FileStateCache = field(default_factory=FileStateCache)
    abort: AbortSignal = field(default_factory=AbortSignal)
    cwd: Path = field(default_factory=Path.cwd)
    session_id: str = field(default_factory=lambda: new_session_id())
    agent_id: str | None = None
    query_tracking: QueryTracking = field(default_factory=QueryTracking)
    tool_use_id: str | None = None
    """Set for the duration of one call: the id of the tool_use being run."""
    progress: Callable[[str | Progress], None] | None = None
    """Report progress of the call being run (shown live by front ends): a `Progress`, or a
    bare string meaning `Progress(text=...)`. Callable from worker threads."""
    on_child_event: Callable[[Any], None] | None = None
    """An event sink for the work a call starts on its own (a subagent's loop): pass it as
    that loop's `on_event`, and the orchestrator hands its tool-call events to the parent's
    sink as `ChildEvent`s of this call. Set for the duration of one call, like `progress`."""
    project_root: Path | None = None
    """The session's starting folder, fixed for the session (see `rule_root`)."""
    state_home: Path | None = None
    """Where `.toolhost` state lives, fixed at session start (see `session_dir`)."""
    home: str | None = None
    """The home directory ``~`` stands for in permission rules: the permission engine
    writes its own here when it decides a call (None: the user's)."""

    @property
    def rule_root(self) -> Path:
        """Where relative permission rules and the project's settings folders are anchored:
        the session's starting folder, wherever the working directory moves (EnterWorktree,
        ``cd``); the working directory itself for a context made without a session."""
        return self.project_root if self.project_root is not None else self.cwd

    def cancelled(self) -> bool:
        """Whether this call was told to stop (an interrupt, a failed sibling, a time budget).

        A sync tool function runs in a worker thread that cannot be killed: when it works for
        a while, it should check this between steps (or wait with
        `context.abort.wait_blocking(seconds)`) and return early. One that has not returned
        half a second after the flag was raised is reported to the model as possibly still
        running, and keeps its pool thread until it returns.
        """
        return self.abort.aborted

    @contextlib.contextmanager
    def waiting_for_person(self, what: str = "your answer") -> Generator[None]:
        """Mark the time the block runs as this call waiting for a person (a question it
        asked), so front ends show it as a wait and keep it out of the run time. Every wait
        for a person inside a call goes through here; approval prompts are reported by
        the session's approver instead."""
        report = self.progress
        asked = time.perf_counter()
        if report is not None:
            report(Progress(wait=PersonWait(asked, None, what)))
        try:
            yield
        finally:
            if report is not None:
                report(Progress(wait=PersonWait(asked, time.perf_counter(), what)))

    def get_app_state(self) -> AppState:
        return self.app_state.get()

    def set_app_state(self, f: Callable[[AppState], AppState]) -> AppState:
        return self.app_state.update(f)

    @property
    def permission_context(self) -> ToolPermissionContext:
        return self.app_state.get().tool_permission_context

    def resolve_path(self, path: str | os.PathLike[str]) -> Path:
        """A tool input path: absolute, or relative to the session's working directory."""
        expanded = Path(os.path.expanduser(os.fspath(path)))
        return expanded if expanded.is_absolute() else self.cwd / expanded

    def session_dir(self) -> Path:
        """`.toolhost/sessions/<session>/` under the project root (or the override), as it
        was when the session started."""
        home = self.state_home if self.state_home is not None else toolhost_home(self.rule_root)
        return home / "sessions" / self.session_id

    def for_call(self, tool_use_id: str, abort: AbortSignal | None = None) -> ToolUseContext:
        """A copy for one call, sharing state, with its own id (and abort signal if given)."""
        return replace(self, tool_use_id=tool_use_id, abort=abort or self.abort)
