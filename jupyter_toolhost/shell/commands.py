"""Shell commands as permission rules see them: sub-commands, wrappers and risks.

`analyze(command)` lists every simple command a command line would run (`shell_parse` reads
them from bash's syntax tree: nested ones from ``$(...)``, backticks, ``<(...)`` included;
here ``sh -c '...'``, ``eval``, ``env -S`` and ``find -exec`` add theirs), strips leading
``VAR=value`` assignments and wrappers (`shell_wrappers`: ``sudo``, ``env``, ``timeout``,
``busybox``... with their options), resolves ``/bin/rm`` to ``rm``, and marks what a prefix
rule must not allow on its own, with a short `Command.risk_reason`: commands that run
arbitrary code, commands whose name is not known before they run, quoting or brace
expansion that hides the name, and assignments that change what a command runs (``PATH=``,
``LD_PRELOAD=``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from .parse import parse
from .subset import MISREAD, RESERVED, Unchecked, command_reason
from .words import Redirect, ShellSyntaxError, Word
from .wrappers import Stripped, program, strip_wrappers

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "ash"})
_CODE_RUNNERS = frozenset({"watch", "script", "su"})
_SOURCES = frozenset({"source", "."})
_INLINE_CODE_FLAGS: dict[str, frozenset[str]] = {
    "python": frozenset({"-c"}),
    "python3": frozenset({"-c"}),
    "node": frozenset({"-e", "--eval", "-p", "--print"}),
    "perl": frozenset({"-e", "-E"}),
    "ruby": frozenset({"-e"}),
    "php": frozenset({"-r"}),
}
_FIND_RUNS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_FIND_WRITES = frozenset({"-delete", "-fprint", "-fprint0", "-fprintf", "-fls"})
_HAZARDOUS_ENV = re.compile(
    r"(PATH|LD_\w*|DYLD_\w*|BASH_ENV|ENV|IFS|PS4|PROMPT_COMMAND|SHELLOPTS|BASHOPTS|GIT_\w*"
    r"|\w*PAGER|EDITOR|VISUAL|PYTHON\w*|NODE_OPTIONS|PERL5\w*|RUBYOPT|GCONV_PATH"
    r"|CDPATH|GLOBIGNORE|HOME|OLDPWD)\+?="
)
_CD = frozenset({"cd", "pushd", "popd"})
_QUOTE_NEEDED = re.compile(r"[\s'\"\\;&|()<>`$]|^$")
_INVISIBLE = frozenset({"Cf", "Cc", "Co", "Cs"})
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_MAX_DEPTH = 8

BRACE_EXPANSION = "Brace expansion"
NESTED_NAME = "A nested command in this command can't be checked before it runs"
UNKNOWN_PROGRAM = "The program is only known when the command runs"
ANSI_C_NAME = "ANSI-C quoting in the command name"
HIDDEN = "The command holds invisible or control characters"
EVAL = "eval runs code that can't be checked"
INLINE = "runs inline code"


@dataclass(frozen=True, slots=True)
class Command:
    """One simple command the line would run, as rules match it."""

    parts: tuple[Word, ...]
    """The command after assignments, keywords and wrappers: name first."""
    source: tuple[Word, ...]
    """The words as written, assignments and wrappers included."""
    redirects: tuple[Redirect, ...] = ()
    nested: bool = False
    runs_code: bool = False
    """Runs code the rule cannot see: ``sh -c``, ``eval``, ``find -exec``, ``python -c``..."""
    opaque: bool = False
    """The command name is not known before it runs (``$CMD``), or a wrapper was not understood."""
    suspicious: bool = False
    """Quoting or characters that look like an attempt to hide something from a reader."""
    env_hazard: bool = False
    """A leading assignment changes what runs (``PATH=``, ``LD_PRELOAD=``, ...)."""
    text: str = ""
    """The stripped command as one normalised line (what rules match)."""
    source_text: str = ""
    """The command as written, normalised (what exact rules for risky commands match)."""
    risk_reason: str = ""
    """Why it is risky, in a few words ("Brace expansion"); empty when it is not."""
    inline_only: bool = False
    """Its only risk is an interpreter's inline program (``python3 -c``, ``node -e``): code as
    unknown as a script file's, which a prefix rule for the interpreter may allow where the
    sandbox holds and no command is denied."""

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(w.value for w in self.parts)

    @property
    def name(self) -> str:
        return self.parts[0].value if self.parts else ""

    @property
    def risky(self) -> bool:
        """Only an exact rule for `source_text` may allow it; prefix and wildcard rules do not."""
        return self.runs_code or self.opaque or self.suspicious or self.env_hazard

    @property
    def changes_directory(self) -> bool:
        return self.name in _CD

    def file_redirects(self) -> list[Redirect]:
        """Redirections to or from files (descriptor duplications, here-docs and /dev/null
        excluded)."""
        found: list[Redirect] = []
        for r in self.redirects:
            if r.op in ("<<", "<<-", "<<<"):
                continue
            if r.op in (">&", "<&") and (r.target.value.isdigit() or r.target.value == "-"):
                continue
            if r.target.value in _HARMLESS_TARGETS and not r.target.dynamic:
                continue
            found.append(r)
        return found

    def path_args(self) -> list[Word]:
        """Words after the name that may be paths: operands and ``--opt=value`` values."""
        found: list[Word] = []
        for word in self.parts[1:]:
            value = word.value
            if value.startswith("-"):
                if "=" in value:
                    _, _, rest = value.partition("=")
                    found.append(Word(rest, rest, word.quoted, word.dynamic, word.glob))
                continue
            found.append(word)
        return found


@dataclass(frozen=True, slots=True)
class ShellAnalysis:
    """Every command a command line would run, or why it could not be analysed."""

    commands: tuple[Command, ...] = ()
    error: str | None = None


def normalize(words: Iterable[str]) -> str:
    """Words joined by single spaces, quoted only where the shell would need it."""
    return " ".join(_quote(w) for w in words)


def _quote(word: str) -> str:
    if not _QUOTE_NEEDED.search(word):
        return word
    return "'" + word.replace("'", "'\\''") + "'"


@lru_cache(maxsize=4096)
def analyze(command: str) -> ShellAnalysis:
    """Split a command line into the commands it runs; an unparseable line has an `error`."""
    try:
        return ShellAnalysis(tuple(_commands(command, nested=False, depth=0)))
    except Unchecked as exc:
        return ShellAnalysis((), str(exc))
    except ShellSyntaxError as exc:
        return ShellAnalysis((), f"could not parse the command: {exc}")
    except RecursionError:
        return ShellAnalysis((), "could not parse the command: commands nested too deeply")


def _commands(source: str, *, nested: bool, depth: int) -> list[Command]:
    if depth > _MAX_DEPTH:
        raise ShellSyntaxError("commands nested too deeply")
    if source.isascii():
        hidden = any((c < " " or c == "\x7f") and c not in "\n\t" for c in source)
    else:
        hidden = any(unicodedata.category(c) in _INVISIBLE and c not in "\n\t" for c in source)
    found: list[Command] = []
    for simple in parse(source):
        found.extend(
            _command(
                list(simple.words),
                simple.redirects,
                nested=nested or simple.nested,
                hidden=hidden,
                depth=depth,
                declaration=simple.declaration,
            )
        )
    return found


def _command(
    words: list[Word],
    redirects: tuple[Redirect, ...],
    *,
    nested: bool,
    hidden: bool,
    depth: int,
    declaration: bool = False,
) -> list[Command]:
    source = tuple(words)
    reasons: list[str] = [HIDDEN] if hidden else []
    hazards: list[str] = []
    i = 0
    while i < len(words) and _is_assignment(words[i]):
        hazards.append(words[i].value)
        i += 1
    if declaration:
        hazards.extend(w.value for w in words[1:] if _is_assignment(w))
    first = words[i] if i < len(words) else None
    stripped = Stripped()
    parts = strip_wrappers(words[i:], stripped)
    hazards.extend(stripped.hazards)
    keyword = first is not None and first.value == "time" and not first.quoted
    while keyword and parts and _is_assignment(parts[0]):
        # `time PS4='$(cmd)'`: after the `time` keyword, bash reads an assignment
        hazards.append(parts[0].value)
        parts = parts[1:]
    name = parts[0] if parts else None
    if first is not None and first.raw in RESERVED and not first.quoted:
        raise Unchecked(MISREAD)
    outside = command_reason([w.value for w in parts])
    if outside is not None:
        raise Unchecked(outside)
    suspicious = hidden
    if name is not None and (name.braced or (first is not None and first.braced)):
        suspicious = True
        reasons.append(BRACE_EXPANSION)
    if name is not None and (name.ansi_c or (first is not None and first.ansi_c)):
        suspicious = True
        reasons.append(ANSI_C_NAME)
    opaque = False
    if name is not None and (name.dynamic or name.glob):
        opaque = True
        reasons.append(NESTED_NAME if name.substituted else UNKNOWN_PROGRAM)
    if stripped.opaque:
        opaque = True
        reasons.append(stripped.opaque)
    if name is not None and "/" in name.value and not (name.dynamic or name.glob):
        opaque = True
        reasons.append(
            f"The program `{name.value}` is named by its path, not found among the system's "
            "programs, so what it is can't be known for sure before it runs (the file may "
            "have changed)"
        )
    inner: list[Command] = []
    runs_code = False
    if stripped.split_string is not None:
        runs_code = True
        reasons.append("`env -S` runs its argument as a command line")
        inner = _commands(stripped.split_string.value, nested=True, depth=depth + 1)
    code_reason, code_inner = _runs_code(parts, depth=depth)
    if code_reason:
        runs_code = True
        reasons.append(code_reason)
        inner.extend(code_inner)
    bad_env = [h.split("=", 1)[0].rstrip("+") for h in hazards if _HAZARDOUS_ENV.match(h)]
    reasons.extend(f"Assignment to {var} changes what runs" for var in bad_env)
    command = Command(
        parts=tuple(parts),
        source=source,
        redirects=redirects,
        nested=nested,
        runs_code=runs_code,
        opaque=opaque,
        suspicious=suspicious,
        env_hazard=bool(bad_env),
        text=normalize(w.value for w in parts),
        source_text=normalize(w.value for w in source),
        risk_reason=reasons[0] if reasons else "",
        inline_only=len(reasons) == 1
        and reasons[0].endswith(INLINE)
        and program(parts[0]).value.rsplit("/", 1)[-1] not in _SHELLS,
    )
    return [command, *inner]


def _is_assignment(word: Word) -> bool:
    return bool(_ASSIGNMENT.match(word.raw))


def _runs_code(parts: list[Word], *, depth: int) -> tuple[str, list[Command]]:
    """Why the command runs code a rule cannot see (empty if it does not), and that code's
    commands where they can be read."""
    if not parts:
        return "", []
    name = program(parts[0]).value.rsplit("/", 1)[-1]
    args = parts[1:]
    if name in _SHELLS:
        for k, word in enumerate(args):
            flag = word.value
            if flag.startswith("-") and "c" in flag.lstrip("-") and k + 1 < len(args):
                code = _commands(args[k + 1].value, nested=True, depth=depth + 1)
                return f"`{name} -c` runs inline code", code
        return f"`{name}` runs a script that can't be checked", []
    if name == "eval":
        return EVAL, _commands(" ".join(w.value for w in args), nested=True, depth=depth + 1)
    if name in _SOURCES:
        return f"`{name}` runs a script's code in this shell", []
    if name in _CODE_RUNNERS:
        return f"`{name}` runs another command line", []
    base = re.sub(r"[\d.]+$", "", name)
    flags = _INLINE_CODE_FLAGS.get(name) or _INLINE_CODE_FLAGS.get(base)
    for w in args if flags else ():
        if w.value in flags or w.value[:2] in flags:  # type: ignore[operator]
            flag = w.value if w.value in flags else w.value[:2]  # type: ignore[operator]
            return f"`{name} {flag}` {INLINE}", []
    if name == "find":
        return _find(args, depth=depth)
    return "", []


def _find(args: Sequence[Word], *, depth: int) -> tuple[str, list[Command]]:
    reason = ""
    inner: list[Command] = []
    i = 0
    while i < len(args):
        value = args[i].value
        if value in _FIND_WRITES:
            verb = "deletes files" if value == "-delete" else "writes files"
            reason = reason or f"find with '{value}' {verb} and cannot be auto-allowed"
        if value in _FIND_RUNS:
            reason = reason or f"find with '{value}' runs another command"
            end = i + 1
            while end < len(args) and args[end].value not in (";", "+"):
                end += 1
            words = [w for w in args[i + 1 : end] if w.value != "{}"] or [Word("", "")]
            inner.extend(_command(list(words), (), nested=True, hidden=False, depth=depth + 1))
            i = end
        i += 1
    return reason, inner
