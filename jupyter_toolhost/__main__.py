"""`python -m jupyter_toolhost`: a session in the terminal.

Prints the model's text as it streams and one line per tool call (`● Read(notes.txt) ✓
0.01s`), asks for approvals on the terminal (denying when there is no terminal to ask), and
records or replays cassettes. `--mode` is the permission mode (as in `%%agent`; alias
`--permission-mode`); `--cassette-mode` says what `--cassette` does; `--think N` turns on
extended thinking with a budget of N tokens (as `%%agent --think`; a `✻ Thinking` line on
stderr marks each thought, its text is not printed). With no arguments at
all it replays the shipped demo cassette on a sample folder in a temp dir: no key and no
network needed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from .core.numbers import format_number
from .options.grammar import add_run_options
from .options.values import thinking_param

if TYPE_CHECKING:
    from .agent.events import LoopEvent
    from .core.tool import Tool
    from .permissions.api import ApprovalDecision, ApprovalRequest


class TerminalApprover:
    """Asks on the terminal; with no terminal (or at end of input) it denies."""

    def __init__(self, *, stdin: TextIO | None = None, out: TextIO | None = None) -> None:
        self.stdin = stdin or sys.stdin
        self.out = out or sys.stderr

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        from .permissions.api import DESTRUCTIVE_WARNING, ApprovalDecision

        if not self.stdin.isatty():
            return ApprovalDecision("deny", "there is no terminal to ask for approval")
        warning = f"Warning: {DESTRUCTIVE_WARNING}\n" if request.destructive else ""
        question = (
            f"\n{request.display_name}({request.summary}) needs approval: {request.message}\n"
            f"{warning}Allow? [y]es / [a]lways / [n]o: "
        )
        self.out.write(question)
        self.out.flush()
        line = await asyncio.to_thread(self.stdin.readline)
        if not line:
            return ApprovalDecision("deny", "no answer (end of input)")
        match line.strip().lower():
            case "y" | "yes":
                return ApprovalDecision("allow")
            case "a" | "always":
                return ApprovalDecision("always")
            case _:
                return ApprovalDecision("deny")


class TerminalView:
    """Renders a session's events as plain terminal text."""

    def __init__(self, tools: list[Tool[Any]], *, out: TextIO, err: TextIO) -> None:
        self.tools = {t.name: t for t in tools}
        self.out = out
        self.err = err
        self.labels: dict[str, str] = {}
        self.at_line_start = True

    def __call__(self, event: LoopEvent, *, depth: int = 0) -> None:
        """One event; a sub-agent's calls (`ChildEvent`) are indented under their Agent call."""
        from .agent.events import (
            ChildEvent,
            Notice,
            TextDelta,
            ThinkingStarted,
            ToolCallFinished,
            ToolCallQueued,
        )

        indent = "  " * depth
        match event:
            case ChildEvent(event=inner):
                self(inner, depth=depth + 1)  # pyright: ignore[reportArgumentType]
            case TextDelta(text=text):
                self._write(text)
            case ThinkingStarted(redacted=redacted) if not depth:
                self._end_line()
                self.err.write(
                    "✻ Thinking (redacted by the API)\n" if redacted else "✻ Thinking…\n"
                )
            case ToolCallQueued(call=call):
                self.labels[call.id] = self._label(call.name, call.input)
            case ToolCallFinished(call_id=call_id, result=result, duration_s=seconds):
                mark = "✗" if result.is_error else "✓"
                bullet = "↳" if depth else "●"
                label = self.labels.get(call_id, call_id)
                self._line(f"{indent}{bullet} {label} {mark} {format_number(seconds, 'seconds')}")
                if result.is_error:
                    detail = str(result.content).removeprefix("<tool_use_error>")
                    self._line(f"{indent}  ⎿ {detail.splitlines()[0] if detail else ''}"[:200])
            case Notice(text=text):
                self._end_line()
                self.err.write(f"[{event.kind}] {text}\n")
            case _:
                pass

    def _label(self, name: str, raw: Any) -> str:
        tool = self.tools.get(name)
        if tool is not None:
            try:
                parsed = tool.input_model.model_validate(raw)
                return f"{tool.display_name(parsed)}({tool.summarize(parsed)})"
            except Exception:
                pass
        summary = json.dumps(raw, ensure_ascii=False)
        return f"{name}({summary if len(summary) <= 80 else summary[:79] + '…'})"

    def _write(self, text: str) -> None:
        if text:
            self.out.write(text)
            self.out.flush()
            self.at_line_start = text.endswith("\n")

    def _end_line(self) -> None:
        if not self.at_line_start:
            self._write("\n")

    def _line(self, text: str) -> None:
        self._end_line()
        self._write(text + "\n")


_CLI_DEFAULTS: dict[str, object] = {"--max-turns": 100, "--disclosure": "auto", "--think": 0}
_CLI_NOTES = {
    "--mode": " (default: the settings' defaultMode, else default; "
    "$JUPYTER_TOOLHOST_PERMISSION_MODE overrides both)",
    "--model": " (default: $JUPYTER_TOOLHOST_MODEL, then built in)",
    "--max-turns": " (default: 100)",
    "--disclosure": " (default: auto, the API's defer_loading when the model supports it)",
    "--think": " (default: off); thinking tokens are billed as output tokens, up to N per response",
}
"""What the command line adds to an option's help: its defaults here."""


def parser() -> argparse.ArgumentParser:
    """The command line's options: the run options of `options.grammar` (as `%%agent` reads
    them, but ``--tools``), ``--permission-mode`` as another name of ``--mode``, and
    ``--cwd``. A mistake is argparse's usage and ``error: ...`` on stderr, status 2."""
    cli = argparse.ArgumentParser(
        prog="python -m jupyter_toolhost",
        description="Run an agent session in the terminal. With no arguments: the offline demo.",
    )
    cli.add_argument("prompt", nargs="?", help="what to ask (default with no arguments: the demo)")
    add_run_options(
        cli,
        ("--model", "--max-turns", "--mode", "--cassette", "--cassette-mode", "--disclosure"),
        read_values=True,
        notes=_CLI_NOTES,
        defaults=_CLI_DEFAULTS,
        aliases={"--mode": "--permission-mode"},
        dests={"--mode": "permission_mode"},
    )
    add_run_options(cli, ("--think",), read_values=True, notes=_CLI_NOTES, defaults=_CLI_DEFAULTS)
    cli.add_argument("--cwd", type=Path, help="the session's working directory")
    cli.add_argument(
        "--trust-folder",
        action="store_true",
        help="trust the working folder's own settings (hooks, MCP servers, allow rules, mode) "
        "for this run without asking; otherwise they are asked about on a terminal and held "
        "back without one",
    )
    return cli


async def ask_folder_trust(
    cwd: Path, *, trust_folder: bool, stdin: TextIO, err: TextIO
) -> bool | None:
    """Whether this run trusts the folder's own settings (`permissions.settings.trust`), as
    `Session(trust_folder=...)` takes it: `trust_folder`; None when it is trusted already (or
    has nothing to trust); else the answer on the terminal (a yes is kept); else (no
    terminal) no. What a "no" holds back is written to `err`."""
    from .permissions.settings.trust import describe, folder_trust, remember_trust

    if trust_folder:
        return True
    trust = folder_trust(cwd)
    if trust.trusted:
        return None
    lines = "".join(f"  - {line}\n" for line in describe(trust.actions, trust.new))
    if stdin.isatty():
        err.write(
            f"\nThe folder {trust.folder} has settings that would run commands or allow more:\n"
            f"{lines}Trust this folder? Only do so if you trust its files. [y]es / [n]o: "
        )
        err.flush()
        answer = await asyncio.to_thread(stdin.readline)
        if answer.strip().lower() in ("y", "yes"):
            try:
                remember_trust(trust)
            except OSError as exc:
                err.write(f"(trusted for this run only: the answer could not be kept: {exc})\n")
            return True
        why = "you did not trust it"
    else:
        why = "no terminal to ask; --trust-folder trusts it"
    err.write(
        f"The folder {trust.folder} is not trusted ({why}). Held back (only its deny and ask "
        f"rules apply):\n{lines}"
    )
    return False


async def run_cli(argv: list[str], *, out: TextIO, err: TextIO) -> int:
    """The CLI; returns the exit status."""
    args = parser().parse_args(argv)  # before the heavy imports: --help and mistakes are quick

    from .agent.session import Session, default_tools
    from .demo import DEMO_PROMPT, demo_cassette_path, demo_tools, make_sample_folder
    from .model.anthropic_model import AnthropicModel, has_credentials
    from .model.base import ModelError
    from .model.cassette import CassetteModel

    demo = not argv
    with tempfile.TemporaryDirectory(prefix="toolhost-demo-") as scratch:
        if demo:
            cwd = make_sample_folder(Path(scratch))
            model: Any = CassetteModel(demo_cassette_path(), cassette_mode="replay")
            tools, prompt = demo_tools(), DEMO_PROMPT
            err.write(
                "Offline demo: scripted answers stand in for the model; "
                f"the tools run on a sample folder ({cwd}).\n"
            )
            out.write(f"> {prompt}\n\n")
        else:
            cwd = args.cwd or Path.cwd()
            prompt = args.prompt
            if not prompt:
                err.write("error: give a prompt (or no arguments at all for the offline demo)\n")
                return 2
            if args.cassette_mode is not None and args.cassette is None:
                err.write("error: --cassette-mode needs --cassette PATH\n")
                return 2
            if args.cassette is not None:
                model = CassetteModel(args.cassette, cassette_mode=args.cassette_mode or "auto")
                try:
                    _ = model.mode  # fail before loading anything when it cannot work
                except ModelError as exc:
                    err.write(f"error: {exc}\n")
                    return 2
            elif has_credentials():
                model = AnthropicModel()
            else:
                err.write(
                    "error: no ANTHROPIC_API_KEY is set. Set it, replay a recording with "
                    "--cassette PATH, or run with no arguments for the offline demo.\n"
                )
                return 2
            tools = default_tools()
        trusted = (
            None
            if demo
            else await ask_folder_trust(
                cwd, trust_folder=args.trust_folder, stdin=sys.stdin, err=err
            )
        )
        view = TerminalView(tools, out=out, err=err)
        session = Session(
            tools=tools,
            model=model,
            model_id=args.model,
            cwd=cwd,
            permission_mode=args.permission_mode,
            approver=TerminalApprover(out=err),
            max_turns=args.max_turns,
            disclosure=args.disclosure,
            thinking=thinking_param(args.think),
            on_event=view,
            write_transcript=not demo,
            trust_folder=trusted,
        )
        try:
            result = await session.run(prompt)
        except ModelError as exc:
            view._end_line()
            err.write(f"error: {exc}\n")
            return 1
        finally:
            view._end_line()
            if session.queued_prompts:  # scheduled prompts that fired while this one ran
                err.write(
                    f"[queued] {session.queued_prompts} queued prompt(s) will not run: the "
                    "command ends with its own prompt.\n"
                )
            await session.close()  # before a queued prompt can start: none runs half-way
        # Written as every view writes numbers (`core.numbers`): "27,498 in / 221 out tokens".
        cost = f", ≈ {format_number(result.cost_usd, 'usd')}" if result.cost_usd is not None else ""
        usage = result.usage
        tokens_in = format_number(usage.input_tokens, "tokens")
        tokens_out = format_number(usage.output_tokens, "tokens")
        thinking = (
            f" (incl. {format_number(usage.thinking_tokens, 'tokens')} thinking)"
            if usage.thinking_tokens
            else ""
        )
        err.write(
            f"[{result.stop_reason}] {format_number(result.turns)} turns, "
            f"{tokens_in} in / {tokens_out} out tokens{thinking}{cost}\n"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m jupyter_toolhost` and the `jupyter-toolhost` script."""
    try:
        return asyncio.run(
            run_cli(sys.argv[1:] if argv is None else argv, out=sys.stdout, err=sys.stderr)
        )
    except KeyboardInterrupt:
        sys.stderr.write("\ninterrupted\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
