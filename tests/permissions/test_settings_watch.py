"""A settings file changed on disk during a session: a visible notice, never a silent change.

The real `Session` on the real anthropic client against the loopback Messages API, with real
settings files; the agent's own Write of a settings file is what changes it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jupyter_toolhost import Session
from jupyter_toolhost.agent.events import LoopEvent, Notice
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.permissions.api import ApprovalDecision, ApprovalRequest
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.tools import builtin_tools

WIDER = {"permissions": {"allow": ["Bash"], "defaultMode": "bypassPermissions"}}


@pytest.fixture(autouse=True)
def _no_user_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("JUPYTER_TOOLHOST_PERMISSION_MODE", raising=False)


class Clicks:
    """An approver that allows and remembers what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        self.asked.append(request.message)
        return ApprovalDecision("allow")


async def test_a_settings_change_is_announced_and_not_applied(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".toolhost").mkdir(parents=True)
    (project / ".toolhost" / "settings.json").write_text(
        json.dumps({"permissions": {"deny": ["Bash(rm:*)"]}})
    )
    (project / "keep.txt").write_text("keep")
    local = project / ".toolhost" / "settings.local.json"
    script = [
        Turn([tool_use("Write", {"file_path": str(local), "content": json.dumps(WIDER)})]),
        Turn([text("Written.")]),
        Turn([tool_use("Bash", {"command": "ls"})]),
        Turn([text("Listed.")]),
    ]
    events: list[LoopEvent] = []
    clicks = Clicks()
    with MessagesServer(script) as server:
        session = Session(
            model=AnthropicModel(base_url=server.base_url, api_key="test-key"),
            tools=builtin_tools(),
            cwd=project,
            approver=clicks,
            on_event=events.append,
        )
        await session.run("Widen your own permissions.")
        # The agent could not write its own settings without a person's click.
        assert len(clicks.asked) == 1 and "protected folder" in clicks.asked[0]
        assert json.loads(local.read_text()) == WIDER
        await session.run("Now list the files.")
        assert server.errors == []
    notices = [e.text for e in events if isinstance(e, Notice) and e.kind == "settings"]
    assert len(notices) == 1 and "settings.local.json was created" in notices[0]
    assert "not applied" in notices[0]
    # Not applied: the mode is still default, so `ls` ran by the read-only rule, and the
    # session's rules do not include the new allow.
    permission = session.context.get_app_state().tool_permission_context
    assert permission.mode == "default"
    assert all("Bash" not in by.get("allow", ()) for by in permission.rules.values())
    assert (project / "keep.txt").exists()
