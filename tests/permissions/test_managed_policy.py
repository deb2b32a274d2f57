"""Managed settings (`permissions.settings.managed`): read from real files, merged so that the
second file only restricts, and failing closed when broken.

Hypothesis draws pairs of policy files over every field; whatever they hold, the merged
policy is at least as strict as the system file alone, and the hub's file never adds an
allow rule or a model or a mode.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_toolhost.permissions.settings.managed import ENV, Policy, load_policy, policy_files

MODES = ["default", "acceptEdits", "plan", "dontAsk", "auto", "bypassPermissions"]


def write(folder: Path, name: str, data: Any) -> Path:
    path = folder / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_claude_code_fields_forbid_modes_and_name_the_file(tmp_path: Path) -> None:
    system = write(
        tmp_path,
        "system.json",
        {
            "permissions": {
                "disableBypassPermissionsMode": "disable",
                "deny": ["Bash(rm:*)", "Read(~/.ssh/**)"],
                "allow": ["Bash(ls:*)"],
            },
            "allowManagedPermissionRulesOnly": True,
            "sandbox": {"enabled": True},
            "availableModels": ["claude-haiku-4-5", "claude-sonnet-4-5"],
            "budgets": {"cellUsd": 0.5, "dayUsd": 2},
            "someFutureKey": {"kept": "ignored"},
        },
    )
    policy = load_policy([system])
    assert policy.active and policy.files == (str(system),)
    refused = policy.refuse_mode("bypassPermissions")
    assert refused is not None and str(system) in refused and "bypassPermissions" in refused
    assert policy.refuse_mode("auto") is None and policy.refuse_mode("default") is None
    assert policy.deny == ("Bash(rm:*)", "Read(~/.ssh/**)") and policy.allow == ("Bash(ls:*)",)
    assert policy.managed_rules_only and policy.require_sandbox
    assert policy.refuse_model("claude-haiku-4-5") is None
    refused_model = policy.refuse_model("claude-opus-4-5")
    assert refused_model is not None and "claude-haiku-4-5" in refused_model
    assert policy.budgets.caps() == {"cellUsd": 0.5, "dayUsd": 2}
    status = "\n".join(policy.summary())
    assert str(system) in status and "bypassPermissions" in status and "cellUsd 0.5" in status


def test_the_hubs_file_only_restricts(tmp_path: Path) -> None:
    system = write(
        tmp_path,
        "system.json",
        {
            "permissions": {"allow": ["Bash(ls:*)"], "deny": ["Bash(rm:*)"]},
            "availableModels": ["a", "b"],
            "budgets": {"cellUsd": 1.0, "dayTokens": 500_000},
            "sandbox": {"network": {"allowedDomains": ["pypi.org", "github.com"]}},
        },
    )
    hub = write(
        tmp_path,
        "hub.json",
        {
            "permissions": {
                "allow": ["Bash(*)", "Read"],
                "ask": ["WebFetch"],
                "disableAutoMode": "disable",
            },
            "availableModels": ["b", "c"],
            "budgets": {"cellUsd": 5.0, "sessionUsd": 3.0, "dayTokens": 100_000},
            "sandbox": {"network": {"allowedDomains": ["github.com", "evil.example"]}},
        },
    )
    policy = load_policy([system, hub])
    assert policy.allow == ("Bash(ls:*)",)  # the hub's allow rules are ignored
    assert policy.ask == ("WebFetch",) and policy.deny == ("Bash(rm:*)",)
    assert policy.models == ("b",)
    assert policy.budgets.caps() == {"cellUsd": 1.0, "sessionUsd": 3.0, "dayTokens": 100_000}
    assert policy.allowed_domains == ("github.com",)
    assert policy.refuse_mode("auto") is not None


def test_a_hub_file_alone_adds_no_allow_rule(tmp_path: Path) -> None:
    hub = write(tmp_path, "hub.json", {"permissions": {"allow": ["Bash(*)"]}})
    policy = load_policy([tmp_path / "no-system-file.json", hub])
    assert policy.files == (str(hub),) and policy.allow == ()


@pytest.mark.parametrize(
    ("content", "where"),
    [
        ("{not json", ":1: not valid JSON"),
        ({"permissions": {"disableBypassPermissionsMode": "yes"}}, "disableBypassPermissionsMode"),
        ({"budgets": {"cellUsd": -1}}, "budgets.cellUsd"),
        ({"permissions": {"deny": "Bash(rm:*)"}}, "permissions.deny"),
        ([1, 2], "the file"),
    ],
)
def test_a_broken_policy_fails_closed_naming_the_file_and_field(
    tmp_path: Path, content: Any, where: str
) -> None:
    path = write(tmp_path, "system.json", content)
    policy = load_policy([path])
    assert policy.active and policy.broken is not None
    assert str(path) in policy.broken and where in policy.broken
    assert "no agent cell runs" in policy.broken


def test_no_file_no_policy(tmp_path: Path) -> None:
    assert load_policy([tmp_path / "absent.json"]) == Policy()
    assert not Policy().active and Policy().summary() == []


def test_the_environment_adds_a_file_after_the_system_one() -> None:
    files = policy_files({ENV: "~/hub-policy.json"})
    assert files[0].as_posix() == "/etc/jupyter_toolhost/managed-settings.json"
    assert files[1].name == "hub-policy.json" and "~" not in str(files[1])
    assert len(policy_files({})) == 1


_rules = st.lists(st.sampled_from(["Bash(rm:*)", "Bash(ls:*)", "Read", "WebFetch"]), max_size=3)
_files = st.fixed_dictionaries(
    {},
    optional={
        "permissions": st.fixed_dictionaries(
            {},
            optional={
                "allow": _rules,
                "ask": _rules,
                "deny": _rules,
                "disableBypassPermissionsMode": st.just("disable"),
                "disableAutoMode": st.just("disable"),
            },
        ),
        "allowManagedPermissionRulesOnly": st.booleans(),
        "sandbox": st.fixed_dictionaries({}, optional={"enabled": st.booleans()}),
        "availableModels": st.lists(st.sampled_from(["a", "b", "c"]), max_size=3),
        "budgets": st.fixed_dictionaries(
            {}, optional={"cellUsd": st.floats(0, 10), "dayTokens": st.integers(0, 10**6)}
        ),
    },
)


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_files, _files)
def test_a_second_file_never_widens_the_first(tmp_path: Path, first: Any, second: Any) -> None:
    system = write(tmp_path, "system.json", first)
    hub = write(tmp_path, "hub.json", second)
    alone, both = load_policy([system]), load_policy([system, hub])
    assert both.allow == alone.allow
    assert set(alone.deny) <= set(both.deny) and set(alone.ask) <= set(both.ask)
    assert set(alone.forbidden_modes) <= set(both.forbidden_modes)
    assert both.managed_rules_only >= alone.managed_rules_only
    assert both.require_sandbox >= alone.require_sandbox
    if alone.models is not None:
        assert both.models is not None and set(both.models) <= set(alone.models)
    for name, cap in alone.budgets.caps().items():
        assert both.budgets.caps()[name] <= cap
    for mode in MODES:
        if alone.refuse_mode(mode) is not None:
            assert both.refuse_mode(mode) is not None
