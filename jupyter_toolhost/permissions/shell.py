"""Shell commands as permission rules see them: sub-commands, wrappers and risks.

`analyze(command)` splits a command line into every simple command it would run (nested
ones from ``$(...)``, backticks, ``sh -c '...'``, ``eval``, ``find -exec`` included), strips
leading ``VAR=value`` assignments and wrappers (``timeout``, ``time``, ``nice``, ``nohup``,
``stdbuf``, ``xargs``, ``env``, ``command``, ``exec``, ``sudo``, ``ionice`` with their
options), and marks what a prefix rule must not allow on its own: commands that run
arbitrary code, commands whose name is not known before they run, quoting that looks like an
escape attempt, and assignments that change what a command runs (``PATH=``, ``LD_PRELOAD=``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TypeVar

from .shell_lex import Redirect, ShellSyntaxError, Word, split_segments

T = TypeVar("T")

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
_KEYWORDS = frozenset({"!", "{", "}", "then", "do", "else", "elif", "if", "while", "until"})
_CLOSERS = frozenset({"fi", "done", "esac", "}"})
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "ash"})
_CODE_RUNNERS = frozenset({"eval", "source", ".", "busybox", "watch", "script", "su"})
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
    r"|\w*PAGER|EDITOR|VISUAL|PYTHON\w*|NODE_OPTIONS|PERL5\w*|RUBYOPT|GCONV_PATH)\+?="
)
_CD = frozenset({"cd", "pushd", "popd"})
_QUOTE_NEEDED = re.compile(r"[\s'\"\\;&|()<>`$]|^$")
_SUSPICIOUS_IN_ARG = re.compile(r"[;&|`\n]|\$\(")
_INVISIBLE = frozenset({"Cf", "Cc", "Co", "Cs"})
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})


@dataclass(frozen=True, slots=True)
class _Wrapper:
    arg_opts: frozenset[str] = frozenset()
    flag_opts: frozenset[str] = frozenset()
    positionals: int = 0
    numeric: bool = False
    assignments: bool = False


def _w(args: str = "", flags: str = "", **kw: int | bool) -> _Wrapper:
    return _Wrapper(frozenset(args.split()), frozenset(flags.split()), **kw)  # type: ignore[arg-type]


_WRAPPERS: dict[str, _Wrapper] = {
    "timeout": _w(
        "-s --signal -k --kill-after", "--preserve-status --foreground -v --verbose", positionals=1
    ),
    "time": _w("-f --format -o --output", "-p -v --verbose -a --append --portability -q --quiet"),
    "nice": _w("-n --adjustment", "", numeric=True),
    "nohup": _w(),
    "stdbuf": _w("-i -o -e --input --output --error"),
    "xargs": _w(
        "-n -L -I -P -d -E -s -a --max-args --max-lines --replace --max-procs --delimiter --eof"
        " --max-chars --arg-file --process-slot-var",
        "-0 --null -r --no-run-if-empty -t --verbose -x --exit -p --interactive -o --open-tty"
        " -i -e -l --show-limits",
    ),
    "env": _w(
        "-u --unset -C --chdir", "-i --ignore-environment -0 --null -v --debug -", assignments=True
    ),
    "command": _w("", "-p"),
    "builtin": _w(),
    "exec": _w("-a", "-c -l -cl"),
    "sudo": _w(
        "-u --user -g --group -C --close-from -h --host -p --prompt -r --role -t --type -U"
        " --other-user -D --chdir -T --command-timeout",
        "-E --preserve-env -H --set-home -n --non-interactive -S --stdin -b --background -k"
        " --reset-timestamp -K -A --askpass -P --preserve-groups",
    ),
    "ionice": _w("-c --class -n --classdata -p --pid -P --pgid -u --uid", "-t --ignore"),
}


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
        found = []
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
    except ShellSyntaxError as exc:
        return ShellAnalysis((), f"could not parse the command: {exc}")


def _commands(source: str, *, nested: bool, depth: int) -> list[Command]:
    if depth > 8:
        raise ShellSyntaxError("commands nested too deeply")
    hidden = any(unicodedata.category(c) in _INVISIBLE and c not in "\n\t" for c in source)
    found: list[Command] = []
    for segment in split_segments(source):
        words = [t for t in segment.tokens if isinstance(t, Word)]
        redirects = tuple(t for t in segment.tokens if isinstance(t, Redirect))
        found.extend(
            _command(words, redirects, nested=nested or segment.nested, hidden=hidden, depth=depth)
        )
    return found


def _command(
    words: list[Word],
    redirects: tuple[Redirect, ...],
    *,
    nested: bool,
    hidden: bool,
    depth: int,
) -> list[Command]:
    source = tuple(words)
    env_hazard = False
    i = 0
    while i < len(words) and (words[i].value in _KEYWORDS or _is_assignment(words[i])):
        env_hazard |= _is_assignment(words[i]) and bool(_HAZARDOUS_ENV.match(words[i].value))
        i += 1
    rest = words[i:]
    while rest and rest[-1].value in _CLOSERS and not rest[-1].quoted:
        rest = rest[:-1]
    parts, opaque, extra = _strip_wrappers(rest, depth=depth)
    runs_code, inner = _runs_code(parts, depth=depth)
    suspicious = hidden or any(_suspicious(w) for w in parts[1:])
    opaque |= bool(parts) and (parts[0].dynamic or parts[0].glob)
    env_hazard |= extra.env_hazard
    command = Command(
        parts=tuple(parts),
        source=source,
        redirects=redirects,
        nested=nested,
        runs_code=runs_code or extra.runs_code,
        opaque=opaque,
        suspicious=suspicious,
        env_hazard=env_hazard,
        text=normalize(w.value for w in parts),
        source_text=normalize(w.value for w in source),
    )
    return [command, *extra.inner, *inner]


def _is_assignment(word: Word) -> bool:
    return bool(_ASSIGNMENT.match(word.raw))


def _suspicious(word: Word) -> bool:
    value = word.value
    return word.quoted and ('"' in value or "'" in value) and bool(_SUSPICIOUS_IN_ARG.search(value))


@dataclass(slots=True)
class _Extra:
    runs_code: bool = False
    env_hazard: bool = False
    inner: tuple[Command, ...] = ()


def _strip_wrappers(words: list[Word], *, depth: int) -> tuple[list[Word], bool, _Extra]:
    extra = _Extra()
    opaque = False
    while words and not words[0].quoted and words[0].value in _WRAPPERS:
        name = words[0].value
        spec = _WRAPPERS[name]
        if name == "command" and any(w.value in ("-v", "-V") for w in words[1:2]):
            break
        i = 1
        while i < len(words):
            value = words[i].value
            if value == "--":
                i += 1
                break
            if spec.assignments and _is_assignment(words[i]):
                extra.env_hazard |= bool(_HAZARDOUS_ENV.match(value))
                i += 1
                continue
            if not value.startswith("-") or (value == "-" and "-" not in spec.flag_opts):
                break
            if name == "env" and (value.startswith("-S") or value.startswith("--split-string")):
                attached = value[2:] if value.startswith("-S") else value.partition("=")[2]
                text = attached or (words[i + 1].value if i + 1 < len(words) else "")
                extra.runs_code = True
                extra.inner = (*extra.inner, *_commands(text, nested=True, depth=depth + 1))
                return [], opaque, extra
            taken = _option_width(value, spec)
            if taken is None:
                opaque = True
                i += 1
                continue
            i += taken
        skip = spec.positionals
        words = words[min(i + skip, len(words)) :]
        if name == "xargs" and not words:
            words = [Word("echo", "echo")]
    return words, opaque, extra


def _option_width(option: str, spec: _Wrapper) -> int | None:
    """How many words an option takes (1 or 2), or None when it is not understood."""
    if option.startswith("--"):
        name, eq, _ = option.partition("=")
        if name in spec.flag_opts and not eq:
            return 1
        if name in spec.arg_opts:
            return 1 if eq else 2
        return None
    if spec.numeric and option[1:].isdigit():
        return 1
    if option in spec.flag_opts:
        return 1
    if option in spec.arg_opts:
        return 2
    if option[:2] in spec.arg_opts:
        return 1
    if all(f"-{c}" in spec.flag_opts for c in option[1:]):
        return 1
    return None


def _runs_code(parts: list[Word], *, depth: int) -> tuple[bool, list[Command]]:
    if not parts:
        return False, []
    name = parts[0].value.rsplit("/", 1)[-1]
    args = parts[1:]
    if name in _SHELLS:
        inner: list[Command] = []
        for k, word in enumerate(args):
            if word.value.startswith("-") and "c" in word.value.lstrip("-") and k + 1 < len(args):
                inner = _commands(args[k + 1].value, nested=True, depth=depth + 1)
                break
        return True, inner
    if name == "eval":
        text = " ".join(w.value for w in args)
        return True, _commands(text, nested=True, depth=depth + 1)
    if name in _CODE_RUNNERS:
        return True, []
    base = re.sub(r"[\d.]+$", "", name)
    flags = _INLINE_CODE_FLAGS.get(name) or _INLINE_CODE_FLAGS.get(base)
    if flags and any(w.value in flags or w.value[:2] in flags for w in args):
        return True, []
    if name == "find":
        return _find(args, depth=depth)
    return False, []


def _find(args: Sequence[Word], *, depth: int) -> tuple[bool, list[Command]]:
    runs = False
    inner: list[Command] = []
    i = 0
    while i < len(args):
        value = args[i].value
        if value in _FIND_WRITES:
            runs = True
        if value in _FIND_RUNS:
            runs = True
            end = i + 1
            while end < len(args) and args[end].value not in (";", "+"):
                end += 1
            words = [w for w in args[i + 1 : end] if w.value != "{}"] or [Word("", "")]
            inner.extend(_command(list(words), (), nested=True, hidden=False, depth=depth + 1))
            i = end
        i += 1
    return runs, inner
