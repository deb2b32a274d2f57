"""The option grammar both front ends read: the options a session runs with, and a parser.

`RUN_OPTIONS` lists each option that takes a value once: its name, how its value is read and
checked (`values`), and its help. `add_run_options` puts them on an `argparse` parser; the
command line (`__main__.parser`) and the `%%agent` line (`jupyter.magic.options`) both build
theirs with it, so the two read the same option strings to the same values and refuse the
same mistakes in the same words, and each front end's help (``--help``, `%agent help
options`) is argparse's text for that parser.

`OptionParser` is the argparse parser a notebook cell can use: it never exits and never
prints. A mistake is a `UsageError` whose text the cell shows as it is.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from ..core.errors import UsageError
from ..core.types import CASSETTE_MODES, PERMISSION_MODES
from .values import (
    DISCLOSURES,
    THINK_MIN,
    parse_cassette_mode,
    parse_disclosure,
    parse_max_turns,
    parse_mode,
    parse_think,
    parse_tools,
)


@dataclass(frozen=True, slots=True)
class RunOption:
    """One option that takes a value: how it is spelled, read and described."""

    name: str
    """``--mode``; the value is what follows it (``--mode plan``, ``--mode=plan``)."""
    field: str
    """Where the value goes (`CellOptions.mode`, the command line's ``args.mode``)."""
    read: Callable[[str], object]
    """Checks and converts the value; raises `UsageError` with what is wrong."""
    metavar: str
    help: str
    """The short help (the command line's ``--help``)."""


RUN_OPTIONS: tuple[RunOption, ...] = (
    RunOption("--model", "model", str, "M", "model id"),
    RunOption(
        "--mode",
        "mode",
        parse_mode,
        "MODE",
        f"permission mode: {' | '.join(PERMISSION_MODES)}",
    ),
    RunOption("--max-turns", "max_turns", parse_max_turns, "N", "model requests at most"),
    RunOption("--cassette", "cassette", str, "PATH", "record to / replay from this cassette"),
    RunOption(
        "--cassette-mode",
        "cassette_mode",
        parse_cassette_mode,
        "{" + ",".join(CASSETTE_MODES) + "}",
        "with --cassette: auto (replay if the file exists, else record), record, or replay",
    ),
    RunOption("--tools", "tools", parse_tools, "A,B", "only these tools"),
    RunOption(
        "--disclosure",
        "disclosure",
        parse_disclosure,
        "STYLE",
        f"how deferred (MCP) tools reach the model: {', '.join(DISCLOSURES)}",
    ),
    RunOption(
        "--think",
        "think",
        parse_think,
        "N|off",
        f"extended thinking with a budget of N tokens (at least {THINK_MIN}), or off",
    ),
)
RUN_OPTION_NAMES = tuple(option.name for option in RUN_OPTIONS)
_BY_NAME = {option.name: option for option in RUN_OPTIONS}


def checked(option: RunOption) -> Callable[[str], object]:
    """`option.read` as argparse's ``type=`` wants it: a mistake is an `ArgumentTypeError`
    (a `UsageError` is a ValueError, which argparse would replace by its own words)."""

    def read(value: str) -> object:
        try:
            return option.read(value)
        except UsageError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return read


def add_run_options(
    parser: argparse.ArgumentParser,
    names: Sequence[str] = RUN_OPTION_NAMES,
    *,
    read_values: bool,
    help: Mapping[str, str] | None = None,
    notes: Mapping[str, str] | None = None,
    defaults: Mapping[str, object] | None = None,
    aliases: Mapping[str, str] | None = None,
    dests: Mapping[str, str] | None = None,
    metavars: Mapping[str, str] | None = None,
) -> None:
    """Add the `RUN_OPTIONS` named in `names` (in that order) to `parser`.

    `read_values`: argparse reads each value as it parses (the command line); otherwise the
    text is kept and `read_run_options` reads it afterwards, in `RUN_OPTIONS` order. `help`
    replaces an option's short help, `notes` is added after it, `aliases` gives an option a
    second name (``--permission-mode``), `dests` another attribute name, `metavars` another
    placeholder for its value."""
    for name in names:
        option = _BY_NAME[name]
        spelled = [name, aliases[name]] if aliases and name in aliases else [name]
        parser.add_argument(
            *spelled,
            dest=(dests or {}).get(name, option.field),
            type=checked(option) if read_values else str,
            default=(defaults or {}).get(name),
            metavar=(metavars or {}).get(name, option.metavar),
            help=(help or {}).get(name, option.help) + (notes or {}).get(name, ""),
        )


def read_run_options(parsed: argparse.Namespace) -> dict[str, object]:
    """The values of the run options `parsed` holds as text, read and checked in
    `RUN_OPTIONS` order (the first mistake is the `UsageError`); by field."""
    found = vars(parsed)
    return {
        option.field: option.read(found[option.field])
        for option in RUN_OPTIONS
        if found.get(option.field) is not None
    }


class OptionParser(argparse.ArgumentParser):
    """An argparse parser for a notebook line: it never exits and never prints.

    Everything argparse would report by printing and exiting (``error``, ``exit``) is a
    `UsageError` instead, ending with `usage_hint`. `long_options_only`: only words that
    start with ``--`` are options, so ``Bash(ls -la)`` or ``-1`` is a value. `read` gives a
    value-taking option the next word whatever it looks like (``--think --new`` reports
    ``'--new'`` as a bad budget rather than dropping it).
    """

    def __init__(
        self,
        prog: str,
        *,
        usage_hint: str = "",
        long_options_only: bool = True,
        description: str | None = None,
    ) -> None:
        super().__init__(
            prog=prog,
            description=description,
            add_help=False,
            allow_abbrev=False,
            exit_on_error=False,
        )
        self.usage_hint = usage_hint
        self.long_options_only = long_options_only

    def error(self, message: str) -> NoReturn:
        raise UsageError(self._with_hint(message[:1].upper() + message[1:] + "."))

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise UsageError(self._with_hint((message or "").strip()))

    def _with_hint(self, text: str) -> str:
        return f"{text}\nUsage: {self.usage_hint}" if self.usage_hint else text

    def _parse_optional(self, arg_string: str) -> Any:
        if self.long_options_only and not arg_string.startswith("--"):
            return None
        return super()._parse_optional(arg_string)  # pyright: ignore[reportAttributeAccessIssue]

    def read(self, words: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
        """`words` parsed, options and positionals in any order; returns the namespace and
        the words no argument took (the caller says what is wrong with them). A value-taking
        option without its value is a `UsageError` ("--think needs a value.")."""
        takes_value = {
            name
            for action in self._actions
            if action.nargs is None and action.option_strings
            for name in action.option_strings
        }
        switches = {
            name for action in self._actions if action.nargs == 0 for name in action.option_strings
        }
        joined: list[str] = []
        left: list[str] = []  # `--new=x`: a switch takes no value, so this is no option
        index = 0
        while index < len(words):
            word = words[index]
            if word.partition("=")[0] in switches and "=" in word:
                left.append(word)
                index += 1
                continue
            if word in takes_value and index + 1 < len(words):
                joined.append(f"{word}={words[index + 1]}")
                index += 2
                continue
            joined.append(word)
            index += 1
        try:
            parsed, unknown = self.parse_known_intermixed_args(joined)
        except argparse.ArgumentError as exc:
            if exc.message == "expected one argument":
                raise UsageError(self._with_hint(f"{exc.argument_name} needs a value.")) from None
            raise UsageError(self._with_hint(f"{exc.argument_name}: {exc.message}.")) from None
        return parsed, [*left, *unknown]

    def one_line_usage(self) -> str:
        """The usage argparse writes for this parser, on one line, without ``usage: ``."""
        formatter = argparse.HelpFormatter(self.prog, width=10_000)
        formatter.add_usage(self.usage, self._actions, self._mutually_exclusive_groups, "")
        return formatter.format_help().strip()

    def option_list(self, *, help_position: int = 17, width: int = 92) -> str:
        """argparse's list of this parser's options, one aligned entry each, unindented."""
        formatter = argparse.HelpFormatter(self.prog, max_help_position=help_position, width=width)
        formatter.add_arguments(self._actions)
        return formatter.format_help().rstrip()
