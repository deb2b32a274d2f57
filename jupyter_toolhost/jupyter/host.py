"""`AgentHost`: one kernel's agent state, and how a `%%agent` cell runs and waits.

The cell awaits the agent's task in 0.1 s slices (`asyncio.wait(..., timeout=0.1)`): that
keeps the event loop waking up, so a kernel interrupt (which ipykernel turns into a
`CancelledError` of the cell's coroutine) lands within a fraction of a second. On an
interrupt the agent's task is cancelled: the session cancels what can be cancelled, lets
blocking calls finish, answers every tool_use, and the cell shows what was done and its
footer (what was spent, "stop: interrupted"), then ends with `AgentInterrupted` (a
`KeyboardInterrupt`), whose one line says what was kept. The next cell continues the same
conversation.

The session, the model client and the tool modules are imported here on first use only.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import signal
import threading
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError as IPythonUsageError
from IPython.display import display

from ..core.errors import ConfigurationError, ToolhostError
from ..core.kernel_host import remote_kernel_hint
from ..core.numbers import format_number
from ..core.tool import registered_tools
from ..core.workdir import ROOT_ENV, resolve_working_folder, same_folder
from .agent import (
    attach_question_asker,
    new_session,
    permission_mode,
    run_session,
    session_tools,
    update_session,
)
from .magic.options import CellOptions, UsageError, parse_cell_line
from .views.call_views import CallViews
from .views.render import notice_display
from .widgets.frontend import FrontEnd
from .widgets.widget_prompt import ipywidgets

if TYPE_CHECKING:
    from ..core.tool import Tool
    from ..core.types import RuleBehavior
    from ..core.workdir import WorkingFolder
    from ..permissions.settings.trust import FolderTrust
    from .config import ToolHost
    from .views.cards import CallCard
    from .views.live import LiveView
    from .widgets.approval import WidgetApprover
    from .widgets.questions import WidgetQuestionAsker

WAIT_SLICE = 0.1
"""Seconds between wake-ups while the cell waits (how fast an interrupt lands)."""
STOP_GRACE = 60.0
"""The longest an interrupted cell waits for the agent to wind down. Only running "block"
calls make it wait (the orchestrator gives them 3 s, then stops them); calls that had not
started are answered at once. A second interrupt stops the block calls too."""
SECOND_STOP_WAIT = 2.0
"""After a second interrupt, how much longer the cell waits for the agent to wind down."""


class AgentHost:
    """Everything `%%agent` remembers in one kernel: the session, options, call history."""

    def __init__(self, shell: Any, config: ToolHost) -> None:
        self.shell = shell
        self.config = config
        self.model: str | None = config.model
        self.mode: str | None = config.permission_mode
        self.cassette: str | None = config.cassette
        self.cassette_mode: str | None = config.cassette_mode
        self.disclosure: str | None = config.disclosure
        self.think: int | None = config.think
        """The thinking budget in tokens (0 or None: off)."""
        self.small_model: str | None = config.small_model
        self.session: Any = None
        self.history: list[CallCard] = []
        self.batch_offset = 0
        self.settings_problems: list[str] = []
        self.scheduled_area: Any = None
        """The output area where scheduled prompts (CronCreate) show their runs."""
        self.pending_rules: list[tuple[str, RuleBehavior]] = []
        """(rule, behavior) added with `%agent allow|ask|deny` before a conversation began."""
        self._approver: WidgetApprover | None = None
        self._asker: WidgetQuestionAsker | None = None
        self._view: LiveView | None = None
        self._kernel_tools: list[Tool[Any]] | None = None
        self.calls = CallViews(self.session_tools)
        """How cards name, colour and show the code of this session's calls."""
        self.debug = False
        self.key_typed: str | None = None
        """The key `%agent key` put into this kernel's environment (`%agent status` says so)."""
        """`%agent debug on`: a failed run shows its full traceback (off: one line)."""
        self.folder_problem: str | None = None
        """Why the configured working folder is not the one in use (it does not exist)."""
        self.workdir: WorkingFolder = self._resolve_folder(None)
        self._closing: set[asyncio.Task[None]] = set()
        self.ended_notice: str | None = None
        """What ending the previous conversation stopped (`--new`), for the next cell."""
        # A kernel restart or shutdown ends the conversation: background commands run in
        # process groups of their own and would otherwise outlive the kernel.
        atexit.register(self.end_session, "the kernel shut down")
        self.folder_answers: dict[Path, tuple[bool, frozenset[str]]] = {}
        """Folder trust answered in this kernel ("Trust this folder": True, "Don't trust":
        False) with the lines shown, so a new conversation in the same folder is not asked
        again unless its settings now do something that was not shown."""

    # ── the working folder (`workdir`) ───────────────────────────────────────────────────

    def _resolve_folder(self, explicit: str | None) -> WorkingFolder:
        """The working folder by `workdir`'s order; the kernel moves there. A configured
        folder that does not exist is reported (`folder_problem`) and the kernel's own used."""

        self.folder_problem = None
        try:
            found = resolve_working_folder(explicit=explicit, configured=self.config.root_dir)
        except ValueError as exc:
            if explicit is not None:
                raise UsageError(str(exc)) from None
            self.folder_problem = str(exc)
            environ = {k: v for k, v in os.environ.items() if k != ROOT_ENV}
            found = resolve_working_folder(environ=environ)
        if found.path != Path(os.getcwd()):
            os.chdir(found.path)
        return found

    def set_working_folder(self, path: str) -> WorkingFolder:
        """`%agent cwd PATH`: the agent and the kernel work there from now on; a running
        conversation starts anew, so that folder's settings files apply to it."""
        self.workdir = self._resolve_folder(path)
        if self.session is not None:
            self.reset()
        return self.workdir

    def folder_notice(self) -> str | None:
        """The line a new conversation's first cell shows when the working folder is not
        the notebook's own (see `workdir`), or when the configured one was not found."""
        from ..permissions.settings.settings import settings_in_force

        if self.folder_problem is not None:
            return f"{self.folder_problem}; working in {self.cwd} instead."
        if not same_folder(self.workdir.path, self.cwd):
            return None  # moved with %cd since: the user chose it
        return self.workdir.notice(settings_in_force(self.cwd))

    # ── pieces made on first use ───────────────────────────────────────────────────────

    def approver(self) -> WidgetApprover:
        """The widget approver of this kernel (timeout from config, else the environment;
        without one it waits for a click only where a front end shows the prompt)."""
        if self._approver is None:
            from .widgets.approval import WidgetApprover, approval_timeout_from_env

            timeout = self.config.approval_timeout
            if timeout is None:
                timeout = approval_timeout_from_env()
            self._approver = WidgetApprover(
                timeout=timeout, emit=self._emit_line, front_end=FrontEnd(self.shell)
            )
        return self._approver

    def question_asker(self) -> WidgetQuestionAsker:
        """The widget question asker of this kernel (same timeout and front end as approvals)."""
        if self._asker is None:
            from .widgets.questions import WidgetQuestionAsker

            approver = self.approver()
            self._asker = WidgetQuestionAsker(
                timeout=approver.timeout, emit=self._emit_line, front_end=approver.front_end
            )
        return self._asker

    def _emit_line(self, text: str) -> None:
        if self._view is not None:
            self._view.line(text)
        else:
            print(text, flush=True)

    def kernel_tools(self) -> list[Tool[Any]]:
        if self._kernel_tools is None:
            from .kernel.kernel_tools import kernel_tools

            self._kernel_tools = kernel_tools(self.shell)
        return self._kernel_tools

    def tool_pool(self, only: tuple[str, ...] | None = None) -> list[Tool[Any]]:
        """Built-in tools, kernel tools and `@tool` functions of the notebook (newest wins).
        WebSearch searches with the session's own model (its server-side search tool)."""
        from ..tools import builtin_tools
        from ..tools.web_search import FROM_SESSION

        built = builtin_tools(cwd=self.cwd, web_search=FROM_SESSION)
        pool: dict[str, Tool[Any]] = {t.name: t for t in built}
        if self.config.kernel_tools:
            pool.update({t.name: t for t in self.kernel_tools()})
        pool.update({t.name: t for t in registered_tools()})
        wanted = only if only is not None else self.config.tools
        if wanted:
            missing = [name for name in wanted if name not in pool]
            if missing:
                raise UsageError(
                    f"Unknown tool(s): {', '.join(missing)}. Available: {', '.join(sorted(pool))}"
                )
            return [pool[name] for name in wanted]
        return list(pool.values())

    def session_tools(self) -> list[Tool[Any]] | None:
        if self.session is None:
            return None

        return session_tools(self.session)

    # ── a %%agent cell ─────────────────────────────────────────────────────────────────

    def refuse_mode(self, mode: str | None) -> str | None:
        """Why the hub's or the machine's policy forbids `mode` (None when it may be used)."""
        if not mode:
            return None
        if self.session is not None:
            return self.session.policy.refuse_mode(mode)
        from ..permissions.settings.managed import load_policy

        return load_policy().refuse_mode(mode)

    def _attachments(
        self, session: Any, options: CellOptions, prompt: str
    ) -> tuple[tuple[str, ...], str]:
        """The kernel variables the cell names (``--with``, ``@name``), described now, and
        the prompt as sent (``\\@name`` written as ``@name``); raises `UsageError` for a
        name that cannot be attached, before anything is sent."""
        from .kernel.attached import attach, mentioned, unescaped

        names = [*options.attach, *mentioned(prompt)]
        attached = attach(self.shell, names, redact=session.context.options.redactor.text)
        for line in attached.cut if attached is not None else ():
            _show_notice(f"Attached variables: {line}.", level="info")
        return ((attached.text,) if attached is not None else ()), unescaped(prompt)

    async def run_cell(self, line: str, body: str, *, interactive: bool = True) -> None:
        """Run one `%%agent` cell: the cell stays busy (and clickable) until the agent ends.

        AskUserQuestion gets the widget asker only when someone can click (`interactive`)
        and the mode is not `dontAsk` (the mode for unattended runs, which never ask).
        """

        try:
            options = parse_cell_line(line)
            refused = self.refuse_mode(options.mode)
            if refused is not None:  # before anything else: no question asked, nothing sent
                raise UsageError(refused)
            prompt = body.strip()
            if not prompt:
                raise UsageError("The cell has no prompt: write it below the %%agent line.")
            if self._no_model(options):
                hint = remote_kernel_hint()  # where the key must reach, for a remote kernel
                _show_notice(NO_KEY_MESSAGE + (f"\n{hint}" if hint else ""), level="warning")
                return
            trust = await self._settle_trust(options)
            starting = options.new or self.session is None
            session = self._prepare(options, trust=trust)
            attachments, prompt = self._attachments(session, options, prompt)
        except (UsageError, ConfigurationError) as exc:  # a mistake, or the hub's policy
            raise IPythonUsageError(str(exc)) from None

        from .magic.undo import show_cell_checkpoint
        from .views.live import LiveView

        asking = interactive and permission_mode(session) != "dontAsk"
        attach_question_asker(session, self.question_asker() if asking else None)
        view = LiveView(
            describe=self.calls.describe, language=self.calls.language, code=self.calls.code
        )
        view.batches_before = self.batch_offset  # cards and the timeline count alike
        view.start()
        self._view = view
        notice = self.folder_notice() if starting else None
        if notice is not None:
            view.notice(notice, level="warning")
        if self.ended_notice is not None:
            view.notice(self.ended_notice, level="warning")
            self.ended_notice = None
        task = asyncio.ensure_future(
            run_session(
                session,
                prompt,
                view=view,
                max_turns=options.max_turns or self.config.max_turns,
                attachments=attachments,
            )
        )
        try:
            await wait_in_slices(task)
        except asyncio.CancelledError:
            # Background work first: it must not make one more request while the
            # interrupted prompt winds down.
            stopped = session.stop_background("interrupted")
            await stop_task(task, grace=STOP_GRACE)
            view.finish(footer=False)
            self._remember(view)
            show_cell_checkpoint(self, session, view)
            text = background_notice(stopped)
            if text is not None:
                view.notice(text, level="warning")
            # The response that asked for the calls was cut before its turn ended: it was
            # still a request, and what it spent is in the usage.
            asked = [card.response for card in view.all_cards()]
            view.summary.model_requests = max([view.summary.model_requests, *asked])
            view.summary.stop_reason = "interrupted"
            view.footer()
            # Said once, by the cell's error: it stops Run All here, as a KeyboardInterrupt
            # does in any cell, so no notice repeats it.
            raise AgentInterrupted(_interrupt_summary(view)) from None
        finally:
            self._view = None
            self.mode = permission_mode(session)  # tools (ExitPlanMode) may have changed it
            session.end_cell()  # "Allow for this cell" ends with the cell
        view.finish()
        self._remember(view)
        show_cell_checkpoint(self, session, view)
        self._show_scheduled_area(session)
        error = task.exception()
        if error is not None and _cassette_miss(error):
            # A different click or an interrupt took the conversation off the recording: say
            # so in one line and end the cell; the conversation stays valid for the next one.
            view.notice(f"Replay stopped: {error}\n{REPLAY_MISS_HINT}", level="error")
        elif error is not None:
            # Said once, by the cell's error (after the footer): a notice saying it too
            # printed it twice.
            if self.debug:
                raise error
            raise AgentFailed(f"{type(error).__name__}: {error}") from None

    async def run_scheduled(self, session: Any, prompt: str) -> Any:
        """Run a scheduled prompt in `session` and show it in the scheduled area; the
        transcript records it like any other run. Fired while a cell runs, it is queued
        behind that cell's prompt (the cell shows a "queued" notice; so does the area)."""
        from ..agent.events import Notice

        def notices(event: Any) -> None:
            area = self.scheduled_area
            if isinstance(event, Notice) and area is not None:
                area.append_stdout(f"⏰ [{event.kind}] {event.text}\n")

        answer = await session.run(prompt, on_event=notices)
        area = self.scheduled_area
        if area is not None:
            area.append_stdout(f"⏰ {prompt}\n{answer}\n")
        return answer

    def _show_scheduled_area(self, session: Any) -> None:
        """Once the session has a scheduled job, show its output area (in this cell)."""
        if self.scheduled_area is not None:
            return
        if not session.going_on():  # no scheduled prompt
            return

        self.scheduled_area = ipywidgets().Output()
        print(
            "Scheduled prompts of this conversation show their runs below; they end with it "
            "(%%agent --new, %agent reset, a kernel restart)."
        )
        display(self.scheduled_area)

    def run_cell_blocking(self, line: str, body: str) -> None:
        """The cell-magic fallback: run the cell on a private loop in a worker thread.

        Used only when a front end calls `run_cell_magic` directly (or with
        `%autoawait off`); the kernel cannot take widget clicks meanwhile, so approvals
        are denied at once, with a message that says how to run unattended.
        """
        front_end = self.approver().front_end
        outcome: dict[str, BaseException] = {}

        def work() -> None:
            try:
                asyncio.run(self.run_cell(line, body, interactive=False))
            except BaseException as exc:
                outcome["error"] = exc

        worker = threading.Thread(target=work, name="toolhost-cell", daemon=True)
        front_end.blocked = True
        try:
            worker.start()
            worker.join()
        finally:
            front_end.blocked = False
        if "error" in outcome:
            raise outcome["error"]

    def _no_model(self, options: CellOptions) -> bool:
        """Nothing to ask: no API key in this kernel, no cassette, and no conversation whose
        model is already made (checked before anything slow is imported)."""
        if self.session is not None and not options.new:
            return False
        if options.cassette or (self.config.cassette if options.new else self.cassette):
            return False
        from ..model.anthropic_model import has_credentials

        return not has_credentials()

    async def _settle_trust(self, options: CellOptions) -> bool | None:
        """Before a conversation's first prompt: whether it trusts the folder's own settings
        (`permissions.settings.trust`). `--trust-folder` trusts; an answer given in this
        kernel holds; a folder trusted before, or with nothing to trust, needs no question;
        else the cell asks (`trust_prompt`), and an untrusted folder's cell says what is held
        back. A conversation a `%agent` command started without asking, that has sent
        nothing yet, is made again after the answer. None: leave it to the session."""
        from ..permissions.settings.trust import folder_trust, remember_trust
        from .widgets.trust_prompt import ask_trust, held_back_line, record_line

        made = self.session
        unasked = made is not None and not made.messages
        unasked = unasked and getattr(getattr(made, "folder_trust", None), "undecided", False)
        if not (options.new or self.session is None or unasked):
            return None
        if options.trust_folder:
            return True
        trust = folder_trust(self.cwd)
        if not trust.undecided:
            return None
        known = self.kernel_answer(trust)
        if known is not None:
            if not known:
                print(held_back_line(trust, "(you chose Don't trust in this kernel)"), flush=True)
            return known
        answer = await ask_trust(
            trust,
            front_end=self.approver().front_end,
            limit=self.approver().timeout,
            emit=self._emit_line,
        )
        note = ""
        if answer == "trust":
            try:
                remember_trust(trust)
            except OSError as exc:
                note = f"(for this kernel only: the answer could not be kept: {exc})"
        if answer in ("trust", "decline"):
            self.folder_answers[trust.folder] = (answer == "trust", frozenset(trust.actions))
        print(record_line(trust, answer, note), flush=True)
        if unasked and made is not None:  # made again: it keeps the rules added to it
            added = made.rules.get("session", {})
            self.pending_rules[:0] = [(r, b) for b, rules in added.items() for r in rules]
            self.reset()
        return answer == "trust"

    def kernel_answer(self, trust: FolderTrust) -> bool | None:
        """The answer given in this kernel for `trust.folder`, while its settings do nothing
        beyond what was shown then; else None."""
        known = self.folder_answers.get(trust.folder)
        if known is None or not set(trust.actions) <= known[1]:
            return None
        return known[0]

    def _prepare(self, options: CellOptions, *, trust: bool | None = None) -> Any:
        """Apply a cell's options. `--new` starts from the configured defaults; the first
        conversation keeps a mode and rules chosen with `%agent` before it began. `trust`
        is the folder trust decided for a conversation this starts (None: an answer given
        in this kernel, else the session's own finding)."""
        starting = options.new or self.session is None
        think = self.config.think if options.new else self.think
        think = think if options.think is None else options.think
        if options.new:
            self.model = self.config.model
            self.mode = self.config.permission_mode
            self.cassette = self.config.cassette
            self.cassette_mode = self.config.cassette_mode
            self.disclosure = self.config.disclosure
        self.think = think
        self.model = options.model or self.model
        self.disclosure = options.disclosure or self.disclosure
        refused = self.refuse_mode(options.mode)
        if refused is not None:
            raise UsageError(refused)  # before anything changes: the next cell runs as before
        self.mode = options.mode or self.mode
        self.cassette = options.cassette or self.cassette
        cassette_mode = options.cassette_mode or self.cassette_mode
        if cassette_mode and not self.cassette:
            raise UsageError("--cassette-mode needs a cassette: add --cassette PATH.")
        self.cassette_mode = cassette_mode
        tools = self.tool_pool(options.tools)
        if starting:
            if self.session is not None:
                stopped = self.end_session("a new conversation started (%%agent --new)")
                self.ended_notice = ended_notice(stopped)

            # Scheduled prompts run in this kernel's session and show in their own area;
            # rules added before the first cell are the session's from the start.
            if trust is None:
                from ..permissions.settings.trust import folder_trust

                trust = self.kernel_answer(folder_trust(self.cwd))
            self.session = new_session(self, tools=tools, trust_folder=trust)
            found = self.session.folder_trust
            if trust and not options.trust_folder and found is not None and found.how == "flag":
                self.session.folder_trust = replace(found, how="clicked")  # a click, not a flag
        else:
            update_session(self.session, self, tools=tools)  # pyright: ignore[reportArgumentType]
        return self.session

    def _remember(self, view: LiveView) -> None:
        cards = view.all_cards()
        self.history.extend(cards)
        batches = [c.batch for c in cards if c.batch > 0]
        if batches:  # batches count on through the conversation's cells
            self.batch_offset = max(batches)

    def reset(self) -> str | None:
        """Forget the conversation (the next cell starts a new one); what it set going
        ends with it. Returns a line saying what was stopped (None: nothing)."""
        return ended_notice(self.end_session("the conversation was reset (%agent reset)"))

    def end_session(self, reason: str) -> Any:
        """End the conversation: its scheduled prompts, background subagents and background
        commands stop at once (`Session.end`), its MCP servers are closed when an event loop
        runs. Returns what was stopped (a `Stopped`; None without a conversation)."""
        session, self.session = self.session, None
        self.scheduled_area = None
        if session is None:
            return None
        stopped = session.end(reason)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # the interpreter is exiting: the server processes end with it
            return stopped
        closing = loop.create_task(session.close())
        self._closing.add(closing)  # the loop keeps only a weak reference to a task
        closing.add_done_callback(self._closing.discard)
        return stopped

    # `%agent` subcommands live in `commands` (`run_line`, `run_command_cell`), which
    # builds on this state: nothing here imports it.

    def ensure_session(self) -> Any:
        """The session, started (as a `%%agent` cell without options would) if none is."""
        if self.session is None:
            self._prepare(CellOptions())
        return self.session

    @property
    def cwd(self) -> Path:
        return Path(os.getcwd())


NO_KEY_MESSAGE = """No Anthropic API key in this kernel and no cassette to replay: nothing was sent.
To go on, either
  %agent key                          asks for the key (typed hidden; kept in this kernel only)
  %env ANTHROPIC_API_KEY=sk-ant-...   the same in a cell (the key is then in the notebook)
  %%agent --cassette FILE             replays a recorded conversation offline
or see it work without a key: !python -m jupyter_toolhost replays the demo shipped with
the package."""
"""What a `%%agent` cell says, at once, when it has no model to ask."""

REPLAY_MISS_HINT = (
    "To go on: %agent reset starts the conversation over (the cassette replays from its "
    "start), or, with an API key, %%agent --cassette-mode auto records an answer for it."
)
"""How to go on after a request the cassette has no answer for (after a stop, say)."""


class AgentFailed(ToolhostError, RuntimeError):
    """The cell's error when the agent stopped on a failure: one line, the only place that
    says what failed (so Run All and nbval stop at the cell); `%agent debug on` raises the
    failure itself, with its traceback."""

    def _render_traceback_(self) -> list[str]:
        return [f"The agent stopped: {self} (%agent debug on shows the traceback)"]


def _show_notice(text: str, *, level: str) -> None:

    display(notice_display(text, level=level))  # type: ignore[arg-type]


class AgentInterrupted(KeyboardInterrupt):
    """The cell's error after an interrupt: one line saying what ran and what was kept, the
    only place that says it, right after the cell's footer.

    It stays an error on purpose: an interrupt stops "Run All" (JupyterLab, nbclient, nbval)
    at this cell, as a `KeyboardInterrupt` does in any other cell, so the next cells do not
    run on an answer that was cut short."""

    def _render_traceback_(self) -> list[str]:
        return [str(self)]


async def wait_in_slices(task: asyncio.Future[Any]) -> None:
    """Wait for `task`, waking every `WAIT_SLICE` seconds so interrupts land quickly."""
    while not task.done():
        await asyncio.wait({task}, timeout=WAIT_SLICE)


async def stop_task(task: asyncio.Future[Any], *, grace: float) -> None:
    """Cancel `task` and wait (in slices, up to `grace` s) for it to wind down.

    Another interrupt meanwhile cancels `task` again (the agent then stops the calls it was
    letting finish) and shortens the wait to `SECOND_STOP_WAIT`. ipykernel turns only the
    first SIGINT of a cell into a `CancelledError`, so this one is watched here directly.
    """

    task.cancel()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace

    def again() -> None:
        nonlocal deadline
        task.cancel()
        deadline = min(deadline, loop.time() + SECOND_STOP_WAIT)

    def on_sigint(_signum: int, _frame: Any) -> None:
        loop.call_soon_threadsafe(again)

    try:
        previous: Any = signal.signal(signal.SIGINT, on_sigint)
    except ValueError:  # not the main thread (the cell-magic fallback): no second interrupt
        previous = None
    try:
        while not task.done() and loop.time() < deadline:
            try:
                await asyncio.wait({task}, timeout=WAIT_SLICE)
            except asyncio.CancelledError:
                again()
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    if task.done() and not task.cancelled():
        task.exception()  # retrieved: an error while stopping is not reported twice


def _cassette_miss(error: BaseException) -> bool:
    """The cassette has no recorded answer for this request (not a failure of the code)."""
    from ..model.cassette import CassetteError

    return isinstance(error, CassetteError)


def ended_notice(stopped: Any) -> str | None:
    """What ending a conversation stopped, in one notice (None: nothing was running)."""
    if not stopped:
        return None
    lines = "\n".join(f"  - {line}" for line in stopped.stopped)
    return f"The previous conversation ended; what it had set going was stopped:\n{lines}"


def background_notice(stopped: Any) -> str | None:
    """What the stop button stopped besides the prompt, and what goes on (None: nothing)."""
    if not stopped:
        return None
    parts: list[str] = []
    if stopped.stopped:
        lines = "\n".join(f"  - {line}" for line in stopped.stopped)
        parts.append(f"Stopped with the prompt:\n{lines}")
    if stopped.going_on:
        lines = "\n".join(f"  - {line}" for line in stopped.going_on)
        parts.append(
            f"Still scheduled (they run in this conversation's mode and rules):\n{lines}\n"
            "To end them: ask the agent to CronDelete them, or %agent reset (which ends the "
            "conversation)."
        )
    return "\n".join(parts)


def _interrupt_summary(view: LiveView) -> str:
    cards = view.all_cards()
    done = sum(card.status == "done" for card in cards)
    stopped = sum(card.status in ("cancelled", "error", "denied") for card in cards)
    if cards:
        calls = f"{_calls(done)} completed, {format_number(stopped)} stopped"
    else:
        calls = "no tool calls ran"
    return f"Interrupted: {calls}. The conversation is kept; the next %%agent cell continues it."


def _calls(count: int) -> str:
    return f"{format_number(count)} tool call" + ("" if count == 1 else "s")
