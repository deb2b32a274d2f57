"""Bash: run a shell command in the session's persistent working directory.

Each call runs `bash -c` in a new process group (`jupyter_toolhost.core.process`), its output
written straight to files under ``<session>/tool-results`` so even a 1 GB output never sits
in this process's memory; output over the budget stays there and the model gets a
`<persisted-output>` reference with a preview. An EXIT trap writes the shell's final
directory to a side file, which becomes the next call's working directory (kept in the app
state as `AppState.shell_cwd`). Timeout, cancel and sibling abort kill the whole group.
A non-zero exit raises, so the result is an error and siblings are cancelled. While a
command runs, its progress (about once a second) is the output's size and its last lines.

Sandbox (`sandbox`): by default every command, foreground or background, runs under
bubblewrap where it can start; paths a Read deny rule protects are not visible inside, paths
an Edit deny protects and the settings files are read-only. ``JUPYTER_TOOLHOST_BASH_SANDBOX=0``
(or ``options.sandbox.enabled = False``) turns it off, ``=1`` (or True) requires it.
Where bwrap is missing the command runs unsandboxed, and the session's first result says so.
The kernel's own secrets (``ANTHROPIC_*``, ``JPY_*``, hub and server tokens) are left out of
every command's environment (`_env`). Output that stays on disk is redacted in place
(`core.redaction`) before its preview is read, like every tool result.
"""

from __future__ import annotations

import os
import shlex
import shutil
import uuid
from dataclasses import replace
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ...core.context import AppState, Progress, ToolUseContext
from ...core.private import private_folder
from ...core.process import CapturedStream, OutputSoFar, ProcessResult, run_process
from ...core.results import human_size, persisted_reference, safe_name
from ...core.tool import Tool, build_tool
from ...core.types import ToolError, ToolInputError
from . import git_guard
from .background import start_task
from .prompt import (
    DEFAULT_TIMEOUT_MS,
    DESCRIPTION,
    MAX_TIMEOUT_MS,
    NAME,
    STDERR_BUDGET_BYTES,
    STDOUT_BUDGET_BYTES,
)
from .quarantine import sweep
from .readonly import is_read_only_command
from .sandbox import freeze, plan, sandboxed


class BashInput(BaseModel):
    """Input of Bash."""

    model_config = ConfigDict(extra="forbid")

    command: str = Field(description="The command to run.")
    timeout: int | None = Field(
        default=None,
        ge=1,
        le=MAX_TIMEOUT_MS,
        description=f"Timeout in milliseconds (default {DEFAULT_TIMEOUT_MS}).",
    )
    description: str | None = Field(
        default=None, description="What the command does, in 5-10 words."
    )
    run_in_background: bool = Field(
        default=False, description="Start it and return at once with a task id."
    )


def shell_cwd(context: ToolUseContext) -> Path:
    """Where the next command runs: the last command's final directory, or the session's.

    A remembered folder that no longer exists is an error, never a silent move to the
    session's folder (the permission check looked at the old one): the shell is put back in
    the session's folder and the command does not run."""
    saved = context.get_app_state().shell_cwd
    if not saved:
        return context.cwd
    if not Path(saved).is_dir():
        _remember_cwd(context, str(context.cwd))
        raise ToolError(
            f"The shell's folder {saved} no longer exists; the command was not run. The shell "
            f"is back in {context.cwd}: run it again from there."
        )
    return Path(saved)


def _remember_cwd(context: ToolUseContext, cwd: str) -> None:
    def update(state: AppState) -> AppState:
        return replace(state, shell_cwd=cwd)

    context.set_app_state(update)


def _shell() -> str:
    return shutil.which("bash") or "/bin/sh"


_KERNEL_SECRETS = ("ANTHROPIC_", "JPY_", "JUPYTERHUB_", "CLAUDE_CODE_", "KERNEL_")
"""Prefixes of variables that belong to the kernel and its front end (API keys, the
session's identity, hub tokens), not to the commands the agent runs."""
_KERNEL_NAMES = frozenset({"JUPYTER_TOKEN", "JUPYTER_CONFIG_DATA", "CLAUDE_API_KEY"})
_GIT_LOCATION = frozenset(
    {"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY", "GIT_INDEX_FILE",
     "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_CONFIG_PARAMETERS",
     "GIT_CONFIG_COUNT"}
)  # fmt: skip
"""Variables that send a command's git to another repository, or give it configuration,
than the permission check sees (it finds the repository around the command's folder)."""


def _env() -> dict[str, str]:
    """The commands' environment: the kernel's, less the kernel's own secrets (also when the
    sandbox is off; there the process could still read them from ``/proc``) and the
    variables that point git elsewhere (`_GIT_LOCATION`)."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(_KERNEL_SECRETS)
        and name not in _KERNEL_NAMES
        and name not in _GIT_LOCATION
        and not name.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))
    }
    env.update({"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"})
    return env


async def run_bash(input: BashInput, context: ToolUseContext) -> str:
    """Run one command (or start it in the background) and describe how it went."""
    if not input.command.strip():
        raise ToolInputError("The command is empty.")
    cwd = shell_cwd(context)
    sandbox = plan(context, cwd)
    prefix = list(sandbox.prefix)
    note = f"\n\n{sandbox.notice}" if sandbox.notice else ""
    projects = dict.fromkeys((context.rule_root, context.cwd, cwd))
    noted = git_guard.watch(projects, git_guard.user_home(), sandboxed=bool(prefix))
    if input.run_in_background:

        def swept() -> str | None:
            """When it ends: what it left for the next kernel start or for git to follow,
            and what the network proxy refused."""
            notes = [sweep(context, sandbox.startup) if sandbox.startup is not None else None]
            notes.append(sandbox.finish())
            removed = git_guard.sweep(noted)
            notes.append(git_guard.notice(removed) if removed else None)
            return "\n\n".join(n for n in notes if n) or None

        task = start_task(
            context,
            argv=[*prefix, _shell(), "-c", input.command],
            command=input.command,
            cwd=cwd,
            env=_env(),
            description=input.description,
            on_exit=swept,
        )
        return (
            f"Command running in the background with task id {task.id}.\n"
            f"Its output (stdout and stderr) goes to: {task.output_path}\n"
            f"Read that file to check on it; Sleep to wait.{note}"
        )
    name = safe_name(context.tool_use_id or uuid.uuid4().hex, "call")
    output_dir = private_folder(context.session_dir() / "tool-results")
    cwd_file = output_dir / f"{name}.cwd"
    script = f"trap 'pwd -P >| {shlex.quote(str(cwd_file))}' EXIT\n{input.command}"
    timeout_ms = input.timeout or DEFAULT_TIMEOUT_MS
    progress = context.progress

    def report(output: OutputSoFar) -> None:
        if progress is not None:
            text = f"{human_size(output.size)} of output so far"
            progress(Progress(text=text, tail=output.tail))

    try:
        result = await run_process(
            [*prefix, _shell(), "-c", script],
            cwd=cwd,
            output_dir=output_dir,
            name=f"{name}-bash",
            budget_bytes=STDOUT_BUDGET_BYTES,
            stderr_budget_bytes=STDERR_BUDGET_BYTES,
            time_limit=timeout_ms / 1000,
            abort=context.abort,
            env=_env(),
            progress=report,
            redactor=context.options.redactor,
        )
    finally:
        refused = sandbox.finish()
    if refused:
        note += f"\n\n{refused}"
    removed = git_guard.sweep(noted)
    if removed:
        note += f"\n\n{git_guard.notice(removed)}"
    _take_cwd(context, cwd_file)
    moved = sweep(context, sandbox.startup) if sandbox.startup is not None else None
    if moved:
        note = f"\n\n{moved}{note}"
    text = describe(result)
    if result.timed_out:
        raise ToolError(
            f"Command timed out after {timeout_ms} ms; it was killed with every process it "
            f"started.\n{text}".rstrip()
            + note
        )
    if result.exit_code != 0:
        raise ToolError(f"{text}\nExit code {result.exit_code}".strip() + note)
    return (text or "(no output)") + note


def _take_cwd(context: ToolUseContext, cwd_file: Path) -> None:
    try:
        final = cwd_file.read_text(encoding="utf-8").strip()
        cwd_file.unlink()
    except OSError:
        return
    if final and Path(final).is_dir():
        _remember_cwd(context, final)


def describe(result: ProcessResult) -> str:
    """stdout, then stderr (each inline, or a persisted-output reference when spilled)."""
    parts: list[str] = []
    stdout = _stream_text(result.stdout)
    if stdout:
        parts.append(stdout)
    err_text = _stream_text(result.stderr)
    if err_text:
        parts.append(f"stderr:\n{err_text}")
    return "\n".join(parts)


def _stream_text(stream: CapturedStream) -> str:
    if stream.path is None:
        return stream.text.rstrip("\n")
    return persisted_reference(stream.path, stream.size, stream.text, True)


def _read_only(input: BashInput) -> bool:
    return not input.run_in_background and is_read_only_command(input.command)


def _summary(input: BashInput) -> str:
    return input.command


def _code(input: BashInput) -> tuple[str, str]:
    return "shell", input.command


def make_tool() -> Tool[BashInput]:
    """A fresh Bash tool."""
    return build_tool(
        name=NAME,
        input_model=BashInput,
        call=run_bash,
        description=DESCRIPTION,
        max_result_size_chars=50_000,
        read_only=_read_only,
        concurrency_safe=_read_only,
        interrupt_behavior="cancel",
        cancels_siblings_on_error=True,
        shell_command=_summary,
        sandboxed=sandboxed,
        render_tool_use=_summary,
        render_code=_code,
        search_hint="shell command terminal run execute bash script",
        on_session_start=_read_sandbox_settings,
    )


def _read_sandbox_settings(context: ToolUseContext) -> None:
    """The sandbox's environment settings are the session's from its start: a command that
    changes them later changes nothing (`sandbox.freeze`)."""
    freeze(context)


TOOL = make_tool()
