"""The small parsers the permission modules share (each exists once, in `paths`). An MCP
tool's server is no longer split out of its name: it is a field of the tool
(tests/mcp/test_mcp_server_names.py)."""

from __future__ import annotations

import pytest

from jupyter_toolhost.permissions.paths import glob_base, glob_shape


@pytest.mark.parametrize(
    ("glob", "base"),
    [
        ("/a/b/*.py", "/a/b"),
        ("/a/b*/c", "/a"),
        ("/a/b", "/a"),  # no wildcard: the directory the name is in
        ("/*", "/"),
        ("/a/[xy]/z", "/a"),
        ("/a/b?/c/*", "/a"),
        ("/home/u/.env*", "/home/u"),
    ],
)
def test_glob_base_is_the_literal_directory_before_the_first_wildcard(glob: str, base: str) -> None:
    assert glob_base(glob) == base


def test_glob_shape_matches_what_the_glob_expands_to() -> None:
    shape = glob_shape("/proj/*/secret*")
    assert shape.fullmatch("/proj/a/secret.txt")
    assert not shape.fullmatch("/proj/a/b/secret.txt")
    assert not shape.fullmatch("/other/a/secret.txt")
