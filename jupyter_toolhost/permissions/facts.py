"""What a call touches, as permission rules see it: paths, shell commands, URL, MCP server.

`call_facts` asks the tool's declared predicates (`get_path`, `shell_command`, `get_url`,
`is_read_only`) once and resolves every path through the injected resolver; the decision
function then works on these facts only. A predicate that raises, or input holding
characters a reader cannot see, makes the call unverifiable: it can be asked, never
auto-allowed.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from .paths import PathResolver, candidates, has_invisible, inside_any
from .shell import Command, ShellAnalysis, analyze
from .shell_lex import Redirect, Word
from .shell_safety import is_read_only


@dataclass(frozen=True, slots=True)
class PathRef:
    """One path a call touches: as written, and its absolute (lexical, resolved) forms."""

    written: str
    candidates: tuple[str, ...]
    write: bool


@dataclass(frozen=True, slots=True)
class CommandFacts:
    """One sub-command with the files it names."""

    command: Command
    paths: tuple[PathRef, ...]
    """Literal operands (as possible reads or writes) and redirection targets."""
    globs: tuple[str, ...] = ()
    """Unquoted glob operands, made absolute."""
    dynamic: bool = False
    """An operand or a redirection target is only known when the shell runs."""
    write_targets: tuple[PathRef, ...] = ()
    read_targets: tuple[PathRef, ...] = ()
    dynamic_target: bool = False
    """A redirection target is only known when the shell runs."""


@dataclass(slots=True)
class CallFacts:
    """Everything the rules need to know about one call."""

    tool_name: str
    server: str | None = None
    read_only: bool = False
    path: PathRef | None = None
    shell: ShellAnalysis | None = None
    shell_text: str | None = None
    commands: tuple[CommandFacts, ...] = ()
    url: str | None = None
    host: str | None = None
    unverifiable: str | None = None
    ascii: bool = True
    """Every path and command is plain ASCII (no look-alike letters to check)."""
    working_dirs: tuple[str, ...] = field(default_factory=tuple)

    @property
    def is_shell(self) -> bool:
        return self.shell_text is not None

    def inside(self, ref: PathRef) -> bool:
        return inside_any(ref.candidates, self.working_dirs)


def call_facts(
    tool: Any, input: Any, *, cwd: str, resolver: PathResolver, working_dirs: Sequence[str]
) -> CallFacts:
    """Ask the tool's predicates about `input` and resolve what they name."""
    name: str = tool.name
    facts = CallFacts(tool_name=name)
    if name.startswith("mcp__"):
        facts.server = name[5:].split("__", 1)[0]
    dirs: list[str] = []
    for directory in working_dirs:
        dirs.extend(candidates(directory, cwd=cwd, resolver=resolver))
    facts.working_dirs = tuple(dict.fromkeys(dirs))
    facts.read_only = tool.flag(tool.is_read_only, input)
    try:
        path = tool.get_path(input) if tool.get_path is not None else None
        shell = tool.shell_command(input) if getattr(tool, "shell_command", None) else None
        url = tool.get_url(input) if getattr(tool, "get_url", None) else None
    except Exception as exc:
        facts.unverifiable = f"could not tell what the call touches ({type(exc).__name__})"
        facts.read_only = False
        return facts
    if path is not None:
        facts.path = _ref(str(path), cwd, resolver, write=not facts.read_only)
        facts.ascii = "".join(facts.path.candidates).isascii()
        if has_invisible(str(path)):
            facts.unverifiable = "the path holds invisible or control characters"
    if shell is not None:
        facts.ascii = str(shell).isascii() and cwd.isascii()
        _shell_facts(facts, str(shell), cwd, resolver)
    if url is not None:
        facts.url = str(url)
        facts.host = _host(facts.url)
    return facts


def _ref(written: str, cwd: str, resolver: PathResolver, *, write: bool) -> PathRef:
    return PathRef(written, candidates(written, cwd=cwd, resolver=resolver), write)


def _shell_facts(facts: CallFacts, text: str, cwd: str, resolver: PathResolver) -> None:
    facts.shell_text = text
    facts.shell = analyze(text)
    if facts.shell.error:
        facts.unverifiable = facts.shell.error
        facts.read_only = False
        return
    built = tuple(_command_facts(c, cwd, resolver) for c in facts.shell.commands)
    facts.commands = built
    facts.read_only = (
        bool(built)
        and all(not c.command.parts or is_read_only(c.command) for c in built)
        and not any(c.write_targets or c.dynamic or c.dynamic_target for c in built)
    )


def _command_facts(command: Command, cwd: str, resolver: PathResolver) -> CommandFacts:
    refs: list[PathRef] = []
    globs: list[str] = []
    dynamic = False
    for word in command.path_args():
        if word.dynamic:
            dynamic = True
        elif word.glob:
            globs.append(_glob_path(word, cwd, resolver))
        elif word.value:
            refs.append(_ref(word.value, cwd, resolver, write=False))
    dynamic_target = False
    writes: list[PathRef] = []
    reads: list[PathRef] = []
    for redirect in command.file_redirects():
        target = redirect.target
        if target.dynamic or target.glob:
            dynamic_target = True
            continue
        ref = _ref(target.value, cwd, resolver, write=_writes(redirect))
        (writes if ref.write else reads).append(ref)
    return CommandFacts(
        command, tuple(refs), tuple(globs), dynamic, tuple(writes), tuple(reads), dynamic_target
    )


def _writes(redirect: Redirect) -> bool:
    return redirect.op not in ("<", "<&")


def _glob_path(word: Word, cwd: str, resolver: PathResolver) -> str:
    value = word.value
    if value == "~" or value.startswith("~/"):
        value = resolver.home() + value[1:]
    return posixpath.normpath(value if value.startswith("/") else f"{cwd.rstrip('/')}/{value}")


def _host(url: str) -> str | None:
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    host = parts.hostname.rstrip(".")
    return host if host.isascii() else None
