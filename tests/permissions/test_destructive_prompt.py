"""A tool's `destructive` flag reaches the approval prompt as a warning (the seed's
`isDestructive`: "affects permission warnings"), per call, and decides nothing by itself."""

from __future__ import annotations

import os
import pty
from dataclasses import replace
from io import StringIO
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from jupyter_toolhost.__main__ import TerminalApprover
from jupyter_toolhost.core.context import ToolUseContext, ToolUseOptions
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.core.tool import Tool, build_tool, tool
from jupyter_toolhost.core.types import ToolCall
from jupyter_toolhost.jupyter.widgets.approval import prompt_html
from jupyter_toolhost.orchestration.pipeline import Pipeline
from jupyter_toolhost.permissions import PermissionEngine
from jupyter_toolhost.permissions.api import (
    DESTRUCTIVE_WARNING,
    ApprovalDecision,
    ApprovalRequest,
)


class BranchInput(BaseModel):
    action: Literal["list", "delete"]
    branch: str


class Recorder:
    """A real `Approver` that allows every call and keeps what it was shown."""

    def __init__(self) -> None:
        self.asked: list[ApprovalRequest] = []

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        self.asked.append(request)
        return ApprovalDecision("allow")


BRANCHES = build_tool(
    name="Branches",
    input_model=BranchInput,
    call=lambda input, _context: f"{input.action} {input.branch}",
    description="Lists or deletes git branches.",
    destructive=lambda input: input.action == "delete",
)


async def asked_for(tmp_path: Path, used: Tool[Any], calls: list[dict[str, Any]]) -> Recorder:
    """Run each input through the real pipeline and permission engine in default mode."""
    recorder = Recorder()
    engine = PermissionEngine(approver=recorder, home=str(tmp_path / "home"))
    context = ToolUseContext(options=ToolUseOptions(tools=[used]), cwd=tmp_path)
    assert context.permission_context.mode == "default"
    pipeline = Pipeline(ResultStore(tmp_path / "results"), can_use_tool=engine)
    for n, input in enumerate(calls):
        result = await pipeline.run(ToolCall(id=f"toolu_{n}", name=used.name, input=input), context)
        assert not result.is_error, result.content
    return recorder


async def test_a_destructive_call_is_asked_with_a_warning(tmp_path: Path) -> None:
    recorder = await asked_for(
        tmp_path,
        BRANCHES,
        [{"action": "list", "branch": "main"}, {"action": "delete", "branch": "old"}],
    )
    listing, deleting = recorder.asked
    assert not listing.destructive and deleting.destructive
    assert DESTRUCTIVE_WARNING not in prompt_html(listing)
    assert DESTRUCTIVE_WARNING in prompt_html(deleting)


async def test_the_decorators_flag_and_a_raising_predicate(tmp_path: Path) -> None:
    @tool(destructive=True, register=False)
    def drop_table(name: str) -> str:
        """Drops a table."""
        return name

    recorder = await asked_for(tmp_path / "a", drop_table, [{"name": "sales"}])
    assert recorder.asked[0].destructive

    def broken(_input: BranchInput) -> bool:
        raise RuntimeError("no answer")

    unsure = build_tool(
        name="Unsure",
        input_model=BranchInput,
        call=lambda input, _context: input.branch,
        description="d",
        destructive=broken,
    )
    recorder = await asked_for(tmp_path / "b", unsure, [{"action": "delete", "branch": "x"}])
    assert not recorder.asked[0].destructive  # a flag that raises counts as False


async def test_the_terminal_prompt_carries_the_warning() -> None:
    request = ApprovalRequest(
        "Branches", "Branches", "delete old", {}, "needs approval", None, (), "toolu_1"
    )
    for destructive in (False, True):
        leader, follower = pty.openpty()
        out = StringIO()
        with os.fdopen(follower, "r") as terminal:
            os.write(leader, b"n\n")
            asked = replace(request, destructive=destructive)
            decision = await TerminalApprover(stdin=terminal, out=out).ask(asked)
        os.close(leader)
        assert decision.choice == "deny"
        assert (DESTRUCTIVE_WARNING in out.getvalue()) is destructive
