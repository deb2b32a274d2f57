"""`%agent help` is short, grouped and has examples, and comes from the subcommand table:
every subcommand has its line and its full reference (`%agent help NAME`), and the usage a
wrong subcommand is answered with is made from the same table."""

from __future__ import annotations

import pytest

from jupyter_toolhost.jupyter.magic.help_text import (
    GROUPS,
    LINE_USAGE,
    SUBCOMMANDS_HELP,
    TOPICS,
    full_reference,
    short_help,
    topic_help,
)
from jupyter_toolhost.jupyter.magic.magics import HELP
from jupyter_toolhost.jupyter.magic.options import SUBCOMMANDS, UsageError, parse_command


def test_every_subcommand_has_its_help_and_nothing_else_does() -> None:
    assert set(SUBCOMMANDS_HELP) == set(SUBCOMMANDS)
    assert all(entry.group in GROUPS for entry in SUBCOMMANDS_HELP.values())


def test_the_short_help_is_short_grouped_with_examples() -> None:
    text = short_help()
    lines = text.splitlines()
    assert len(lines) <= 50, len(lines)
    assert max(len(line) for line in lines) <= 80  # no wrapping at 1024 px
    assert all(group in lines for group in GROUPS)
    assert "Examples" in lines
    for name, entry in SUBCOMMANDS_HELP.items():
        shown = entry.usage or SUBCOMMANDS_HELP["allow"].usage
        assert f"%agent {shown} " in text, name
        assert shown in LINE_USAGE
    assert "Ellipsis" not in text and "{" not in text.replace("{...}", "")


@pytest.mark.parametrize("name", [*SUBCOMMANDS, *TOPICS])
def test_each_subcommand_and_topic_has_a_full_reference(name: str) -> None:
    found = topic_help(name)
    assert found is not None and len(found) > 40
    assert parse_command(f"help {name}").argument == name
    assert found.split("\n\n", 1)[1] in HELP  # the magic's docstring holds all of it


def test_the_full_reference_keeps_what_the_long_help_said() -> None:
    reference = full_reference()
    assert reference == HELP
    for said in (
        "--mode MODE      the permission mode",
        "INPUT is JSON ({...})",
        "Prompts while one runs",
        ".cassette_mode (--cassette-mode)",
        "Off by default",
        "trusted-folders.json",
    ):
        assert said in reference, said


def test_a_wrong_subcommand_is_answered_with_the_tables_usage() -> None:
    with pytest.raises(UsageError) as raised:
        parse_command("stauts")
    assert LINE_USAGE in str(raised.value)
