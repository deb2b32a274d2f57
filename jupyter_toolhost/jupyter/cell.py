"""The entry point a transformed `%%agent` cell awaits, and the kernel's one `AgentHost`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .host import AgentHost

_host: AgentHost | None = None


def set_host(host: AgentHost | None) -> None:
    global _host
    _host = host


def current_host() -> AgentHost:
    """The host made by `%load_ext jupyter_toolhost`."""
    if _host is None:
        raise RuntimeError("jupyter_toolhost is not loaded: run %load_ext jupyter_toolhost")
    return _host


async def run_agent_cell(line: str, body: str) -> None:
    """What a `%%agent` cell runs: the options line and the prompt."""
    await current_host().run_cell(line, body)


async def run_agent_command(line: str) -> None:
    """What a cell holding only an awaiting `%agent` subcommand (compact) runs."""
    from .magic.commands import run_command_cell  # on first use: keeps `%load_ext` fast

    await run_command_cell(current_host(), line)
