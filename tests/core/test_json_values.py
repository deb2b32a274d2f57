"""Narrowing JSON values: what each helper accepts, and what it refuses as a whole."""

from __future__ import annotations

from types import MappingProxyType

from jupyter_toolhost.core.json_values import (
    json_array,
    json_blocks,
    json_mapping,
    json_object,
    json_string_map,
    json_strings,
)


def test_arrays_and_objects_are_passed_through_and_anything_else_is_none() -> None:
    items: list[object] = [1, "a"]
    assert json_array(items) is items
    assert json_array((1, "a")) is None  # a tuple is not what JSON reads
    record = {"a": 1}
    assert json_object(record) is record
    assert json_object(MappingProxyType(record)) is None
    assert json_mapping(MappingProxyType(record)) == record
    assert json_mapping([("a", 1)]) is None


def test_string_lists_and_maps_refuse_a_single_odd_member() -> None:
    assert json_strings(["a", "b"]) == ["a", "b"]
    assert json_strings(["a", 2]) is None
    assert json_strings("ab") is None
    assert json_string_map({"A": "1"}) == {"A": "1"}
    assert json_string_map({"A": 1}) is None
    assert json_string_map({1: "A"}) is None


def test_blocks_are_the_mappings_of_a_list() -> None:
    assert json_blocks([{"type": "text"}, "stray", 3]) == [{"type": "text"}]
    assert json_blocks({"type": "text"}) == []
    assert json_blocks(None) == []
