"""One vocabulary in every front end: `--mode` / `permission_mode` is the permission mode,
`--cassette-mode` / `cassette_mode` what a cassette does (auto, record, replay)."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest
from traitlets import TraitError
from traitlets.config import Config

from jupyter_toolhost import __main__ as cli
from jupyter_toolhost.core.types import PERMISSION_MODES
from jupyter_toolhost.jupyter.config import ToolHost
from jupyter_toolhost.jupyter.magic import options
from jupyter_toolhost.jupyter.magic.magics import HELP
from jupyter_toolhost.jupyter.magic.options import UsageError, parse_cell_line
from jupyter_toolhost.model.cassette import CASSETTE_MODES, CassetteMode, CassetteModel


def test_the_cassette_modes_are_spelled_the_same_everywhere() -> None:
    assert CASSETTE_MODES == get_args(CassetteMode) == ("auto", "record", "replay")
    assert options.CASSETTE_MODES is CASSETTE_MODES  # one light definition, not a copy
    assert "--cassette-mode {auto,record,replay}" in cli.parser().format_help()


def test_agent_cell_takes_mode_and_cassette_mode_apart() -> None:
    parsed = parse_cell_line("--cassette c.json --cassette-mode replay --mode dontAsk")
    assert (parsed.cassette, parsed.cassette_mode, parsed.mode) == ("c.json", "replay", "dontAsk")
    assert parse_cell_line("--cassette-mode=record").cassette_mode == "record"
    assert parse_cell_line("--mode auto").mode == "auto"  # a permission mode (the classifier)
    assert parse_cell_line("--mode auto").cassette_mode is None
    assert parse_cell_line("").cassette_mode is None


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("--mode replay", "'replay' is a cassette mode: use --cassette-mode replay"),
        ("--mode record", "'record' is a cassette mode: use --cassette-mode record"),
        ("--cassette-mode dontAsk", "'dontAsk' is a permission mode: use --mode dontAsk"),
        ("--cassette-mode sloppy", "Unknown cassette mode 'sloppy'; choose one of: auto"),
        ("--cassette-mode", "--cassette-mode needs a value"),
    ],
)
def test_agent_cell_mode_mix_ups_say_which_option_to_use(line: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_cell_line(line)


def test_the_magic_help_documents_both_modes() -> None:
    assert "[--cassette-mode auto|record|replay]" in options.CELL_USAGE
    assert "--mode MODE      the permission mode" in HELP
    assert "--cassette-mode auto|record|replay" in HELP
    assert ".cassette_mode (--cassette-mode)" in HELP and ".permission_mode (--mode)" in HELP
    for mode in PERMISSION_MODES:
        assert mode in HELP
    assert "Prompts while one runs" in HELP and "queued" in HELP


def test_traitlets_take_permission_mode_and_cassette_mode() -> None:
    config = Config()
    config.ToolHost.permission_mode = "dontAsk"
    config.ToolHost.cassette_mode = "replay"
    host = ToolHost(config=config)
    assert (host.permission_mode, host.cassette_mode) == ("dontAsk", "replay")
    assert ToolHost().cassette_mode is None
    with pytest.raises(TraitError, match="that is a cassette mode: set cassette_mode"):
        ToolHost(config=Config({"ToolHost": {"permission_mode": "replay"}}))
    with pytest.raises(TraitError, match="that is a permission mode: set permission_mode"):
        ToolHost(config=Config({"ToolHost": {"cassette_mode": "dontAsk"}}))
    with pytest.raises(TraitError, match="is not one of: auto, record, replay"):
        ToolHost().cassette_mode = "sometimes"


def test_cassette_model_takes_cassette_mode_and_the_older_mode(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    assert CassetteModel(path, cassette_mode="replay").mode == "replay"
    assert CassetteModel(path, mode="replay").mode == "replay"  # the older name still works
    assert CassetteModel(path, cassette_mode="record", mode="record").mode == "record"
    assert CassetteModel(path, cassette_mode="record").requested_mode == "record"
    with pytest.raises(ValueError, match="disagree"):
        CassetteModel(path, cassette_mode="record", mode="replay")
    with pytest.raises(ValueError, match=r"Session\(permission_mode=...\)"):
        CassetteModel(path, cassette_mode="dontAsk")  # type: ignore[arg-type]
    assert not path.exists()
