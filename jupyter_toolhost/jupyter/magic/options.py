"""Reading `%%agent` option lines and `%agent` subcommands into plain data, with argparse.

The `%%agent` line is read by `cell_line.CELL_PARSER`, made of the run options the command
line takes too (`options.grammar`). Each `%agent` subcommand has an `OptionParser` built
from its entry in `help_text.SUBCOMMANDS_HELP` (what it takes and its ``--flags``), so the
help and the parser come from one table; output, mcp and check have a grammar of their own
below. Errors are `UsageError`s whose text the cell shows; no IPython here, so the magic and
the input transformer share exactly one parser.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Literal, TypeAlias, cast, get_args

from ...core.types import CASSETTE_MODES as CASSETTE_MODES
from ...core.types import CassetteMode, PermissionMode
from ...options.grammar import OptionParser, read_run_options
from ...options.values import DISCLOSURES as DISCLOSURES
from ...options.values import THINK_MIN as THINK_MIN
from ...options.values import THINK_OFF as THINK_OFF
from ...options.values import UsageError as UsageError
from ...options.values import parse_cassette_mode as parse_cassette_mode
from ...options.values import parse_disclosure as parse_disclosure
from ...options.values import parse_mode as parse_mode
from ...options.values import parse_think as parse_think
from ...options.values import split_words
from ...options.values import thinking_param as thinking_param
from .cell_line import CELL_PARSER
from .cell_line import CELL_USAGE as CELL_USAGE
from .help_text import CHECK_USAGE, LINE_USAGE, MCP_USAGE, OUTPUT_USAGE, SUBCOMMANDS_HELP

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
    attach: tuple[str, ...] = ()
    """``--with df,model``: kernel variables described with the prompt (`kernel.attached`)."""


@dataclass(frozen=True, slots=True)
class Command:
    """One `%agent` line: a subcommand, its positional argument and its flags."""

    name: Subcommand
    argument: str | None = None
    flags: frozenset[str] = field(default_factory=frozenset)
    words: tuple[str, ...] = ()
    """Every word after the subcommand, as given (what `mcp` reads)."""


def parse_cell_line(line: str) -> CellOptions:
    """The `%%agent ...` line into `CellOptions` (the options as `cell_line.CELL_PARSER`
    takes them, each value read and checked by `options.values`)."""
    parsed, unknown = CELL_PARSER.read(split_words(line))
    if unknown:
        raise UsageError(f"Unknown option {unknown[0]!r}.\nUsage: {CELL_USAGE}")
    values = read_run_options(parsed)
    return CellOptions(
        model=cast(str, values.get("model")) or None,
        mode=cast("PermissionMode | None", values.get("mode")),
        new=parsed.new,
        trust_folder=parsed.trust_folder,
        attach=tuple(n.strip() for n in (parsed.attach or "").split(",") if n.strip()),
        max_turns=cast("int | None", values.get("max_turns")),
        cassette=cast(str, values.get("cassette")) or None,
        cassette_mode=cast("CassetteMode | None", values.get("cassette_mode")),
        tools=cast("tuple[str, ...] | None", values.get("tools")),
        disclosure=cast("str | None", values.get("disclosure")),
        think=cast("int | None", values.get("think")),
    )


def _subcommand_parser(name: Subcommand) -> OptionParser:
    """The parser of one subcommand, from its `SUBCOMMANDS_HELP` entry: its flags and what
    it takes (the words no argument takes come back to `parse_command`, which says why)."""
    entry = SUBCOMMANDS_HELP[name]
    shown = entry.usage or SUBCOMMANDS_HELP["allow"].usage
    parser = OptionParser(f"%agent {name}", usage_hint=f"%agent {shown}")
    for flag in entry.flags:
        parser.add_argument(flag, action="store_true")
    match entry.takes:
        case "one":
            parser.add_argument("argument", nargs="?")
        case "words":
            parser.add_argument("argument", nargs="*")
        case "rule":
            parser.add_argument("argument", nargs="*")  # "needs a rule" is ours to say
        case "own" if name == "output":
            parser.add_argument("argument", nargs="*")
            parser.add_argument("--from", dest="first", default="1")
        case "own" | "nothing":
            pass
    return parser


_PARSERS: dict[Subcommand, OptionParser] = {name: _subcommand_parser(name) for name in SUBCOMMANDS}


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
    if "--" in rest:  # argparse's "the rest are values": no subcommand here takes it
        raise UsageError(f"%agent {name} does not take --.")
    parsed, left = _PARSERS[name].read(rest)
    unknown = sorted({w for w in left if w.startswith("--")})
    if unknown:
        raise UsageError(f"%agent {name} does not take {', '.join(unknown)}.")
    flags = frozenset(flag for flag in SUBCOMMANDS_HELP[name].flags if _given(parsed, flag))
    given: str | list[str] | None = getattr(parsed, "argument", None)
    takes = SUBCOMMANDS_HELP[name].takes
    if takes in ("rule", "words"):
        joined = " ".join(cast("list[str]", given))  # a rule or a folder may hold spaces
        if takes == "rule" and not joined:
            raise UsageError(f"%agent {name} needs a rule, e.g. %agent {name} 'Bash(ls *)'.")
        return Command(name, joined or None, flags)
    if left:
        takes_text = "one argument" if takes == "one" else "no argument"
        raise UsageError(f"%agent {name} takes {takes_text}.")
    argument = cast("str | None", given)
    if name == "mode" and argument is not None:
        parse_mode(argument)
    if name == "request" and argument is not None:
        parse_turn(argument)
    if name == "debug" and argument not in (None, "on", "off"):
        raise UsageError("%agent debug takes on or off.")
    return Command(name, argument, flags)


def _given(parsed: object, flag: str) -> bool:
    return bool(getattr(parsed, flag.removeprefix("--").replace("-", "_")))


def parse_output(words: list[str]) -> Command:
    """`%agent output PATH [--from LINE]`: `argument` is the path (which may hold spaces),
    `words` the first line to show (from 1)."""
    if words[-1:] == ["--from"]:
        words = [*words, ""]  # no line number: said below, with the usage
    parsed, left = _PARSERS["output"].read(words)
    first = cast(str, parsed.first)
    if not first.isdigit() or int(first) < 1:
        raise UsageError(f"--from takes a line number (1 is the first).\n{OUTPUT_USAGE}")
    unknown = sorted(w for w in left if w.startswith("--"))
    if unknown:
        raise UsageError(f"%agent output does not take {', '.join(unknown)}.\n{OUTPUT_USAGE}")
    path = " ".join(cast("list[str]", parsed.argument))
    if not path:
        raise UsageError(f"%agent output needs a path.\n{OUTPUT_USAGE}")
    return Command("output", path, words=(str(int(first)),))


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
