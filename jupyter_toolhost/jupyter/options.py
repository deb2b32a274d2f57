"""Parsing `%%agent` option lines and `%agent` subcommands into plain data.

Pure functions with clear errors (`UsageError` carries the text shown in the cell); no
IPython here, so the magic and the input transformer share exactly one parser.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Literal, TypeAlias, cast, get_args

from ..core.types import CASSETTE_MODES as CASSETTE_MODES
from ..core.types import CassetteMode, PermissionMode
from .help_text import CELL_USAGE as CELL_USAGE
from .help_text import CHECK_USAGE, LINE_USAGE, MCP_USAGE, OUTPUT_USAGE
from .run_options import DISCLOSURES as DISCLOSURES
from .run_options import RUN_OPTION_NAMES, read_options, split_words
from .run_options import THINK_MIN as THINK_MIN
from .run_options import THINK_OFF as THINK_OFF
from .run_options import UsageError as UsageError
from .run_options import parse_cassette_mode as parse_cassette_mode
from .run_options import parse_disclosure as parse_disclosure
from .run_options import parse_mode as parse_mode
from .run_options import parse_think as parse_think
from .run_options import thinking_param as thinking_param

Subcommand: TypeAlias = Literal[
    "status",
    "reset",
    "mode",
    "allow",
    "ask",
    "deny",
    "rules",
    "tools",
    "history",
    "cost",
    "compact",
    "resume",
    "mcp",
    "help",
    "request",
    "check",
    "import-claude-settings",
    "cwd",
    "key",
    "debug",
    "output",
    "stop",
    "undo",
]
SUBCOMMANDS: tuple[Subcommand, ...] = get_args(Subcommand)


@dataclass(frozen=True, slots=True)
class CellOptions:
    """The options of one `%%agent` cell (None: use the session's or the config's)."""

    model: str | None = None
    mode: PermissionMode | None = None
    new: bool = False
    max_turns: int | None = None
    cassette: str | None = None
    cassette_mode: CassetteMode | None = None
    tools: tuple[str, ...] | None = None
    disclosure: str | None = None
    think: int | None = None
    """The thinking budget in tokens (`THINK_OFF`, 0: off; None: not given)."""
    trust_folder: bool = False
    """``--trust-folder``: the working folder's own settings apply to the new conversation
    without asking (see `permissions.settings.trust`)."""


@dataclass(frozen=True, slots=True)
class Command:
    """One `%agent` line: a subcommand, its positional argument and its flags."""

    name: Subcommand
    argument: str | None = None
    flags: frozenset[str] = field(default_factory=frozenset)
    words: tuple[str, ...] = ()
    """Every word after the subcommand, as given (what `mcp` reads)."""


def parse_cell_line(line: str) -> CellOptions:
    """The `%%agent ...` line into `CellOptions` (the options as `run_options` reads them)."""
    words = split_words(line)
    values, flags = read_options(
        words, names=RUN_OPTION_NAMES, flags=("--new", "--trust-folder"), usage=CELL_USAGE
    )
    return CellOptions(
        model=cast(str, values.get("model")) or None,
        mode=cast("PermissionMode | None", values.get("mode")),
        new="--new" in flags,
        trust_folder="--trust-folder" in flags,
        max_turns=cast("int | None", values.get("max_turns")),
        cassette=cast(str, values.get("cassette")) or None,
        cassette_mode=cast("CassetteMode | None", values.get("cassette_mode")),
        tools=cast("tuple[str, ...] | None", values.get("tools")),
        disclosure=cast("str | None", values.get("disclosure")),
        think=cast("int | None", values.get("think")),
    )


def parse_command(line: str) -> Command:
    """The `%agent ...` line into a `Command` (empty means `status`)."""
    if line.split(maxsplit=1)[:1] == ["check"]:  # its input is read raw, not as options
        return parse_check(line.strip()[len("check") :])
    words = split_words(line)
    if not words:
        return Command("status")
    head, rest = words[0], words[1:]
    name: Subcommand | None = next((s for s in SUBCOMMANDS if s == head), None)
    if name is None:
        raise UsageError(f"Unknown subcommand {head!r}.\nUsage: {LINE_USAGE}")
    if name == "mcp":
        return parse_mcp(rest)
    if name == "output":
        return parse_output(rest)
    flags = frozenset(w for w in rest if w.startswith("--"))
    positional = [w for w in rest if not w.startswith("--")]
    allowed_flags = {"allow": {"--save"}, "ask": {"--save"}, "deny": {"--save"}}.get(name, set())
    if name == "history":
        allowed_flags = {"--timeline"}
    if name == "undo":
        allowed_flags = {"--yes", "--force"}
    unknown = flags - allowed_flags
    if unknown:
        raise UsageError(f"%agent {name} does not take {', '.join(sorted(unknown))}.")
    if name in ("allow", "ask", "deny"):
        if not positional:
            raise UsageError(f"%agent {name} needs a rule, e.g. %agent {name} 'Bash(ls *)'.")
        return Command(name, " ".join(positional), flags)  # a rule may contain spaces
    if name == "cwd" and positional:
        return Command(name, " ".join(positional), flags)  # a folder's name may hold spaces
    with_argument = ("mode", "resume", "request", "debug", "cwd", "help", "undo")
    if len(positional) > 1 or (positional and name not in with_argument):
        takes = "one argument" if name in with_argument else "no argument"
        raise UsageError(f"%agent {name} takes {takes}.")
    argument = positional[0] if positional else None
    if name == "mode" and argument is not None:
        parse_mode(argument)
    if name == "request" and argument is not None:
        parse_turn(argument)
    if name == "debug" and argument not in (None, "on", "off"):
        raise UsageError("%agent debug takes on or off.")
    return Command(name, argument, flags)


def parse_output(words: list[str]) -> Command:
    """`%agent output PATH [--from LINE]`: `argument` is the path (which may hold spaces),
    `words` the first line to show (from 1)."""
    first = 1
    if "--from" in words:
        at = words.index("--from")
        value = words[at + 1] if at + 1 < len(words) else ""
        if not value.isdigit() or int(value) < 1:
            raise UsageError(f"--from takes a line number (1 is the first).\n{OUTPUT_USAGE}")
        first = int(value)
        words = words[:at] + words[at + 2 :]
    unknown = sorted(w for w in words if w.startswith("--"))
    if unknown:
        raise UsageError(f"%agent output does not take {', '.join(unknown)}.\n{OUTPUT_USAGE}")
    if not words:
        raise UsageError(f"%agent output needs a path.\n{OUTPUT_USAGE}")
    return Command("output", " ".join(words), words=(str(first),))


def parse_check(rest: str) -> Command:
    """`%agent check TOOL INPUT`: `argument` is the tool; `words` holds the input text, with
    the flag ``--json`` when it is a JSON object. Text quoted as one word is unquoted; any
    other text is the rest of the line as written (a shell command keeps its quotes)."""
    tool, _, text = rest.strip().partition(" ")
    text = text.strip()
    if not tool or not text:
        raise UsageError(f"%agent check needs a tool and its input.\n{CHECK_USAGE}")
    if not text.startswith("{"):
        # JSON is read as typed: shell-style unquoting would take the quotes out of
        # {"command":"ls"} (one word to a shell).
        try:
            words = shlex.split(text)
        except ValueError:
            words = []
        if len(words) == 1:
            text = words[0]
    if not text.startswith("{"):
        return Command("check", tool, words=(text,))
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"The input is not valid JSON ({exc}).\n{CHECK_USAGE}") from None
    if not isinstance(value, dict):
        raise UsageError(f"The JSON input must be an object.\n{CHECK_USAGE}")
    return Command("check", tool, frozenset({"--json"}), (text,))


def parse_turn(value: str) -> int:
    """A turn number for `%agent request N`: from 1, or negative to count from the end."""
    try:
        turn = int(value)
    except ValueError:
        turn = 0
    if turn == 0:
        raise UsageError(
            f"%agent request takes a turn number (1 is the first, -1 the last), not {value!r}."
        )
    return turn


def parse_mcp(words: list[str]) -> Command:
    """`%agent mcp ...`: list, `add NAME -- COMMAND ARGS...`, `restart NAME`, `remove NAME`.

    `argument` is the action ("list" when none is given); `words` are the server name and,
    for `add`, the command and its arguments (which may themselves start with `--`).
    """
    if not words or words == ["list"]:
        return Command("mcp", "list")
    action, rest = words[0], words[1:]
    if action == "add":
        if len(rest) < 3 or rest[1] != "--":
            raise UsageError(f"%agent mcp add needs NAME -- COMMAND [ARGS...].\n{MCP_USAGE}")
        return Command("mcp", "add", words=(rest[0], *rest[2:]))
    if action in ("restart", "remove"):
        if len(rest) != 1:
            raise UsageError(f"%agent mcp {action} needs one server name.\n{MCP_USAGE}")
        return Command("mcp", action, words=(rest[0],))
    raise UsageError(f"Unknown %agent mcp action {action!r}.\n{MCP_USAGE}")
