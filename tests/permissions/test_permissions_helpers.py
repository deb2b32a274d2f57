"""The small parsers the permission modules share (each exists once, in `paths` or `facts`)."""

from __future__ import annotations

import pytest

from jupyter_toolhost.permissions.facts import mcp_server
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


@pytest.mark.parametrize(
    ("name", "server"),
    [
        ("mcp__forge__create_issue", "forge"),
        ("mcp__forge", "forge"),
        ("mcp__my-srv__a__b", "my-srv"),
        ("Bash", None),
        ("mcpforge__x", None),
        ("xmcp__forge__x", None),
    ],
)
def test_mcp_server_of_a_tool_name(name: str, server: str | None) -> None:
    assert mcp_server(name) == server
