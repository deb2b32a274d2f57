"""One option grammar: the `%%agent` line, the `%agent` subcommands and the command line are
argparse parsers built from `options.grammar`, whose help is argparse's text, and a mistake
in a notebook line is a `UsageError` (never argparse's exit, never its printing)."""

from __future__ import annotations

import contextlib
import io

import pytest

from jupyter_toolhost.__main__ import parser
from jupyter_toolhost.core.errors import UsageError
from jupyter_toolhost.jupyter.magic.cell_line import CELL_PARSER, CELL_USAGE, OPTION_LIST
from jupyter_toolhost.jupyter.magic.help_text import SUBCOMMANDS_HELP, topic_help
from jupyter_toolhost.jupyter.magic.options import SUBCOMMANDS, parse_cell_line, parse_command
from jupyter_toolhost.options.grammar import RUN_OPTIONS, OptionParser


def _options_of(built: object) -> set[str]:
    actions = getattr(built, "_actions")  # noqa: B009 (argparse keeps them there)
    return {name for action in actions for name in action.option_strings}


def test_both_front_ends_take_every_run_option_from_the_one_table() -> None:
    names = {option.name for option in RUN_OPTIONS}
    assert names <= _options_of(CELL_PARSER)
    assert names - {"--tools"} <= _options_of(parser())  # a terminal run offers every tool


def test_the_cell_help_is_the_parsers_own_text() -> None:
    options = topic_help("options")
    assert options is not None
    assert CELL_USAGE in options and OPTION_LIST in options
    for name in _options_of(CELL_PARSER):
        assert f"[{name}" in CELL_USAGE, name
        assert f"\n{name}" in f"\n{OPTION_LIST}", name
    assert "[--think N|off]" in CELL_USAGE and "[--cassette-mode auto|record|replay]" in CELL_USAGE


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("--think", "--think needs a value."),
        ("--new=yes", "Unknown option '--new=yes'."),
        ("--help", "Unknown option '--help'."),
        ("-h", "Unknown option '-h'."),
        ("--mod plan", "Unknown option '--mod'."),  # no abbreviations: the line is exact
        ("--think --new", "not '--new'"),  # a value is the next word, whatever it looks like
    ],
)
def test_a_cell_line_mistake_is_a_usage_error_not_an_exit(line: str, said: str) -> None:
    printed = io.StringIO()
    with (
        contextlib.redirect_stderr(printed),
        contextlib.redirect_stdout(printed),
        pytest.raises(UsageError) as raised,
    ):
        parse_cell_line(line)
    assert said in str(raised.value)
    assert printed.getvalue() == ""


def test_argparse_errors_of_its_own_become_usage_errors() -> None:
    strict = OptionParser("%agent demo", usage_hint="%agent demo NAME")
    strict.add_argument("name")
    with pytest.raises(UsageError) as raised:
        strict.parse_args([])  # argparse reports a missing argument through `error`
    assert str(raised.value).endswith("\nUsage: %agent demo NAME")
    with pytest.raises(UsageError):
        strict.exit(2, "bye")


def test_only_double_dash_words_are_options_on_a_subcommand_line() -> None:
    assert parse_command("allow Bash(ls -la) --save").argument == "Bash(ls -la)"
    assert parse_command("deny Bash(rm -rf *)").argument == "Bash(rm -rf *)"
    assert parse_command("request -1").argument == "-1"
    with pytest.raises(UsageError, match="does not take --sav"):
        parse_command("allow x --sav")
    with pytest.raises(UsageError, match="does not take --timeline=1"):
        parse_command("history --timeline=1")


def test_each_subcommand_parser_comes_from_its_help_entry() -> None:
    for name in SUBCOMMANDS:
        for flag in SUBCOMMANDS_HELP[name].flags:
            rest = "x " if SUBCOMMANDS_HELP[name].takes == "rule" else ""
            assert flag in parse_command(f"{name} {rest}{flag}").flags, (name, flag)
