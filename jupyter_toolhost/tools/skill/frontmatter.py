"""Markdown files with a YAML front matter (skills, agent types).

The block between the opening and closing `---` lines is YAML, read with `yaml.safe_load`
as the authors of these files expect (folded `description: >` text, quoted strings, lists in
either form). A block that is not YAML, or not `key: value` fields, is a `FrontMatterError`
that names the file and the line; readers report it instead of guessing.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import yaml

from ...core.errors import ConfigurationError


class FrontMatterError(ConfigurationError, ValueError):
    """A front matter that cannot be read; the message names the file and says why."""


@dataclass(frozen=True, slots=True)
class Document:
    """A parsed file: its front matter fields and its body.

    Scalars are kept as text (`true`, `2`, `2026-01-31` as written by YAML), lists as lists
    of text, an empty value as an empty list; nested mappings (such as `metadata:`) are left
    out, since no reader uses them."""

    fields: dict[str, str | list[str]] = field(default_factory=dict[str, str | list[str]])
    body: str = ""

    def text(self, key: str, default: str = "") -> str:
        value = self.fields.get(key, default)
        return ", ".join(value) if isinstance(value, list) else value

    def items(self, key: str) -> list[str]:
        """A list field. A text value is split on commas and on spaces outside
        parentheses, so `Read, Grep` and `Bash(git diff:*) Read` are both two items."""
        value = self.fields.get(key)
        if value is None:
            return []
        if isinstance(value, list):
            return [v for v in value if v]
        return _split_items(value)


def parse(text: str, *, source: str = "<text>") -> Document:
    """Split `---` front matter from the body; a file without it is all body.

    `source` names the file in a `FrontMatterError`."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        return Document(body=text.strip())
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        return Document(body=text.strip())
    fields = _fields("\n".join(lines[1:end]), source)
    return Document(fields=fields, body="\n".join(lines[end + 1 :]).strip())


def read(path: Path) -> Document:
    """Read and parse a file: `OSError` when it cannot be read, `FrontMatterError` when its
    front matter cannot be parsed."""
    return parse(path.read_text(encoding="utf-8", errors="replace"), source=str(path))


def _fields(block: str, source: str) -> dict[str, str | list[str]]:
    try:
        loaded: Any = yaml.safe_load(block)
    except yaml.YAMLError as exc:
        raise FrontMatterError(
            f"{source}: the front matter is not valid YAML{_where(exc)}"
        ) from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise FrontMatterError(
            f"{source}: the front matter should be `key: value` lines, "
            f"not a {type(loaded).__name__}"
        )
    fields: dict[str, str | list[str]] = {}
    for key, value in cast(dict[object, object], loaded).items():
        if isinstance(value, dict):
            continue
        if value is None:
            fields[str(key)] = []
        elif isinstance(value, list):
            items = cast(list[object], value)
            fields[str(key)] = [_text(item) for item in items if _is_scalar(item)]
        else:
            fields[str(key)] = _text(value)
    return fields


def _where(exc: yaml.YAMLError) -> str:
    """' (line N: problem)', the line counted in the file (after the opening `---`)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if mark is None:
        return f" ({exc})"
    hint = ""
    if problem and "mapping values are not allowed" in problem:
        hint = '; a value that holds ": " must be quoted'
    return f" (line {mark.line + 2}: {problem or exc}{hint})"


def _is_scalar(value: object) -> bool:
    return value is not None and not isinstance(value, dict | list)


def _text(value: object) -> str:
    """A YAML scalar as text (booleans in YAML's spelling; a folded `>` value without the
    line break YAML ends it with)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime.date):
        return value.isoformat()
    return str(value).strip()


def _split_items(value: str) -> list[str]:
    items: list[str] = []
    current: list[str] = []
    depth = 0
    for char in value:
        depth += (char == "(") - (char == ")")
        if depth <= 0 and (char == "," or char.isspace()):
            items.append("".join(current))
            current = []
            continue
        current.append(char)
    items.append("".join(current))
    return [item.strip() for item in items if item.strip()]
