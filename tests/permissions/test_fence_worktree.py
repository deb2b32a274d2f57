"""Rules anchored where they were written: after EnterWorktree the project's own secrets,
protected files and settings stay protected (Read, Bash in the sandbox, Write), in a real
session on the loopback Messages API with a real git worktree.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_bash_sandbox import bwrap, home
from test_fence_rules import DENY, SECRET, git, project, run_session

from jupyter_toolhost.permissions.api import ApprovalDecision, ApprovalRequest
from jupyter_toolhost.testing import tool_use
from jupyter_toolhost.tools import bash, read, worktree, write

__all__ = ["bwrap", "home"]  # fixtures, used by name


class WorktreeOnly:
    """A person who allows entering the worktree and nothing else."""

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision("allow" if request.tool_name == "EnterWorktree" else "deny")


@pytest.mark.parametrize("mode", ["acceptEdits", "bypassPermissions"])
async def test_the_worktree_does_not_move_the_rules(
    bwrap: None, tmp_path: Path, home: Path, mode: str
) -> None:
    root = project(tmp_path / "p").resolve()
    (root / ".gitignore").write_text("secrets/\n.toolhost/\n")
    git(root, "init", "-q")
    git(root, "add", ".gitignore", "protected", "data")
    git(root, "commit", "-qm", "one")
    settings = root / ".toolhost" / "settings.json"
    calls = [
        tool_use("EnterWorktree", {"name": "side"}),
        tool_use("Read", {"file_path": str(root / "secrets" / "key.txt")}),
        tool_use("Bash", {"command": f"cat {root}/secrets/key.txt"}),
        tool_use("Bash", {"command": f"echo x > {root}/protected/a.txt"}),
        tool_use("Write", {"file_path": str(root / "protected" / "a.txt"), "content": "x"}),
        tool_use("Bash", {"command": f"echo '{{}}' > {settings}"}),
        tool_use("Bash", {"command": "mkdir -p secrets && echo mine > secrets/own.txt && pwd"}),
    ]
    result = await run_session(
        root,
        mode,
        calls,
        tools=[*worktree.make_tools(), bash.make_tool(), read.TOOL, write.TOOL],
        approver=WorktreeOnly(),  # type: ignore[arg-type]
    )
    assert "Created worktree" in result
    assert SECRET not in result
    assert (root / "protected" / "a.txt").read_text() == "original"
    assert json.loads(settings.read_text()) == DENY
