"""A cassette that breaks its format is refused on reading, with the file and the field
(``interactions[0].response.content``) and what belongs there; what was read before still is."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from json_strategies import JSON

from jupyter_toolhost.core.json_checks import Location, json_path
from jupyter_toolhost.model.cassette_format import CassetteError, read_cassette

GOOD: dict[str, Any] = {
    "version": 2,
    "source": {"kind": "scripted", "note": "scripted answers stand in for the model"},
    "session": "0123456789ab",
    "interactions": [
        {
            "key": "ab" * 32,
            "request": {"messages": 1, "tools": [], "last": {"role": "user", "content": "hi"}},
            "response": {
                "content": [{"type": "text", "text": "Hello."}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 3, "output_tokens": 2},
                "model": "scripted",
                "thinking_deltas": {"0": ["a", "b"]},
            },
        }
    ],
}
ANSWER: Location = ("interactions", 0, "response")
FIELDS: list[Location] = [
    ("version",),
    ("interactions",),
    ("interactions", 0),
    ("interactions", 0, "key"),
    ("interactions", 0, "request"),
    ANSWER,
    (*ANSWER, "content"),
    (*ANSWER, "content", 0),
    (*ANSWER, "content", 0, "type"),
    (*ANSWER, "stop_reason"),
    (*ANSWER, "usage"),
    (*ANSWER, "thinking_deltas"),
    (*ANSWER, "error"),
]
_STEP = r'(?:\.?[A-Za-z_][\w-]*|\[\d+\]|\["(?:[^"\\]|\\.)*"\])'
_PROBLEM = re.compile(rf"(?:replayed: |; )({_STEP}+): ")
"""The field at the start of each problem of a refusal (a JSON path, keys quoted or not)."""


def put(data: Any, loc: Location, value: object) -> Any:
    copy = json.loads(json.dumps(data))
    node = copy
    for part in loc[:-1]:
        node = node[part]
    node[loc[-1]] = value
    return copy


def test_the_good_cassette_is_read(tmp_path: Path) -> None:
    path = tmp_path / "good.json"
    path.write_text(json.dumps(GOOD))
    cassette = read_cassette(path)
    assert cassette.interactions == GOOD["interactions"] and cassette.session == "0123456789ab"


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(where=st.sampled_from(FIELDS), value=JSON)
def test_any_value_at_any_field_is_read_or_refused_naming_the_field(
    tmp_path: Path, where: Location, value: object
) -> None:
    path = tmp_path / "cassette.json"
    path.write_text(json.dumps(put(GOOD, where, value)))
    try:
        cassette = read_cassette(path)
    except CassetteError as error:
        message = str(error)
        assert message.startswith(f"The cassette {path} cannot be replayed: "), message
        fields = _PROBLEM.findall(message)
        assert fields, message
        named = json_path(where)
        # Each problem is at the field written, inside it, or at what holds it.
        assert all(f.startswith(named) or named.startswith(f) for f in fields), message
    else:
        assert len(cassette.interactions) == len(put(GOOD, where, value)["interactions"])


@pytest.mark.parametrize(
    ("where", "value", "words"),
    [
        ((*ANSWER, "content"), "Hello.", "interactions[0].response.content: must be a list"),
        (("interactions", 0, "response"), None, "interactions[0]: needs a 'request' object"),
        (("version",), 3, "version: this package reads cassettes of version 1 or 2, not 3"),
        (("interactions",), {}, "interactions: must be a list of recorded interactions"),
    ],
)
def test_a_broken_field_is_named_with_what_belongs_there(
    tmp_path: Path, where: Location, value: object, words: str
) -> None:
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(put(GOOD, where, value)))
    with pytest.raises(CassetteError) as raised:
        read_cassette(path)
    assert f"{path} cannot be replayed: {words}" in str(raised.value)


def test_what_was_read_before_still_is(tmp_path: Path) -> None:
    # A version-2 interaction without a key is never served (so never checked for a
    # response); a `source` that is not an object is no source; 2.0 is version 2.
    path = tmp_path / "old.json"
    loose = {**GOOD, "version": 2.0, "source": "hand-written", "interactions": [{}]}
    path.write_text(json.dumps(loose))
    cassette = read_cassette(path)
    assert (cassette.version, cassette.source, cassette.interactions) == (2, None, [{}])
