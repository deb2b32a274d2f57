"""Every simple command of a bash command line, read from tree-sitter-bash's syntax tree.

`parse(source)` walks the whole tree: lists, pipelines, subshells, groups, if/while/for/case
bodies, function bodies, ``$(...)``, backticks and ``<(...)``/``>(...)`` anywhere (marked
nested), ``$(...)`` in unquoted here-documents. Each `Simple` holds its words after quote
removal and brace expansion, and its redirections. Where tree-sitter-bash reads a line
differently from bash, the text is adjusted first so that the tree is bash's: a
backslash-newline joins lines, and ``{`` that starts a word (``{rm,-rf,x}``) is a word, not a
group. A tree with ERROR or MISSING nodes raises `ShellSyntaxError`.

tree-sitter is imported on first use, so importing the permissions package stays cheap.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from .source import (
    describe_error,
    drop_empty_backquotes,
    heredoc_expands,
    join_lines,
    odd_backslashes_at_end,
    quote_skipped_escapes,
    skipped_text,
    word_braces,
)
from .subset import check_tree
from .words import (
    Piece,
    Redirect,
    ShellSyntaxError,
    TooManyWords,
    Word,
    decode_ansi_c,
    expand_braces,
    make_word,
    may_expand,
    unescape_double,
    unescape_unquoted,
)

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

MAX_NESTING = 64
"""Substitutions, subshells and groups nested deeper than this are not followed."""

_SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution"})
_EXPANSIONS = frozenset({"simple_expansion", "expansion", "arithmetic_expansion"})
_LITERAL_LEAVES = frozenset({"word", "number", "extglob_pattern", "regex", "test_operator"})
_NESTING = frozenset({"subshell", "compound_statement", "function_definition", "do_group"})
_HEREDOC_PARTS = frozenset({"heredoc_start", "heredoc_body", "heredoc_end", "file_descriptor"})
_SKIPPED = frozenset({"comment", "raw_string", "ansi_c_string", "heredoc_start", "heredoc_end"})
_BACKTICK_ESCAPE = re.compile(r"\\([`\\$])")
_HEREDOC_SUBSTITUTION = re.compile(rb"(?<!\\)(?:\\\\)*(\$\(|`)")
_SENTINELS = [chr(c) for c in range(1, 32) if chr(c) not in "\t\n\r"]


@dataclass(frozen=True, slots=True)
class Simple:
    """One simple command as written: assignments first, then the name and its arguments."""

    words: tuple[Word, ...]
    redirects: tuple[Redirect, ...] = ()
    nested: bool = False
    """It runs inside a substitution (its output feeds another command)."""
    declaration: bool = False
    """``export``, ``declare``, ``local``, ``readonly``, ``typeset``: arguments assign."""


@lru_cache(maxsize=1)
def _parser() -> Parser:
    from tree_sitter import Language, Parser
    from tree_sitter_bash import language

    return Parser(Language(language()))


def parse(source: str, *, level: int = 0) -> list[Simple]:
    """All simple commands of `source`, nested ones included; raises `ShellSyntaxError`."""
    if level > 8:
        raise ShellSyntaxError("commands nested too deeply")
    if "\0" in source:
        raise ShellSyntaxError("the command holds a NUL character")
    data = source.encode("utf-8", "surrogatepass")
    tree = _parse(data)
    if b"\\\n" in data:
        data = join_lines(tree.root_node, data)
        tree = _parse(data)
    if odd_backslashes_at_end(data):
        raise ShellSyntaxError("a backslash ends the command")
    sentinel: str | None = None
    if b"{" in data:
        openers = word_braces(tree.root_node, data)
        if openers:
            sentinel = next((s for s in _SENTINELS if s not in source), None)
            if sentinel is None:
                raise ShellSyntaxError("too many control characters to follow")
            for _ in range(8):
                edited = bytearray(data)
                for at in openers:
                    edited[at] = ord(sentinel)
                data = bytes(edited)
                tree = _parse(data)
                openers = word_braces(tree.root_node, data)
                if not openers:
                    break
    root = tree.root_node
    for _ in range(8):
        # tree-sitter-bash drops the backslash of `\ ` before a number (`echo 1 \ 2`):
        # the escape is written as the quoted character it stands for, and read again.
        quoted = quote_skipped_escapes(root, data)
        if quoted is None:
            break
        data = quoted
        tree = _parse(data)
        root = tree.root_node
    if root.has_error:
        dropped = drop_empty_backquotes(data)
        retried = _parse(dropped) if dropped is not None else None
        if dropped is None or retried is None or retried.root_node.has_error:
            raise ShellSyntaxError(describe_error(root, data))
        data, tree, root = dropped, retried, retried.root_node
    skipped = skipped_text(root, data)
    if skipped is not None:
        raise ShellSyntaxError(f"the grammar skipped {skipped!r}, so the line can't be followed")
    check_tree(root, data)
    return _Builder(data, sentinel, level).build(root)


def _parse(data: bytes) -> Any:
    # The trailing newline matters: without it, tree-sitter-bash takes ~10x longer on
    # pipelines of three or more commands.
    return _parser().parse(data + b"\n")


_Task = tuple["Node", bool, int] | Simple


class _Builder:
    def __init__(self, data: bytes, sentinel: str | None, level: int) -> None:
        self.data = data
        self.level = level
        self.sentinel = sentinel
        self.out: list[Simple] = []
        self.subs: list[Node] = []
        self.ansi_c = False

    def text(self, node: Node) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "surrogatepass")

    def build(self, root: Node) -> list[Simple]:
        stack: list[_Task] = [(root, False, 0)]
        while stack:
            task = stack.pop()
            if isinstance(task, Simple):
                self.out.append(task)
                continue
            node, nested, depth = task
            if depth > MAX_NESTING:
                raise ShellSyntaxError("commands nested too deeply")
            stack.extend(reversed(self.visit(node, nested, depth)))
        return self.out

    def visit(self, node: Node, nested: bool, depth: int) -> list[_Task]:
        """The tasks that stand for `node`, in order: nested walks and finished commands."""
        kind = node.type
        if kind == "command":
            return self.command(node, (), nested, depth)
        if kind == "redirected_statement":
            return self.redirected(node, nested, depth)
        if kind in _SUBSTITUTIONS:
            if (
                self.data[node.start_byte] == 0x60
                and b"\\" in self.data[node.start_byte : node.end_byte]
            ):
                # Inside backticks bash first removes the backslash before ` \ $, then parses.
                inner = _BACKTICK_ESCAPE.sub(r"\1", self.text(node)[1:-1])
                return [replace(c, nested=True) for c in parse(inner, level=self.level + 1)]
            tasks: list[_Task] = []
            for child in node.named_children:
                if child.type.endswith("_redirect"):
                    # `$(<file)`: bash reads the file; a command of no words with a redirect
                    found: list[Redirect] = []
                    operands: list[Word] = []
                    self.redirect(child, found, operands, tasks, True, depth + 1)
                    tasks.append(Simple(tuple(operands), tuple(found), nested=True))
                else:
                    tasks.append((child, True, depth + 1))
            return tasks
        if kind in ("variable_assignment", "variable_assignments"):
            parts = node.named_children if kind == "variable_assignments" else [node]
            words = tuple(self.assignment(p) for p in parts)
            return [*self.take_subs(depth), Simple(words, nested=nested)]
        if kind in ("declaration_command", "unset_command"):
            return self.declaration(node, nested, depth)
        if kind == "test_command":
            body = self.text(node)[2:-2].strip()
            words = (Word("[[", "[["), Word(body, body, dynamic=True))
            return [*self.children(node, nested, depth), Simple(words, nested=nested)]
        if kind == "heredoc_body":
            if not heredoc_expands(node, self.data):
                return []
            self.check_heredoc(node)
            return self.children(node, nested, depth)
        if kind in _SKIPPED:
            return []
        return self.children(node, nested, depth + (kind in _NESTING))

    def check_heredoc(self, body: Node) -> None:
        """tree-sitter-bash misses backticks, and ``$(...)`` after tabs of ``<<-``, in a
        here-document: a substitution it did not read fails the parse."""
        covered = [
            (c.start_byte, c.end_byte) for c in body.named_children if c.type != "heredoc_content"
        ]
        text = self.data[body.start_byte : body.end_byte]
        for match in _HEREDOC_SUBSTITUTION.finditer(text):
            at = body.start_byte + match.start(1)
            if not any(start <= at < end for start, end in covered):
                raise ShellSyntaxError("a command substitution in a here-document")

    def children(self, node: Node, nested: bool, depth: int) -> list[_Task]:
        return [(c, nested, depth) for c in node.named_children]

    def take_subs(self, depth: int) -> list[_Task]:
        found: list[_Task] = [(s, True, depth) for s in self.subs]
        self.subs = []
        return found

    def redirected(self, node: Node, nested: bool, depth: int) -> list[_Task]:
        body = node.child_by_field_name("body")
        redirects: list[Redirect] = []
        extra: list[Word] = []
        later: list[_Task] = []
        for child in node.named_children:
            if child.type.endswith("_redirect"):
                self.redirect(child, redirects, extra, later, nested, depth)
        if body is not None and body.type == "command":
            return [*self.command(body, tuple(redirects), nested, depth, extra), *later]
        tasks: list[_Task] = [] if body is None else [(body, nested, depth)]
        tasks.extend(self.take_subs(depth))
        if redirects:
            tasks.append(Simple(tuple(extra), tuple(redirects), nested=nested))
        return [*tasks, *later]

    def command(
        self,
        node: Node,
        outer: tuple[Redirect, ...],
        nested: bool,
        depth: int,
        outer_words: Sequence[Word] = (),
    ) -> list[_Task]:
        words: list[Word] = []
        redirects: list[Redirect] = []
        later: list[_Task] = []
        for child in node.named_children:
            kind = child.type
            if kind == "variable_assignment":
                words.append(self.assignment(child))
            elif kind.endswith("_redirect"):
                self.redirect(child, redirects, words, later, nested, depth)
            elif kind == "command_name":
                inner = child.named_children
                words.extend(self.words(inner[0] if inner else child))
            elif kind != "comment":
                words.extend(self.words(child))
        simple = Simple((*words, *outer_words), (*redirects, *outer), nested=nested)
        return [*self.take_subs(depth), simple, *later]

    def declaration(self, node: Node, nested: bool, depth: int) -> list[_Task]:
        keyword = node.children[0]
        words = [Word(keyword.type, self.text(keyword))]
        for child in node.named_children:
            if child.type == "variable_assignment":
                words.append(self.assignment(child))
            else:
                words.extend(self.words(child))
        return [*self.take_subs(depth), Simple(tuple(words), nested=nested, declaration=True)]

    def redirect(
        self,
        node: Node,
        redirects: list[Redirect],
        words: list[Word],
        later: list[_Task],
        nested: bool,
        depth: int,
    ) -> None:
        kind = node.type
        fd = ""
        op = ""
        targets: list[Word] = []
        for child in node.children:
            t = child.type
            if not child.is_named:
                op += t
            elif t == "file_descriptor":
                fd = self.text(child)
            elif kind == "heredoc_redirect":
                if t == "heredoc_start":
                    pieces = self.pieces(child)
                    targets.append(make_word(pieces, self.text(child)))
                elif t == "heredoc_body":
                    later.extend(self.visit(child, True, depth + 1))
                elif t.endswith("_redirect"):
                    # `cat <<EOF > out`: the grammar nests the `> out` inside the heredoc
                    self.redirect(child, redirects, words, later, nested, depth)
                elif t not in _HEREDOC_PARTS:
                    later.append((child, nested, depth))
            else:
                targets.append(self.word(child))
        if op.endswith("-") and op in (">&-", "<&-"):
            op, targets = op[:-1], [Word("-", "-"), *targets]
        if not targets:
            raise ShellSyntaxError(f"redirection {op!r} has no target")
        if op in ("&>", "&>>"):
            fd = "&"
        redirects.append(Redirect(op, fd, targets[0]))
        words.extend(targets[1:])

    def assignment(self, node: Node) -> Word:
        value = node.child_by_field_name("value")
        pieces = self.pieces(value) if value is not None else []
        head = self.text(node)[: (value.start_byte if value else node.end_byte) - node.start_byte]
        return make_word([Piece(head), *pieces], self.text(node), ansi_c=self.flag_ansi_c())

    def flag_ansi_c(self) -> bool:
        found, self.ansi_c = self.ansi_c, False
        return found

    def word(self, node: Node) -> Word:
        before = len(self.subs)
        pieces = self.pieces(node)
        extra = {"ansi_c": self.flag_ansi_c(), "substituted": len(self.subs) > before}
        return make_word(pieces, self.text(node), **extra)

    def words(self, node: Node) -> list[Word]:
        """One word, or the words its brace expansion makes."""
        before = len(self.subs)
        pieces = self.pieces(node)
        raw = self.text(node)
        extra = {"ansi_c": self.flag_ansi_c(), "substituted": len(self.subs) > before}
        if self.sentinel is not None:
            raw = raw.replace(self.sentinel, "{")
        if "{" not in raw or not may_expand(pieces):
            return [make_word(pieces, raw, **extra)]
        try:
            expanded = expand_braces(pieces)
        except TooManyWords:
            return [replace(make_word(pieces, raw, **extra), glob=True)]
        if len(expanded) == 1 and expanded[0] == pieces:
            return [make_word(pieces, raw, **extra)]
        return [make_word(p, raw, **extra, braced=True) for p in expanded]

    def pieces(self, node: Node, depth: int = 0) -> list[Piece]:
        if depth > MAX_NESTING:
            raise ShellSyntaxError("words nested too deeply")
        kind = node.type
        if kind == "raw_string":
            return [Piece(self.text(node)[1:-1], quoted=True)]
        if kind == "ansi_c_string":
            self.ansi_c = True
            return [Piece(decode_ansi_c(self.text(node)[2:-1]), quoted=True)]
        if kind in _LITERAL_LEAVES or kind == "heredoc_start" or node.child_count == 0:
            text = self.text(node)
            if self.sentinel is not None:
                text = text.replace(self.sentinel, "{")
            if kind == "heredoc_start":
                return [Piece(_bare(text), quoted=text != _bare(text))]
            return unescape_unquoted(text)
        if kind == "translated_string":
            self.ansi_c = True
            inner = node.named_children
            return self.pieces(inner[0], depth + 1) if inner else [Piece("", quoted=True)]
        if kind == "string":
            return self.string(node, depth)
        if kind in _SUBSTITUTIONS:
            self.subs.append(node)
            return [Piece(self.text(node), dynamic=True)]
        if kind == "concatenation":
            return self.concatenation(node, depth)
        if kind == "brace_expression":
            return [Piece(self.text(node))]
        self.collect_subs(node)
        return [Piece(self.text(node), dynamic=True)]

    def string(self, node: Node, depth: int) -> list[Piece]:
        pieces: list[Piece] = [Piece("", quoted=True)]
        at = node.start_byte + 1
        end = node.end_byte - 1
        for child in node.named_children:
            if child.start_byte > at:
                pieces.append(Piece(unescape_double(self.slice(at, child.start_byte)), True))
            if child.type == "string_content":
                pieces.append(Piece(unescape_double(self.text(child)), quoted=True))
            else:
                if child.type in _SUBSTITUTIONS:
                    self.subs.append(child)
                else:
                    self.collect_subs(child)
                pieces.append(Piece(self.text(child), quoted=True, dynamic=True))
            at = child.end_byte
        if end > at:
            pieces.append(Piece(unescape_double(self.slice(at, end)), quoted=True))
        return pieces

    def concatenation(self, node: Node, depth: int) -> list[Piece]:
        pieces: list[Piece] = []
        at = node.start_byte
        for child in node.children:
            if child.start_byte > at:
                pieces.extend(unescape_unquoted(self.slice(at, child.start_byte)))
            pieces.extend(self.pieces(child, depth + 1))
            at = child.end_byte
        return pieces

    def slice(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8", "surrogatepass")

    def collect_subs(self, node: Node) -> None:
        """Queue the substitutions inside an expansion (``${x:-$(cmd)}``, ``$(( $(cmd) ))``)."""
        stack = list(node.named_children)
        while stack:
            child = stack.pop()
            if child.type in _SUBSTITUTIONS:
                self.subs.append(child)
            else:
                stack.extend(child.named_children)


def _bare(text: str) -> str:
    return text.strip("'\"").replace("\\", "")
