"""Managed settings enforced on a real Session, against the loopback Messages API.

The hub's policy file is named in the environment, as a spawner passes it. Every way to a
forbidden mode is tried (the constructor, `set_mode`, the permission context set directly),
the managed rules hold over the user's, the sandbox and the network list follow the policy,
and a broken policy or a model it does not list stops the session before anything is sent.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from session_support import ScriptedApprover

from jupyter_toolhost import Session
from jupyter_toolhost.core.errors import ConfigurationError, UsageError
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.permissions.api import ApprovalDecision
from jupyter_toolhost.permissions.settings.managed import ENV
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

MODEL = "claude-haiku-4-5"


@pytest.fixture
def policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Write the hub's policy file and name it in the environment."""
    path = tmp_path / "hub-policy.json"

    def write(data: Any) -> Path:
        path.write_text(data if isinstance(data, str) else json.dumps(data))
        monkeypatch.setenv(ENV, str(path))
        return path

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return write


def session(tmp_path: Path, server: MessagesServer, **options: Any) -> Session:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    return Session(
        model=AnthropicModel(base_url=server.base_url, api_key="test-key"),
        model_id=options.pop("model_id", MODEL),
        cwd=project,
        **options,
    )


def test_bypass_is_refused_every_way(tmp_path: Path, policy: Any) -> None:
    file = policy({"permissions": {"disableBypassPermissionsMode": "disable"}})
    script = [Turn([tool_use("Write", {"file_path": "x.txt", "content": "x"})]), Turn([text("ok")])]
    with MessagesServer(script) as server:
        approver = ScriptedApprover(ApprovalDecision("deny"))
        made = session(tmp_path, server, permission_mode="bypassPermissions", approver=approver)
        assert made.permission_mode == "default"
        assert any(str(file) in p and "bypassPermissions" in p for p in made.settings_problems)
        with pytest.raises(UsageError, match="forbids the bypassPermissions mode"):
            made.set_mode("bypassPermissions")
        made.set_mode("acceptEdits")  # what the policy does not name still works
        made.set_mode("default")
        # A tool or code that writes the mode into the context directly: still decided as
        # default, so the write asks (and is denied here).
        made.context.set_app_state(
            lambda s: replace(
                s,
                tool_permission_context=replace(
                    s.tool_permission_context, mode="bypassPermissions"
                ),
            )
        )
        import asyncio

        asyncio.run(made.run("write x"))
        assert approver.asked and not (tmp_path / "project" / "x.txt").exists()


async def test_only_managed_allow_rules_count(tmp_path: Path, policy: Any) -> None:
    policy({"allowManagedPermissionRulesOnly": True, "permissions": {"deny": ["Bash(curl:*)"]}})
    script = [Turn([tool_use("Bash", {"command": "touch made.txt"})]), Turn([text("ok")])]
    with MessagesServer(script) as server:
        approver = ScriptedApprover(ApprovalDecision("always"))
        made = session(tmp_path, server, approver=approver, rules=[("Bash(touch:*)", "allow")])
        await made.run("make a file")
        assert len(approver.asked) == 1, "the user's allow rule does not count"
        rules = made.context.get_app_state().tool_permission_context.rules
        assert rules["managed"]["deny"] == ("Bash(curl:*)",)


def test_sandbox_network_and_budgets_follow_the_policy(tmp_path: Path, policy: Any) -> None:
    policy(
        {
            "sandbox": {"enabled": True, "network": {"allowedDomains": ["pypi.org"]}},
            "budgets": {"cellUsd": 0.5},
        }
    )
    project = tmp_path / "project"
    (project / ".toolhost").mkdir(parents=True)
    (project / ".toolhost" / "settings.json").write_text(
        json.dumps(
            {
                "sandbox": {"network": {"allowedDomains": ["pypi.org", "evil.example"]}},
                "budgets": {"cellUsd": 2, "dayTokens": 1000},
            }
        )
    )
    with MessagesServer([]) as server:
        made = session(tmp_path, server, trust_folder=True)
        options = made.context.options.sandbox
        assert options.enabled is True
        assert options.allowed_domains == ("pypi.org",)  # within the policy's list
        guard = made.settings.budget
        assert guard is not None
        assert guard.budgets.caps() == {"cellUsd": 0.5, "dayTokens": 1000}
        assert guard.sources["cellUsd"].startswith("policy:")
        assert guard.sources["dayTokens"].endswith("settings.json")


def test_a_model_the_policy_does_not_list_is_refused(tmp_path: Path, policy: Any) -> None:
    policy({"availableModels": ["claude-haiku-4-5"]})
    with MessagesServer([]) as server:
        with pytest.raises(ConfigurationError, match="allows only these models"):
            session(tmp_path, server, model_id="claude-opus-4-5")
        assert session(tmp_path, server).policy.models == ("claude-haiku-4-5",)
        assert server.requests == []


def test_a_broken_policy_stops_before_anything_is_sent(tmp_path: Path, policy: Any) -> None:
    file = policy('{"permissions": {"deny": "Bash"}}')
    with MessagesServer([]) as server:
        with pytest.raises(ConfigurationError) as raised:
            session(tmp_path, server)
        assert str(file) in str(raised.value) and "permissions.deny" in str(raised.value)
        assert server.requests == []


async def test_the_agent_cannot_write_the_policy(tmp_path: Path, policy: Any) -> None:
    """The policy's folder is protected like `.toolhost/`: asked for in every mode, bypass
    included (a kernel run as root could otherwise write /etc), and the hub's file is
    read-only in the sandbox."""
    import shutil
    import uuid

    hub_file = policy({"budgets": {"cellUsd": 5}})
    probe = Path("/etc/jupyter_toolhost") / f"probe-{uuid.uuid4().hex}.json"
    script = [
        Turn([tool_use("Write", {"file_path": str(probe), "content": "{}"})]),
        Turn([tool_use("Bash", {"command": f"echo '{{}}' > {hub_file}"})]),
        Turn([text("done")]),
    ]
    existed = probe.parent.exists()
    try:
        with MessagesServer(script) as server:
            approver = ScriptedApprover(ApprovalDecision("deny"), ApprovalDecision("allow"))
            made = session(tmp_path, server, approver=approver, permission_mode="bypassPermissions")
            await made.run("change the policy")
        assert not probe.exists()
        assert approver.asked and approver.asked[0].tool_name == "Write"
        assert json.loads(hub_file.read_text()) == {"budgets": {"cellUsd": 5}}
    finally:
        probe.unlink(missing_ok=True)
        if not existed:
            shutil.rmtree(probe.parent, ignore_errors=True)
