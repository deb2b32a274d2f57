"""A hub's policy in a real kernel: the student sees it in `%agent status`, and a cell or
`%agent mode` asking for a forbidden mode gets a refusal naming the policy, with nothing
sent and the next cell working."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from kernel_helpers import Kernel, agent_kernel

from jupyter_toolhost.permissions.settings.managed import ENV
from jupyter_toolhost.testing import MessagesServer, Turn, text

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def policy_file(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("policy")
    path = folder / "hub-policy.json"
    path.write_text(
        json.dumps(
            {
                "permissions": {"disableBypassPermissionsMode": "disable", "deny": ["WebFetch"]},
                "budgets": {"cellUsd": 0.25},
            }
        )
    )
    return path


@pytest.fixture(scope="module")
def kernel(server: MessagesServer, policy_file, tmp_path_factory) -> Iterator[Kernel]:
    root = tmp_path_factory.mktemp("student")
    running = agent_kernel(root, server.base_url, env={ENV: str(policy_file)})
    try:
        yield running
    finally:
        running.close()


def test_status_shows_the_policy_and_its_budget(
    kernel: Kernel, server: MessagesServer, policy_file
):
    server.add_turns(Turn([text("Hello.")]))
    assert kernel.run("%%agent --new\nHi").status == "ok"
    shown = kernel.run("%agent status").text()
    assert f"policy in force: {policy_file}" in shown
    assert "forbidden modes: bypassPermissions" in shown and "cellUsd 0.25" in shown
    assert "budgets" in shown and "spent" in shown


def test_a_forbidden_mode_is_refused_naming_the_policy(
    kernel: Kernel, server: MessagesServer, policy_file
):
    before = len(server.requests)
    run = kernel.run("%%agent --mode bypassPermissions\nDo anything")
    assert run.status == "error" and "Traceback" not in run.text()
    assert f"The policy in {policy_file} forbids the bypassPermissions mode" in run.text()
    line = kernel.run("%agent mode bypassPermissions")
    assert f"The policy in {policy_file} forbids" in line.text()
    assert len(server.requests) == before  # nothing was sent
    server.add_turns(Turn([text("Still here.")]))
    assert kernel.run("%%agent\nStill there?").status == "ok"
    assert "default" in kernel.run("%agent status").text()
