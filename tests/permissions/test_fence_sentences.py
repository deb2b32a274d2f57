"""The boundary as docs/sandbox.md states it, sentence by sentence, in real sessions.

- A path deny is enforced by the operating system for everything Bash runs, in every mode
  (a Makefile's recipe included). Without the sandbox, it is enforced by the command check
  in every mode but bypassPermissions and auto (here: in those two as well, for what the
  command line shows).
- A command deny (``Bash(rm:*)``) covers the command line the agent writes; a program it
  launches (a Makefile) is covered by the sandbox's path rules, not by the command rule.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_bash_sandbox import bwrap, home
from test_fence_rules import MODES, SECRET, project, run_session

from jupyter_toolhost.testing import tool_use
from jupyter_toolhost.tools import bash

__all__ = ["bwrap", "home"]  # fixtures, used by name

RULES = {
    "permissions": {
        "deny": ["Read(./secrets/**)", "Edit(./protected/**)", "Bash(rm:*)"],
        "allow": ["Bash(make leak)", "Bash(make clean)"],
    }
}
MAKEFILE = (
    "leak:\n\tcat secrets/key.txt > data/leak.txt; cat secrets/key.txt\n"
    "clean:\n\trm -f data/old.txt\n\trm -f protected/a.txt || true\n"
)


def tree(root: Path) -> Path:
    project(root, RULES)
    (root / "Makefile").write_text(MAKEFILE)
    (root / "data" / "old.txt").write_text("old")
    return root


@pytest.mark.parametrize("mode", MODES)
async def test_a_path_deny_holds_for_what_bash_launches_in_every_mode(
    bwrap: None, tmp_path: Path, home: Path, mode: str
) -> None:
    root = tree(tmp_path / "p")
    result = await run_session(root, mode, [tool_use("Bash", {"command": "make leak"})])
    assert SECRET not in result
    leaked = root / "data" / "leak.txt"
    assert not leaked.exists() or SECRET not in leaked.read_text()


@pytest.mark.parametrize("mode", MODES)
async def test_without_the_sandbox_the_command_check_holds_the_path_deny(
    tmp_path: Path, home: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(bash.sandbox.SANDBOX_ENV, "0")
    root = tree(tmp_path / "p")
    calls = [
        tool_use("Bash", {"command": "cat secrets/key.txt"}),
        tool_use("Bash", {"command": "echo x > protected/a.txt"}),
    ]
    result = await run_session(root, mode, calls)
    assert SECRET not in result
    assert (root / "protected" / "a.txt").read_text() == "original"


async def test_a_command_deny_covers_the_command_line_not_what_it_launches(
    bwrap: None, tmp_path: Path, home: Path
) -> None:
    root = tree(tmp_path / "p")
    typed = await run_session(
        root, "acceptEdits", [tool_use("Bash", {"command": "rm data/old.txt"})]
    )
    assert "denied" in typed and (root / "data" / "old.txt").exists()
    await run_session(root, "acceptEdits", [tool_use("Bash", {"command": "make clean"})])
    assert not (root / "data" / "old.txt").exists()  # the recipe's rm is not the agent's line
    assert (root / "protected" / "a.txt").read_text() == "original"  # the sandbox's path rule
    assert json.loads((root / ".toolhost" / "settings.json").read_text()) == RULES
