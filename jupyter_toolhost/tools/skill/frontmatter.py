"""Markdown files with a small YAML-like front matter (skills, agent types).

Only what these files need: `key: value` lines, values optionally quoted, lists written
`[a, b]`, `a, b` (for list keys) or as `- item` lines under the key. No dependency on a
YAML library; anything else in the block is kept as a plain string.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Document:
    """A parsed file: its front matter fields and its body."""

    fields: dict[str, str | list[str]] = field(default_factory=dict)
    body: str = ""

    def text(self, key: str, default: str = "") -> str:
        value = self.fields.get(key, default)
        return ", ".join(value) if isinstance(value, list) else value

    def items(self, key: str) -> list[str]:
        """A list field; a plain string value is split on commas."""
        value = self.fields.get(key)
        if value is None:
            return []
        if isinstance(value, list):
            return [v for v in value if v]
        return [part.strip() for part in value.split(",") if part.strip()]


def parse(text: str) -> Document:
    """Split `---` front matter from the body; a file without it is all body."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        return Document(body=text.strip())
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        return Document(body=text.strip())
    return Document(fields=_fields(lines[1:end]), body="\n".join(lines[end + 1 :]).strip())


def read(path: Path) -> Document:
    return parse(path.read_text(encoding="utf-8", errors="replace"))


def _fields(lines: list[str]) -> dict[str, str | list[str]]:
    fields: dict[str, str | list[str]] = {}
    current: str | None = None
    for raw in lines:
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        stripped = line.strip()
        if stripped.startswith("- ") and current is not None:
            existing = fields.get(current)
            items = existing if isinstance(existing, list) else []
            items.append(_unquote(stripped[2:].strip()))
            fields[current] = items
            continue
        if ":" not in line or line[0].isspace():
            continue
        key, _, value = line.partition(":")
        current = key.strip()
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            fields[current] = [_unquote(v.strip()) for v in value[1:-1].split(",") if v.strip()]
        elif value:
            fields[current] = _unquote(value)
        else:
            fields[current] = []
    return fields


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value
