"""`--think N|off` in every front end: the `%%agent` option, `c.ToolHost.think` (parsed,
and read from a real kernel's config file), and `python -m jupyter_toolhost --think`
(a subprocess against the loopback Messages API). Bad budgets fail with a message that
says what to give, and nothing is sent."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import get_type_hints

import pytest
from anthropic.types import ThinkingConfigEnabledParam
from kernel_helpers import Kernel, agent_kernel
from test_cli import against, run_cli
from traitlets import TraitError
from traitlets.config import Config

from jupyter_toolhost.__main__ import parser
from jupyter_toolhost.jupyter.config import ToolHost
from jupyter_toolhost.jupyter.magic.options import (
    THINK_MIN,
    CellOptions,
    UsageError,
    parse_cell_line,
    parse_think,
    thinking_param,
)
from jupyter_toolhost.model.thinking import check_thinking
from jupyter_toolhost.testing import MessagesServer, Turn, text, thinking

BAD = [
    ("-5", "-5 is below the API's minimum thinking budget of 1024 tokens"),
    ("500", "500 is below the API's minimum thinking budget of 1024 tokens"),
    ("1023", "1023 is below the API's minimum"),
    ("0", "0 is below the API's minimum"),
    ("lots", "takes a number of tokens (at least 1024"),
    ("1e4", "not '1e4'"),
    ("4_096", "not '4_096'"),
    ("４０９６", "not '４０９６'"),  # full-width digits: int() would take them
    ("2048.0", "not '2048.0'"),
    ("on", "not 'on'"),
    ("", "not ''"),
]


# ── the magic ───────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("line", "budget"),
    [
        ("--think 4096", 4096),
        ("--think=1024", 1024),
        ("--think off", 0),
        ("--think OFF", 0),
        ("--think=off --new", 0),
        ("--mode dontAsk --think 20000 --tools Read", 20000),
        ("", None),
    ],
)
def test_the_cell_option_reads_a_budget_or_off(line: str, budget: int | None) -> None:
    assert parse_cell_line(line).think == budget


@pytest.mark.parametrize(("value", "message"), BAD)
def test_the_cell_option_refuses_bad_budgets(value: str, message: str) -> None:
    with pytest.raises(UsageError) as raised:
        parse_cell_line(f"--think={value}")
    assert message in str(raised.value)
    assert "or off" in str(raised.value)


def test_the_cell_option_needs_a_value() -> None:
    with pytest.raises(UsageError, match="--think needs a value"):
        parse_cell_line("--think")
    with pytest.raises(UsageError, match="--think needs a value"):
        parse_cell_line("--mode dontAsk --think")


def test_a_value_that_looks_like_an_option_is_not_swallowed_silently() -> None:
    # `--think --new` takes "--new" as the value and says it is not a budget.
    with pytest.raises(UsageError, match="not '--new'"):
        parse_cell_line("--think --new")


def test_the_budget_becomes_the_apis_thinking_object() -> None:
    param = thinking_param(4096)
    assert param == {"type": "enabled", "budget_tokens": 4096, "display": "summarized"}
    assert set(param) <= set(get_type_hints(ThinkingConfigEnabledParam, include_extras=True))
    assert check_thinking(param) == param  # what Session(thinking=...) takes
    assert thinking_param(0) is None and thinking_param(None) is None
    assert CellOptions().think is None


def test_the_help_documents_the_option() -> None:
    from jupyter_toolhost.jupyter.magic.magics import HELP
    from jupyter_toolhost.jupyter.magic.options import CELL_USAGE

    assert "[--think N|off]" in CELL_USAGE
    words = " ".join(HELP.split())
    assert "--think N|off" in words and "billed as output tokens" in words


# ── traitlets ───────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("value", "budget"), [(4096, 4096), ("2048", 2048), ("off", 0), (False, 0), (None, None)]
)
def test_the_config_takes_the_same_values(value: object, budget: int | None) -> None:
    assert ToolHost(config=Config({"ToolHost": {"think": value}})).think == budget


def test_the_config_is_off_by_default() -> None:
    assert ToolHost().think is None


@pytest.mark.parametrize(
    "value", [-5, 500, "lots", True, "1e4", "2048.5", 2048.5, [4096]], ids=repr
)
def test_the_config_refuses_bad_budgets(value: object) -> None:
    with pytest.raises(TraitError) as raised:
        ToolHost(config=Config({"ToolHost": {"think": value}}))
    assert "think" in str(raised.value)


def test_the_config_error_names_the_setting() -> None:
    with pytest.raises(TraitError) as raised:
        ToolHost(config=Config({"ToolHost": {"think": 500}}))
    assert str(raised.value).startswith("c.ToolHost.think 500 is below")
    with pytest.raises(UsageError, match=r"e\.g\. c\.ToolHost\.think = 4096"):
        parse_think("lots", name="c.ToolHost.think")


def _kernel_with_config(root: Path, server: MessagesServer, setting: str) -> Kernel:
    profile = root / "ipython" / "profile_default"
    profile.mkdir(parents=True)
    (profile / "ipython_kernel_config.py").write_text(f"c.ToolHost.think = {setting}\n")
    return agent_kernel(root, server.base_url, env={"IPYTHONDIR": str(root / "ipython")})


def test_a_kernel_config_file_turns_thinking_on(server: MessagesServer, tmp_path: Path) -> None:
    kernel = _kernel_with_config(tmp_path, server, "3000")
    try:
        sent_before = len(server.requests)
        server.add_turns(Turn([thinking("Configured."), text("Thought about it.")]))
        run = kernel.run("%%agent\nThink first.", timeout=60)
        assert run.status == "ok", run.text()
        [body] = [r.body for r in server.requests[sent_before:] if r.path == "/v1/messages"]
        assert body["thinking"] == {
            "type": "enabled",
            "budget_tokens": 3000,
            "display": "summarized",
        }
        # A cell's option wins over the config, for the rest of the conversation...
        server.add_turns(Turn([text("Off.")]))
        assert kernel.run("%%agent --think off\nNo.", timeout=60).status == "ok"
        assert "thinking" not in server.requests[-1].body
        # ...and --new starts again from the config.
        server.add_turns(Turn([thinking("Again."), text("On.")]))
        assert kernel.run("%%agent --new\nAgain.", timeout=60).status == "ok"
        assert server.requests[-1].body["thinking"]["budget_tokens"] == 3000
        assert server.errors == [], server.errors
    finally:
        kernel.close()


def test_a_bad_kernel_config_stops_at_load_and_says_why(
    server: MessagesServer, tmp_path: Path
) -> None:
    profile = tmp_path / "ipython" / "profile_default"
    profile.mkdir(parents=True)
    (profile / "ipython_kernel_config.py").write_text("c.ToolHost.think = 500\n")
    sent_before = len(server.requests)
    with pytest.raises(RuntimeError) as raised:
        agent_kernel(tmp_path, server.base_url, env={"IPYTHONDIR": str(tmp_path / "ipython")})
    assert "c.ToolHost.think 500 is below the API's minimum thinking budget" in str(raised.value)
    assert len(server.requests) == sent_before


# ── the command line ────────────────────────────────────────────────────────────────────


def test_the_cli_is_off_by_default_and_takes_a_budget() -> None:
    assert parser().parse_args(["hi"]).think == 0
    assert parser().parse_args(["--think", "4096", "hi"]).think == 4096
    assert parser().parse_args(["--think=off", "hi"]).think == 0


@pytest.mark.parametrize(("value", "message"), BAD)
def test_the_cli_refuses_bad_budgets_before_sending(
    value: str, message: str, tmp_path: Path
) -> None:
    with MessagesServer() as server:
        done = run_cli(
            f"--think={value}", "think", cwd=tmp_path, env_extra=against(server, tmp_path / "u")
        )
        assert server.requests == []
    assert done.returncode == 2
    assert "argument --think" in done.stderr and message in done.stderr


def test_the_cli_thinks_and_reports_thinking_tokens(tmp_path: Path) -> None:
    script = [Turn([thinking("Let me think about the answer."), text("42.")], thinking_tokens=77)]
    with MessagesServer(script) as server:
        done = run_cli(
            "--think",
            "2048",
            "What is it?",
            cwd=tmp_path,
            env_extra=against(server, tmp_path / "u"),
        )
        assert server.errors == [], server.errors
        [body] = [r.body for r in server.requests if r.path == "/v1/messages"]
    assert done.returncode == 0, done.stderr
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048, "display": "summarized"}
    assert done.stdout.strip() == "42."  # the thinking text is not printed as the answer
    assert "✻ Thinking…" in done.stderr
    assert "(incl. 77 thinking)" in done.stderr


def test_the_cli_help_documents_the_option() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "jupyter_toolhost", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "--think N|off" in done.stdout and "billed as output tokens" in done.stdout
    assert str(THINK_MIN) in done.stdout
