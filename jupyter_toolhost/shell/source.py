"""Where tree-sitter-bash reads a line differently from bash: the text adjusted first.

A backslash-newline joins lines (`join_lines`); ``{`` that starts a word (``{rm,-rf,x}``) is a
word, not a group (`word_braces`); a backslash escape the grammar drops (``echo 1 \\ 2``) is
written as the quoted character it stands for (`quote_skipped_escapes`); text no leaf covers
is reported (`skipped_text`), so the line fails closed rather than being read in part; an
empty backquote substitution (``grep -rn "``" dir``), which the grammar can't read, is
removed (`drop_empty_backquotes`): bash runs nothing for it and it expands to nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node

_LITERAL_CONTEXTS = frozenset({"raw_string", "ansi_c_string", "comment"})
_METACHARACTERS = frozenset(b" \t\n|&;()<>")
_WHOLE = frozenset({"heredoc_body", "comment", "raw_string", "ansi_c_string"})


def _covered(root: Node, data: bytes) -> bytearray:
    """One byte per byte of `data`: non-zero where a leaf of the tree covers it."""
    covered = bytearray(len(data))
    stack = [root]
    while stack:
        node = stack.pop()
        if node.child_count == 0 or node.type in _WHOLE:
            covered[node.start_byte : node.end_byte] = b"\x01" * (node.end_byte - node.start_byte)
        else:
            stack.extend(node.children)
    return covered


def skipped_text(root: Node, data: bytes) -> str | None:
    """Text no leaf of the tree covers (tree-sitter-bash drops a ``-`` before ``<<``, for
    one): a part of the line the analysis would not see. None when everything is covered."""
    covered = _covered(root, data)
    for at, byte in enumerate(data):
        if not covered[at] and byte not in b" \t\n\r":
            end = at
            while end < len(data) and not covered[end] and data[end] not in b" \t\n":
                end += 1
            return data[at:end].decode("utf-8", "replace")
    return None


def quote_skipped_escapes(root: Node, data: bytes) -> bytes | None:
    """`data` with each backslash escape no leaf covers written as ``'X'`` instead (the same
    word for bash); None when there is none."""
    covered = _covered(root, data)
    edits: list[int] = []
    for at, byte in enumerate(data):
        if (
            byte == 0x5C
            and not covered[at]
            and at + 1 < len(data)
            and data[at + 1] not in b"'\n"
            and data[at + 1] < 0x80
            and not _inside_quotes(root, at)
        ):
            edits.append(at)
    if not edits:
        return None
    out = bytearray(data)
    for at in reversed(edits):
        out[at : at + 2] = b"'" + data[at + 1 : at + 2] + b"'"
    return bytes(out)


def _inside_quotes(root: Node, at: int) -> bool:
    node: Node | None = root.descendant_for_byte_range(at, at + 1)
    while node is not None:
        if node.type in ("string", "translated_string", "heredoc_body", "ERROR"):
            return True
        node = node.parent
    return False


def odd_backslashes_at_end(data: bytes) -> bool:
    stripped = data.rstrip(b"\\")
    return (len(data) - len(stripped)) % 2 == 1


def join_lines(root: Node, data: bytes) -> bytes:
    """Remove each backslash-newline bash would remove (not in single quotes, comments or
    quoted here-documents)."""
    keep: list[bytes] = []
    start = 0
    at = data.find(b"\\\n")
    while at >= 0:
        run = at
        while run > 0 and data[run - 1] == 0x5C:
            run -= 1
        if (at - run) % 2 == 0 and not _literal_at(root, data, at):
            keep.append(data[start:at])
            start = at + 2
        at = data.find(b"\\\n", at + 2)
    keep.append(data[start:])
    return b"".join(keep)


def _literal_at(root: Node, data: bytes, at: int) -> bool:
    node: Node | None = root.descendant_for_byte_range(at, at + 1)
    while node is not None:
        if node.type in _LITERAL_CONTEXTS:
            return True
        if node.type == "heredoc_body":
            return not heredoc_expands(node, data)
        node = node.parent
    return False


def heredoc_expands(body: Node, data: bytes) -> bool:
    parent = body.parent
    for child in parent.children if parent is not None else ():
        if child.type == "heredoc_start":
            return not any(c in b"'\"\\" for c in data[child.start_byte : child.end_byte])
    return True


def word_braces(root: Node, data: bytes) -> list[int]:
    """Offsets of ``{`` that tree-sitter took for a group but that start a word in bash."""
    found: list[int] = []
    stack = [root]
    while stack:
        node = stack.pop()
        children = node.children
        if node.type in ("compound_statement", "ERROR"):
            for i, child in enumerate(children[:-1]):
                if (
                    child.type == "{"
                    and children[i + 1].start_byte == child.end_byte
                    and child.end_byte < len(data)
                    and data[child.end_byte] not in _METACHARACTERS
                ):
                    found.append(child.start_byte)
        stack.extend(children)
    return found


def describe_error(root: Node, data: bytes) -> str:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_missing:
            return f"missing {node.type!r} at {_where(node)}"
        if node.is_error:
            text = data[node.start_byte : node.end_byte].decode("utf-8", "replace").strip()
            shown = repr(text[:30]) if text else "the end of the command"
            return f"unexpected {shown} at {_where(node)}"
        stack.extend(reversed(node.children))
    return "syntax error"


def _where(node: Node) -> str:
    row, column = node.start_point
    return f"line {row + 1}, column {column + 1}"


def drop_empty_backquotes(data: bytes) -> bytes | None:
    r"""`data` without its empty backquote substitutions (````), or None when it has none, or
    when the line holds a here-document (whose quoting this scan does not follow).

    The scan follows bash's quoting: single quotes, ``$'...'``, double quotes and backslash
    escapes; inside a backquote substitution a backquote closes it, so ``\`a\`\`b\``` (two
    substitutions side by side) is left alone.
    """
    if b"``" not in data or b"<<" in data:
        return None
    out = bytearray()
    at, size = 0, len(data)
    in_double = in_back = False
    found = False
    while at < size:
        byte = data[at]
        if byte == 0x5C:  # a backslash escapes the next byte (outside single quotes)
            out += data[at : at + 2]
            at += 2
            continue
        if not in_double and byte == 0x27:  # '...' (or $'...', whose \' does not close it)
            ansi_c = at > 0 and data[at - 1] == 0x24
            end = at + 1
            while end < size and data[end] != 0x27:
                end += 2 if ansi_c and data[end] == 0x5C else 1
            out += data[at : end + 1]
            at = end + 1
            continue
        if byte == 0x60:
            if not in_back and data[at + 1 : at + 2] == b"`":
                found = True
                at += 2
                continue
            in_back = not in_back
        elif byte == 0x22 and not in_back:
            in_double = not in_double
        out.append(byte)
        at += 1
    return bytes(out) if found else None
