"""EnterPlanMode/ExitPlanMode and AskUserQuestion through the real loop and client."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from session_support import Router, ScriptedApprover, last_results, result_text, session_for

from jupyter_toolhost.permissions.api import ApprovalDecision
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.tools import ask_user, plan_mode, read
from jupyter_toolhost.tools.ask_user import Question

PLAN = "1. Read data.csv\n2. Add a `total` column\n3. Verify the sums"


async def test_plan_rejected_then_approved_restores_the_previous_mode(tmp_path: Path) -> None:
    approver = ScriptedApprover(
        ApprovalDecision("deny", feedback="Also verify the row count."),
        ApprovalDecision("allow"),
    )
    modes: list[str] = []
    router = Router(
        {
            "MAIN-PLAN": [
                Turn([tool_use("EnterPlanMode", {})]),
                Turn([tool_use("ExitPlanMode", {"plan": PLAN})]),
                Turn([tool_use("ExitPlanMode", {"plan": PLAN + "\n4. Check the row count"})]),
                Turn([text("Plan approved; starting.")]),
            ]
        }
    )
    with MessagesServer(router) as server:
        session = session_for(
            server,
            tmp_path,
            [*plan_mode.make_tools(), read.make_tool()],
            approver=approver,
            permission_mode="acceptEdits",
        )
        session.context.app_state.subscribe(
            lambda state: modes.append(state.tool_permission_context.mode)
        )
        result = await session.run("MAIN-PLAN: add a total column")

    assert server.errors == []
    assert result == "Plan approved; starting."
    seen = router.seen["MAIN-PLAN"]
    [entered] = last_results(seen[1])
    assert "Entered plan mode" in result_text(entered)
    [rejected] = last_results(seen[2])
    assert rejected.get("is_error")
    assert "denied" in result_text(rejected) and "Also verify the row count." in result_text(
        rejected
    )
    [approved] = last_results(seen[3])
    assert not approved.get("is_error")
    assert "approved your plan" in result_text(approved) and "acceptEdits" in result_text(approved)
    # The approver saw the plan itself, twice; the mode went plan -> (rejected: still plan)
    # -> back to what it was before.
    assert [a.tool_name for a in approver.asked] == ["ExitPlanMode", "ExitPlanMode"]
    assert PLAN in approver.asked[0].message
    assert modes == ["plan", "acceptEdits"]
    permissions = session.context.permission_context
    assert (permissions.mode, permissions.pre_plan_mode) == ("acceptEdits", None)


async def test_plan_exit_without_approver_or_outside_plan_mode_fails(tmp_path: Path) -> None:
    router = Router(
        {
            "MAIN-NOPLAN": [
                Turn([tool_use("ExitPlanMode", {"plan": PLAN})]),
                Turn([tool_use("EnterPlanMode", {})]),
                Turn([tool_use("ExitPlanMode", {"plan": PLAN})]),
                Turn([text("stuck in plan mode")]),
            ]
        }
    )
    with MessagesServer(router) as server:
        session = session_for(server, tmp_path, plan_mode.make_tools())
        await session.run("MAIN-NOPLAN")
    assert server.errors == []
    seen = router.seen["MAIN-NOPLAN"]
    [outside] = last_results(seen[1])
    assert outside.get("is_error") and "Not in plan mode" in result_text(outside)
    [headless] = last_results(seen[3])
    assert headless.get("is_error")
    assert session.context.permission_context.mode == "plan"


class Asker:
    def __init__(self) -> None:
        self.asked: list[Sequence[Question]] = []

    async def ask_questions(self, questions: Sequence[Question]) -> Mapping[str, str]:
        self.asked.append(questions)
        return {q.question: q.options[1].label for q in questions}


QUESTION = {
    "question": "Which file format should the export use?",
    "header": "Format",
    "options": [
        {"label": "CSV (recommended)", "description": "Plain text, opens anywhere."},
        {"label": "Parquet", "description": "Typed and compact."},
    ],
    "multiSelect": False,
}


async def test_ask_user_question_with_an_asker_and_headless(tmp_path: Path) -> None:
    asker = Asker()
    router = Router(
        {
            "MAIN-ASK": [
                Turn([tool_use("AskUserQuestion", {"questions": [QUESTION]})]),
                Turn([text("Parquet it is.")]),
            ],
            "HEADLESS-ASK": [
                Turn([tool_use("AskUserQuestion", {"questions": [QUESTION]})]),
                Turn([text("Assuming CSV.")]),
            ],
        }
    )
    with MessagesServer(router) as server:
        session = session_for(server, tmp_path / "a", [ask_user.make_tool()])
        session.context.options = replace(session.context.options, question_asker=asker)
        assert await session.run("MAIN-ASK: export") == "Parquet it is."
        headless = session_for(server, tmp_path / "b", [ask_user.make_tool()])
        assert await headless.run("HEADLESS-ASK: export") == "Assuming CSV."

    assert server.errors == []
    [answered] = last_results(router.seen["MAIN-ASK"][1])
    assert result_text(answered) == (
        'User has answered your questions: "Which file format should the export use?"='
        '"Parquet". You can now continue with the user\'s answers in mind.'
    )
    assert [q.header for q in asker.asked[0]] == ["Format"]
    [refused] = last_results(router.seen["HEADLESS-ASK"][1])
    assert refused.get("is_error") and "No user is available" in result_text(refused)
