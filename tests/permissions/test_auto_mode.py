"""Auto mode through a real Session: the session's model judges calls that would ask.

The loopback server plays both the agent's model and the classifier (told apart by the
classifier's system prompt), with the real `anthropic` client in between.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from jupyter_toolhost import Session, build_tool
from jupyter_toolhost.core.context import ToolUseContext
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.model.classifier import SYSTEM
from jupyter_toolhost.permissions.api import ApprovalDecision, ApprovalRequest
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

MODEL = "claude-sonnet-4-5"


class NoteInput(BaseModel):
    path: str
    body: str


class Approver:
    def __init__(self) -> None:
        self.asked: list[ApprovalRequest] = []

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        self.asked.append(request)
        return ApprovalDecision("deny", feedback="not now")


def is_classifier(body: dict[str, Any]) -> bool:
    return any(block.get("text") == SYSTEM for block in body.get("system", []))


def script(verdict: Turn) -> Any:
    agent = [Turn([tool_use("WriteNote", {"path": "a.txt", "body": "hi"})]), Turn([text("Done.")])]
    questions: list[dict[str, Any]] = []

    def answer(body: dict[str, Any]) -> Turn:
        if is_classifier(body):
            questions.append(body)
            return verdict
        return agent.pop(0)

    return answer, questions


def note_tool(written: list[str]) -> Any:
    def write(input: NoteInput, context: ToolUseContext) -> str:
        written.append(input.path)
        return "written"

    return build_tool(name="WriteNote", input_model=NoteInput, call=write, description="Write.")


@pytest.mark.parametrize(
    ("verdict", "runs", "asked", "message"),
    [
        (Turn([text("ALLOW")]), True, 0, "written"),
        (Turn([text("DENY")]), False, 0, "auto-mode classifier did not allow"),
        (Turn([text("UNSURE")]), False, 1, "They said: not now"),
        (Turn([text("Well, it depends")]), False, 1, "They said: not now"),
        (Turn(status=500, error_message="down", retry_after=None), False, 1, "not now"),
    ],
)
async def test_auto_mode_asks_the_model_and_falls_back_to_asking(
    tmp_path: Path, verdict: Turn, runs: bool, asked: int, message: str
) -> None:
    answer, questions = script(verdict)
    written: list[str] = []
    approver = Approver()
    with MessagesServer(answer) as server:
        session = Session(
            tools=[note_tool(written)],
            model=AnthropicModel(base_url=server.base_url, api_key="test", max_retries=0),
            model_id=MODEL,
            cwd=tmp_path,
            permission_mode="auto",
            approver=approver,
        )
        assert await session.run("Write a note saying hi to a.txt") == "Done."
    assert server.errors == []
    assert (written == ["a.txt"]) is runs
    assert len(approver.asked) == asked
    [question] = questions
    text_sent = question["messages"][0]["content"][0]["text"]
    assert "Write a note saying hi to a.txt" in text_sent and '"path": "a.txt"' in text_sent
    result = session.messages[2]["content"][0]
    assert result.get("is_error", False) is not runs
    assert message in str(result["content"])


async def test_deny_rules_are_applied_before_the_classifier(tmp_path: Path) -> None:
    (tmp_path / ".toolhost").mkdir()
    (tmp_path / ".toolhost" / "settings.json").write_text(
        '{"permissions": {"deny": ["WriteNote"]}}'
    )
    answer, questions = script(Turn([text("ALLOW")]))
    with MessagesServer(answer) as server:
        session = Session(
            tools=[note_tool([])],
            model=AnthropicModel(base_url=server.base_url, api_key="test"),
            model_id=MODEL,
            cwd=tmp_path,
            permission_mode="auto",
        )
        first = server.requests
        await session.run("Write a note")
    assert server.errors == []
    assert questions == []  # never consulted
    assert "WriteNote" not in [t["name"] for t in first[0].body.get("tools", [])]
