"""The bash the permission engine understands, defined in one place; the rest can't be checked.

The check reads a command line from tree-sitter-bash's syntax tree. It understands a subset
of bash: the node types in `UNDERSTOOD`, and in each word only the expansions listed below.
Anything outside it makes the whole line "can't be checked" (`Unchecked`, with a reason
named the way Claude Code names its own: "A nested command in this command can't be
checked before it runs"). The engine never allows such a line by a rule, the read-only
list, a mode or the auto classifier; it asks (plan and dontAsk deny), and bypassPermissions
denies it while any deny rule exists.

What a word may hold:

- literal text, quotes, ``$'...'``, brace expansion, globs (checked by what they can match);
- ``$name``, ``${name}``, ``${#name}``, positional and special parameters;
- ``${name OP word}`` with OP one of ``- = + ? :- := :+ :? # ## % %% / // /# /% ^ ^^ , ,,``,
  the word itself in this subset; ``${name:N}`` / ``${name:N:M}`` with literal numbers;
- ``$(...)``, backticks and ``<(...)``/``>(...)`` in a word, an assignment's value, a
  redirection target or an unquoted here-document (their commands are checked in turn);
- an array subscript that is a literal number, ``@`` or ``*``.

Outside the subset, because bash evaluates them in ways the check cannot follow:

- arithmetic (``$((...))``, ``((...))``, ``for ((...))``, ``[[ A -eq B ]]``, ``${x:N}``)
  on anything but literal numbers: bash evaluates a variable's value as an expression, and
  an array subscript inside it runs ``$(...)``;
- other subscripts (``a[$(cmd)]=1``, ``${a[$i]}``), indirection (``${!x}``), transformations
  (``${x@P}`` runs the prompt's substitutions);
- a subscript in a name that a builtin evaluates: ``declare``/``local``/``export``/
  ``readonly``/``typeset``/``unset``, ``printf -v``, ``test -v``/``[ -v``/``[[ -v``,
  ``read``, ``mapfile``, ``wait -p``; ``declare`` options other than ``-x -r -g -p -f -F``
  (``-i`` and ``-a`` evaluate values, ``-n`` makes a name reference);
- function definitions (a function shadows a command name, or is called by bash itself,
  as ``command_not_found_handle`` is);
- ``alias``, ``shopt``, ``hash``, ``enable``, ``trap``, ``let``, ``fc``, ``bind``,
  ``complete``, ``compgen``, ``coproc``, and ``set`` options outside ``-aeuxvfnC`` and a few
  ``-o`` names: each changes what a later word or command means;
- an ELF loader (``ld-linux-x86-64.so.2 /bin/rm``) runs a program it names as an argument.

tree-sitter is not imported here: the walk reads the nodes `shell_parse` hands it.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .words import ShellSyntaxError

if TYPE_CHECKING:
    from tree_sitter import Node

NESTED = "A nested command in this command can't be checked before it runs"
ARITHMETIC = (
    "Arithmetic on a value that is not a literal number can run a nested command (an array "
    "subscript in the value), which can't be checked before it runs"
)
SUBSCRIPT = (
    "An array subscript in this command can run a nested command, which can't be checked "
    "before it runs"
)
INDIRECT = "Indirect expansion (${!name}) can't be checked before it runs"
TRANSFORM = (
    "Parameter transformation (${name@...}) can run a nested command, which can't be "
    "checked before it runs"
)
FUNCTION = (
    "A function definition changes what a later command runs, which can't be checked before it runs"
)
TILDE = "Tilde expansion variants (~+, ~-, ~user) require manual approval"
LOADER = (
    "The ELF loader runs a program named in its arguments, which can't be checked before it runs"
)


class Unchecked(ShellSyntaxError):
    """The line holds bash outside the understood subset; the message says what."""


UNDERSTOOD = frozenset(
    {
        "program", "list", "pipeline", "negated_command", "command", "command_name",
        "redirected_statement", "file_redirect", "heredoc_redirect", "herestring_redirect",
        "heredoc_start", "heredoc_body", "heredoc_content", "heredoc_end", "file_descriptor",
        "subshell", "compound_statement", "if_statement", "elif_clause", "else_clause",
        "while_statement", "for_statement", "c_style_for_statement", "do_group",
        "case_statement", "case_item", "variable_assignment", "variable_assignments",
        "declaration_command", "unset_command", "test_command", "word", "number", "string",
        "string_content", "raw_string", "ansi_c_string", "translated_string", "concatenation",
        "brace_expression", "simple_expansion", "expansion", "arithmetic_expansion",
        "command_substitution", "process_substitution", "variable_name",
        "special_variable_name", "subscript", "array", "binary_expression", "unary_expression",
        "ternary_expression", "postfix_expression", "parenthesized_expression",
        "test_operator", "regex", "extglob_pattern", "comment",
    }
)  # fmt: skip
"""Node types of tree-sitter-bash whose effect the check follows (others: `Unchecked`)."""

_ARITHMETIC_NODES = frozenset(
    {"number", "binary_expression", "unary_expression", "ternary_expression",
     "postfix_expression", "parenthesized_expression", "comment"}
)  # fmt: skip
"""What arithmetic may hold: literal numbers and operators (no names, no expansions)."""
_ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_NAME_TESTS = frozenset({"-v", "-R"})
_DECLARE_FLAGS = frozenset("xrgpfF")
_EXPANSION_OPS = frozenset(
    {"-", "=", "+", "?", ":-", ":=", ":+", ":?", "#", "##", "%", "%%", "/", "//", "/#", "/%",
     "^", "^^", ",", ",,", "${", "}"}
)  # fmt: skip
_SUBSCRIPT_INDEX = re.compile(r"\d+|@|\*")

_NORMAL, _ARITH, _TEST = 0, 1, 2
_LEAVES_WITHOUT_CODE = frozenset(
    {"word", "regex", "extglob_pattern", "number", "string_content", "variable_name",
     "special_variable_name", "test_operator"}
)  # fmt: skip
"""Nodes that hold plain text: a ``$(`` or backtick in one is a substitution the grammar did
not read as one (``${x:-`cmd`}``, ``${x#$(cmd)}``)."""
_HIDDEN_SUBSTITUTION = re.compile(r"(?<!\\)(?:\\\\)*(?:`|\$\(|[<>]\()")
_HIDDEN_IN_QUOTES = re.compile(r"(?<!\\)(?:\\\\)*(?:`|\$\()")
"""(Inside double quotes ``<(`` is plain text.)"""


def check_tree(root: Node, data: bytes) -> None:
    """Raise `Unchecked` when the tree holds anything outside the understood subset."""
    stack: list[tuple[Node, int]] = [(root, _NORMAL)]
    while stack:
        node, context = stack.pop()
        kind = node.type
        if kind == "function_definition":
            raise Unchecked(FUNCTION)
        if kind not in UNDERSTOOD:
            raise Unchecked(f"{NESTED} (the shell construct {kind!r} is not followed)")
        if context == _ARITH and kind not in _ARITHMETIC_NODES:
            raise Unchecked(ARITHMETIC)
        tilde = kind == "word" and data.find(b"~", node.start_byte, node.end_byte) >= 0
        if tilde and tilde_variant(_text(node, data)):
            raise Unchecked(TILDE)
        hidden = _HIDDEN_IN_QUOTES if kind == "string_content" else _HIDDEN_SUBSTITUTION
        if kind in _LEAVES_WITHOUT_CODE and hidden.search(_text(node, data)):
            raise Unchecked(NESTED)  # (a substitution the grammar left inside a word)
        children = node.children
        if kind == "subscript":
            _subscript(node, data)
            continue
        if kind == "arithmetic_expansion" or (
            kind == "compound_statement" and children and children[0].type == "(("
        ):
            stack.extend((c, _ARITH) for c in node.named_children)
            continue
        if kind == "c_style_for_statement":
            stack.extend(
                (c, _NORMAL if c.type in ("do_group", "compound_statement") else _ARITH)
                for c in node.named_children
            )
            continue
        if kind == "expansion":
            stack.extend(_expansion(node))
            continue
        if kind == "test_command":
            stack.extend((c, _TEST) for c in node.named_children)
            continue
        if context == _TEST and kind in ("binary_expression", "unary_expression"):
            stack.extend(_test(node, data))
            continue
        if kind in ("declaration_command", "unset_command"):
            _declaration(node, data)
        stack.extend((c, context) for c in node.named_children)


def _text(node: Node, data: bytes) -> str:
    return data[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _subscript(node: Node, data: bytes) -> None:
    index = [c for c in node.named_children if c.type != "variable_name"]
    text = "".join(_text(c, data) for c in index).strip()
    if len(index) > 1 or not _SUBSCRIPT_INDEX.fullmatch(text):
        raise Unchecked(SUBSCRIPT)


def _expansion(node: Node) -> list[tuple[Node, int]]:
    """The children of ``${...}`` to walk next; raises on what the subset leaves out."""
    out: list[tuple[Node, int]] = []
    children = node.children
    substring = False
    for i, child in enumerate(children):
        if child.is_named:
            out.append((child, _ARITH if substring else _NORMAL))
            continue
        op = child.type
        if op == "!":
            raise Unchecked(INDIRECT)
        if op == "@" and i + 1 < len(children) and children[i + 1].type != "}":
            raise Unchecked(TRANSFORM)
        if op == ":":
            substring = True
        elif op not in _EXPANSION_OPS and op != "@" and op != "*":
            raise Unchecked(f"{NESTED} (the expansion operator {op!r} is not followed)")
    return out


def _test(node: Node, data: bytes) -> list[tuple[Node, int]]:
    operators = [c for c in node.named_children if c.type == "test_operator"]
    operator = _text(operators[0], data) if operators else ""
    operands = [c for c in node.named_children if c.type != "test_operator"]
    if operator in _ARITHMETIC_TESTS:
        return [(c, _ARITH) for c in operands]
    if operator in _NAME_TESTS and any("[" in _text(c, data) for c in operands):
        raise Unchecked(SUBSCRIPT)
    return [(c, _TEST) for c in node.named_children]


def _declaration(node: Node, data: bytes) -> None:
    for child in node.named_children:
        text = _text(child, data)
        if child.type == "word" and text[:1] in ("-", "+"):
            if not set(text[1:]) <= _DECLARE_FLAGS:
                raise Unchecked(f"{NESTED} (`{_text(node.children[0], data)} {text}`)")
        elif child.type != "variable_assignment" and "[" in text:
            raise Unchecked(SUBSCRIPT)


# ── commands whose name alone puts them outside the subset ───────────────────────────

_CHANGES_MEANING = {
    "alias": "An alias changes what a later command runs",
    "shopt": "shopt changes how later words are expanded",
    "hash": "hash changes which program a later command name runs",
    "enable": "enable changes which builtins a later command name runs",
    "trap": "trap runs a command line later",
    "let": "let evaluates arithmetic",
    "fc": "fc runs commands from the history",
    "bind": "bind can run a command line",
    "complete": "complete can run a command line",
    "compgen": "compgen can run a command line",
    "coproc": "coproc runs a command the check does not follow",
}
RESERVED = frozenset(
    {"for", "do", "done", "while", "until", "if", "then", "else", "elif", "fi", "case", "esac",
     "in", "select", "function", "!", "{"}
)  # fmt: skip
"""Bash's reserved words: as the name of a simple command they mean the grammar misread a
compound command (``! for ...`` reads as commands named ``for``, ``do``, ``done``)."""
MISREAD = "A compound command the check misread can't be checked before it runs"
_NAME_ARGS = frozenset({"read", "mapfile", "readarray", "wait", "getopts"})
_SET_LETTERS = frozenset("aeuxvfnC")
_SET_NAMES = frozenset(
    {"pipefail", "errexit", "nounset", "xtrace", "verbose", "noglob", "noclobber", "allexport"}
)
_LOADER = re.compile(r"ld(-[\w.-]+)?\.so(\.\d+)*|ld64\.so(\.\d+)*|ld-linux[\w.-]*")


def command_reason(words: Sequence[str]) -> str | None:
    """Why the simple command `words` (wrappers removed, name first) is outside the subset;
    None when it is inside."""
    if not words:
        return None
    name = words[0].rsplit("/", 1)[-1]
    args = words[1:]
    why = _CHANGES_MEANING.get(name)
    if why is not None:
        return f"{why}, which can't be checked before it runs"
    if _LOADER.fullmatch(name):
        return LOADER
    if name == "printf" and "-v" in args[:-1] and "[" in args[args.index("-v") + 1]:
        return SUBSCRIPT
    if name in ("test", "[") and any(
        a in _NAME_TESTS and "[" in b for a, b in itertools.pairwise(args)
    ):
        return SUBSCRIPT
    if name in _NAME_ARGS and any("[" in a for a in args):
        return SUBSCRIPT
    if name == "set":
        return _set_reason(args)
    return None


def _set_reason(args: Sequence[str]) -> str | None:
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--" or not arg.startswith(("-", "+")) or arg in ("-", "+"):
            return None
        letters = arg[1:]
        if "o" in letters:
            named = args[i + 1] if i + 1 < len(args) else ""
            if named and named not in _SET_NAMES:
                return f"`set -o {named}` changes how later commands run, which can't be checked"
            i += 1
        if not set(letters) <= _SET_LETTERS | {"o"}:
            return f"`set {arg}` changes how later commands run, which can't be checked"
        i += 1
    return None


def tilde_variant(text: str) -> bool:
    """Whether unquoted word text starts a tilde form other than ``~`` and ``~/`` (``~+``,
    ``~-``, ``~user``, ``~2``), at its start or after ``=`` or ``:`` (assignments)."""
    for at in [0, *(m.end() for m in re.finditer(r"[=:]", text))]:
        if text.startswith("~", at):
            rest = text[at + 1 :]
            if rest and not rest.startswith("/"):
                return True
    return False
