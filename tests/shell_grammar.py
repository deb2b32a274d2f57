"""Denied actions nested in every kind of word and construct the bash grammar has.

Not a test module: `test_shell_generator.py` draws from it (hypothesis) and enumerates it.

`SPELLINGS` are ways to write each denied action (delete the victim, read the Read-denied
secret, write into the Edit-denied folder): paths through tilde forms, ``/proc``, globs,
brace expansion and quoting mixes, programs through absolute paths, escapes and wrappers.
`LAYERS` each put a command somewhere bash runs it: as a command (lists, pipelines, groups,
conditionals, loops, functions, ``eval``, ``source``, aliases, traps, coprocesses, ``bash
-c``...) or inside a word, as a substitution (array subscripts, arithmetic, every
parameter-expansion operator, ``[[ ]]``, ``-v`` tests, ``printf -v``, ``read``,
declarations, assignments, here-documents, redirection targets, case patterns, brace
expansion...). A layer marked ``prefix`` only wraps a simple command.

Every layer and every spelling is itself checked against bash (`test_shell_generator.py`):
each layer, wrapped around ``rm -f victim``, really deletes the victim, and each spelling at
the top level really does its harm; so a generated command that the engine allows is a
command that would do harm.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass

SPELLINGS: dict[str, tuple[str, ...]] = {
    "delete": (
        "rm -f victim",
        "rm -f ./victim",
        "/bin/rm -f victim",
        "/usr/bin/rm -f victim",
        "\\rm -f victim",
        "r\\m -f victim",
        "'rm' -f victim",
        '"rm" -f victim',
        "$'\\x72m' -f victim",
        "rm -f v[i]ctim",
        "rm -f vic*m",
        "rm -f {victim,none}",
        "rm -f ~+/victim",
        "rm -f $PWD/victim",
        "command rm -f victim",
        "env rm -f victim",
        "find . -maxdepth 1 -name victim -delete",
    ),
    "read": (
        "cat secrets/key.txt",
        "cat ./secrets/key.txt",
        "cat secrets//key.txt",
        "cat work/../secrets/key.txt",
        "cat ~+/secrets/key.txt",
        "cat /proc/self/cwd/secrets/key.txt",
        "cat $PWD/secrets/key.txt",
        "cat s*/key.txt",
        "cat [s]ecrets/key.txt",
        "cat secret?/key.txt",
        "cat secrets/*",
        "cat sec{rets,}/key.txt",
        "cat \"secrets\"/'key'.txt",
        "cat < secrets/key.txt",
        "head -c 99 secrets/key.txt",
        "base64 secrets/key.txt",
        "grep -r token secrets",
    ),
    "write": (
        "echo pwned > protected/f.txt",
        "echo pwned >> protected/f.txt",
        "echo pwned >| protected/f.txt",
        "echo pwned > ./protected/f.txt",
        "echo pwned > ~+/protected/f.txt",
        "echo pwned > p*/f.txt",
        "echo pwned > [p]rotected/f.txt",
        "tee protected/f.txt <<< pwned",
        "cp work/notes.txt protected/f.txt",
        "sed -i s/protected/pwned/ protected/f.txt",
        "truncate -s 0 protected/f.txt",
        "touch protected/new",
        "mv work/notes.txt protected/",
    ),
}
"""Each a complete command that does its harm when bash runs it in the project."""
SIMPLE = frozenset(s for spellings in SPELLINGS.values() for s in spellings)
"""Every spelling is a simple command (a prefix layer may wrap it)."""


@dataclass(frozen=True, slots=True)
class Layer:
    """One place bash runs a command: `wrap(command, substitution style)` -> command."""

    name: str
    wrap: Callable[[str, str], str]
    prefix: bool = False
    """It wraps a simple command only (``env``, ``nice``...)."""


def substitution(command: str, style: str) -> str:
    """`command` as a word that runs it: ``$(...)`` or backquotes (when it has none)."""
    if style == "backquote" and "`" not in command and "\\" not in command:
        return f"`{command}`"
    return f"$({command})"


def _c(template: str) -> Callable[[str, str], str]:
    """A layer that takes the command as it is ({c}) or shell-quoted ({q})."""
    return lambda c, _style: template.format(c=c, q=shlex.quote(c))


def _w(template: str) -> Callable[[str, str], str]:
    """A layer that takes the command as a substitution ({s}), or one inside a quoted word
    ({qa}: ``'a[<s>]'``, which the builtin expands itself)."""

    def wrap(c: str, style: str) -> str:
        s = substitution(c, style)
        return template.format(s=s, qa=shlex.quote(f"a[{s}]"), qs=shlex.quote(s))

    return wrap


_COMMAND_LAYERS = {
    "sequence": "true; {c}",
    "and": "true && {c}",
    "or": "false || {c}",
    "pipeline": "{c} | cat",
    "pipeline right": "echo x | {c}",
    "negation": "! {c}",
    "subshell": "( {c} )",
    "group": "{{ {c}; }}",
    "if body": "if true; then {c}; fi",
    "if condition": "if {c}; then :; fi",
    "elif body": "if false; then :; elif true; then {c}; fi",
    "else body": "if false; then :; else {c}; fi",
    "while condition": "while {c}; do break; done",
    "until body": "until false; do {c}; break; done",
    "for body": "for i in 1; do {c}; done",
    "c-style for body": "for ((i = 0; i < 1; i++)); do {c}; done",
    "case body": "case x in x) {c} ;; esac",
    "function": "f() {{ {c}; }}; f",
    "function keyword": "function f {{ {c}; }}; f",
    "function called on a later line": "f() {{ {c}; }}\nf",
    "function with a subshell body": "f() ( {c} ); f",
    "eval": "eval {q}",
    "bash -c": "bash -c {q}",
    "sh -c": "sh -c {q}",
    "source a process substitution": "source <(printf '%s\\n' {q})",
    ". from a here-string": ". /dev/stdin <<< {q}",
    "bash reading a here-string": "bash <<< {q}",
    "BASH_ENV": "BASH_ENV=<(printf '%s\\n' {q}) bash -c :",
    "alias": "shopt -s expand_aliases\nalias zz={q}\nzz",
    "trap on exit": "trap {q} EXIT",
    "trap on error": "trap {q} ERR; false",
    "trap on debug": "trap {q} DEBUG; :",
    "background": "{c} & wait",
    "coprocess": "coproc {{ {c}; }}; wait",
    "time": "time {c}",
    "line continuation": "true \\\n; {c}",
    "after a comment line": "# note\n{c}",
    "process substitution read": "cat <({c})",
    "process substitution write": "echo x > >({c}); wait",
}
_PREFIX_LAYERS = {
    "command": "command {c}",
    "exec": "exec {c}",
    "env": "env {c}",
    "env with a variable": "env A=1 {c}",
    "nice": "nice {c}",
    "nohup": "nohup {c} 2>/dev/null",
    "timeout": "timeout 10 {c}",
    "stdbuf": "stdbuf -o0 {c}",
    "setsid": "setsid -w {c}",
    "setarch": "setarch x86_64 {c}",
    "prlimit": "prlimit --nofile=1024 {c}",
    "ionice": "ionice -c 3 {c}",
    "assignment prefix": "LC_ALL=C {c}",
    "xargs": "echo | xargs {c}",
}
_WORD_LAYERS = {
    "array subscript": "a[{s}]=1",
    "array subscript +=": "a[{s}]+=1",
    "array subscript read": "echo ${{a[{s}]}}",
    "declare with a subscript": "declare a[{s}]=1",
    "declare": "declare x={s}",
    "local": "f() {{ local x={s}; }}; f",
    "export": "export x={s}",
    "readonly": "readonly x={s}",
    "typeset array": "typeset -a a=({s})",
    "assignment": "x={s}",
    "assignment before a command": "x={s} true",
    "array assignment": "a=({s})",
    "arithmetic command": "(( {s} ))",
    "arithmetic expansion": "echo $(( {s} + 1 ))",
    "let": "let x={s}",
    "c-style for header": "for (( i = {s}; i < 1; i++ )); do :; done",
    "${x:-word}": "echo ${{x:-{s}}}",
    "${x:=word}": "echo ${{x:={s}}}",
    "${x:+word}": "x=1; echo ${{x:+{s}}}",
    "${x:?word}": "echo ${{x:?{s}}}",
    "${x#word}": "x=1; echo ${{x#{s}}}",
    "${x%%word}": "x=1; echo ${{x%%{s}}}",
    "${x/word/y}": "x=1; echo ${{x/{s}/y}}",
    "${x:offset}": "x=abc; echo ${{x:{s}:1}}",
    "[[ word ]]": "[[ {s} ]]",
    "[[ x == word ]]": "[[ x == {s} ]]",
    "[[ -v subscript ]]": "a=(); [[ -v a[{s}] ]]",
    "test -v subscript": "a=(); test -v {qa}",
    "printf -v subscript": "a=(); printf -v {qa} x",
    "read into a subscript": "a=(); read {qa} <<< x",
    "printf argument": "printf '%s\\n' {s}",
    "double quotes": 'echo "{s}"',
    "quoting mix": "echo 'a'\"{s}\"b$'c'",
    "here-document": "cat <<EOF\n{s}\nEOF",
    "here-document <<-": "cat <<-EOF\n\t{s}\n\tEOF",
    "here-string": "cat <<< {s}",
    "redirection target": "echo x > /dev/null{s}",
    "redirection source": "cat < /dev/null{s}",
    "case subject": "case {s} in *) : ;; esac",
    "case pattern": "case x in {s}) : ;; esac",
    "for list": "for i in {s}; do :; done",
    "brace expansion": "echo {{a,{s}}}",
    "glob": "echo *{s}",
    "tilde": "echo ~{s}",
    "xtrace prompt PS4": "PS4={qs}; set -x; :",
}

LAYERS: tuple[Layer, ...] = (
    *(Layer(n, _c(t)) for n, t in _COMMAND_LAYERS.items()),
    *(Layer(n, _c(t), prefix=True) for n, t in _PREFIX_LAYERS.items()),
    *(Layer(n, _w(t)) for n, t in _WORD_LAYERS.items()),
)
STYLES = ("dollar", "backquote")


def nest(command: str, layers: list[Layer], styles: list[str]) -> str:
    """`command` wrapped in `layers` (innermost first); a prefix layer over a command that
    is no longer simple is skipped."""
    simple = command in SIMPLE
    for number, layer in enumerate(layers):
        if layer.prefix and not simple:
            continue
        command = layer.wrap(command, styles[number % len(styles)])
        simple = layer.prefix
    return command
