"""The JSON-path names, the leaving-out and the line finding that every edge's errors use."""

from __future__ import annotations

from typing import Annotated

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from jupyter_toolhost.core.json_checks import (
    describe_value,
    field_problems,
    json_path,
    line_of,
    value_at,
    without,
)


class _Entry(BaseModel):
    model_config = ConfigDict(strict=True)
    args: list[str] = []
    timeout: Annotated[float, Field(gt=0)] = 1.0


_ENTRIES = TypeAdapter(dict[str, _Entry])


def test_paths_name_keys_and_indexes_as_written() -> None:
    assert json_path(("permissions", "allow", 3)) == "permissions.allow[3]"
    assert json_path(("mcpServers", "db", "command")) == "mcpServers.db.command"
    assert json_path(("mcpServers", "my db", "args", 0)) == 'mcpServers["my db"].args[0]'
    assert json_path(("hooks", 'a"b')) == 'hooks["a\\"b"]'


def test_problems_are_named_by_field_with_the_table_s_words() -> None:
    try:
        _ENTRIES.validate_python({"db": {"args": ["a", 3], "timeout": -1}, "ok": {}})
    except ValidationError as error:
        found = field_problems(
            error, expected={"*.timeout": "a positive number of seconds"}, at=("mcpServers",)
        )
    else:
        raise AssertionError("the entry should be refused")
    assert [str(p) for p in found] == [
        "mcpServers.db.args[1]: must be a string, not the number 3",
        "mcpServers.db.timeout: must be a positive number of seconds, not the number -1",
    ]


def test_values_are_described_as_a_person_would_name_them() -> None:
    assert [describe_value(v) for v in (None, True, 3, "", "yes", [], {})] == [
        "null",
        "true",
        "the number 3",
        "an empty string",
        'the string "yes"',
        "a list",
        "an object",
    ]


def test_without_leaves_out_items_from_the_last_and_never_changes_its_input() -> None:
    data = {"a": [0, 1, 2, 3], "b": {"c": 1, "d": 2}}
    smaller = without(data, [("a", 1), ("a", 3), ("b", "c"), ("b",), ("missing",)])
    assert smaller == {"a": [0, 2]}
    assert data == {"a": [0, 1, 2, 3], "b": {"c": 1, "d": 2}}


@given(st.lists(st.integers(0, 9), max_size=10), st.sets(st.integers(0, 12)))
def test_without_removes_exactly_the_items_named(items: list[int], gone: set[int]) -> None:
    assert without({"x": items}, [("x", i) for i in gone]) == {
        "x": [item for i, item in enumerate(items) if i not in gone]
    }


def test_the_line_follows_the_keys_then_the_value() -> None:
    text = '{\n  "deny": ["Bash"],\n  "allow": [\n    "Read",\n    "Bash"\n  ]\n}\n'
    assert line_of(text, ("allow", 1), "Bash") == 5
    assert line_of(text, ("allow",), None) == 3
    assert line_of(text, ("nowhere",), None) is None
    assert value_at({"allow": ["Read", "Bash"]}, ("allow", 1)) == "Bash"
