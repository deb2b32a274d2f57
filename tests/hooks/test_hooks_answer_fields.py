"""Any JSON value at any field a hook prints: the hook's answer is still read, each error names
the hook and the field (``hookSpecificOutput.updatedInput``) with what to write, and the
other fields of the answer still count."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from json_strategies import JSON

from jupyter_toolhost.hooks.shell_hooks import interpret

FIELDS = [
    "permissionDecision",
    "permissionDecisionReason",
    "updatedInput",
    "additionalContext",
    "continue",
    "stopReason",
    "updatedMCPToolOutput",
]
GOOD = {"permissionDecision": "ask", "additionalContext": "ctx", "updatedInput": {"command": "ls"}}


@settings(max_examples=200, deadline=None)
@given(field=st.sampled_from(FIELDS), value=JSON, nested=st.booleans())
def test_any_value_at_any_field_is_named_and_the_rest_still_counts(
    field: str, value: object, nested: bool
) -> None:
    fields = {**GOOD, field: value}
    printed = {"hookSpecificOutput": fields} if nested else fields
    output = interpret("PreToolUse", 0, json.dumps(printed), "", source="./check")
    where = f"hookSpecificOutput.{field}" if nested else field
    for error in output.errors:
        assert error.startswith(f"PreToolUse hook `./check` printed {where}: must be "), error
    if field != "additionalContext":
        assert output.additional_context == ("ctx",)
    if field != "updatedInput":
        assert output.updated_input == {"command": "ls"}
    if field not in ("permissionDecision", "continue"):
        assert output.permission_decision == "ask"


def test_a_wrong_field_says_what_to_write_and_keeps_the_others() -> None:
    printed = {"hookSpecificOutput": {"permissionDecision": "deny", "updatedInput": "ls"}}
    output = interpret("PreToolUse", 0, json.dumps(printed), "", source="h")
    assert output.errors == (
        "PreToolUse hook `h` printed hookSpecificOutput.updatedInput: must be an object of the "
        """tool's input fields, such as {"command": "ls"}, not the string "ls\"""",
    )
    assert output.permission_decision == "deny" and output.updated_input is None
