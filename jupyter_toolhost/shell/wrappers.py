"""Programs that run another program: ``sudo rm x`` runs ``rm``, ``env -i rm x`` too.

`strip_wrappers` removes wrappers with their options and operands and resolves the program
a path names (``/bin/rm`` is ``rm``; a program outside the system directories keeps its
path). An option it does not know makes the command opaque: it may change what runs.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from .words import Word

SYSTEM_DIRS = frozenset(
    {"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin"}
)


@dataclass(frozen=True, slots=True)
class _Wrapper:
    arg_opts: frozenset[str] = frozenset()
    """Options that take a value (``-n 5``, ``-n5``, ``--adjustment=5``)."""
    flag_opts: frozenset[str] = frozenset()
    stops: frozenset[str] = frozenset()
    """Options after which the wrapper runs no command of its own (``command -v``)."""
    positionals: int = 0
    """Operands before the command (``timeout`` DURATION, ``chroot`` NEWROOT)."""
    numeric: bool = False
    """``-5`` is an option (``nice -5``)."""
    assignments: bool = False
    """``NAME=value`` operands set the environment (``env``)."""


def _w(args: str = "", flags: str = "", stops: str = "", **kw: int | bool) -> _Wrapper:
    sets = (frozenset(args.split()), frozenset(flags.split()), frozenset(stops.split()))
    return _Wrapper(*sets, **kw)  # type: ignore[arg-type]


WRAPPERS: dict[str, _Wrapper] = {
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
    "command": _w("", "-p", "-v -V"),
    "builtin": _w(),
    "exec": _w("-a", "-c -l -cl"),
    "sudo": _w(
        "-u --user -g --group -C --close-from -h --host -p --prompt -r --role -t --type -U"
        " --other-user -D --chdir -T --command-timeout",
        "-E --preserve-env -H --set-home -n --non-interactive -S --stdin -b --background -k"
        " --reset-timestamp -K -A --askpass -P --preserve-groups -i --login -s --shell",
        "-l --list -v --validate -e --edit -V --version",
    ),
    "doas": _w("-u -C", "-n -s", "-L"),
    "ionice": _w("-c --class -n --classdata", "-t --ignore", "-p --pid -P --pgid -u --uid"),
    "setsid": _w("", "-c --ctty -f --fork -w --wait"),
    "chrt": _w(
        "-T --sched-runtime -P --sched-period -D --sched-deadline",
        "-b --batch -d --deadline -f --fifo -i --idle -o --other -r --rr -R --reset-on-fork"
        " -v --verbose",
        "-p --pid -m --max -a --all-tasks",
        positionals=1,
    ),
    "taskset": _w("", "-c --cpu-list", "-p --pid -a --all-tasks", positionals=1),
    "unbuffer": _w("", "-p"),
    "flock": _w(
        "-w --wait --timeout -E --conflict-exit-code",
        "-s --shared -x -e --exclusive -u --unlock -n --nb --nonblock -o --close -F --no-fork"
        " --verbose",
        positionals=1,
    ),
    "chroot": _w("--userspec --groups", "--skip-chdir", positionals=1),
    "busybox": _w(),
}


OPAQUE_RUNNERS = frozenset(
    {"setarch", "linux32", "linux64", "i386", "x86_64", "uname26", "unshare", "prlimit",
     "nsenter", "firejail", "bwrap", "runuser", "sg", "newgrp", "systemd-run", "cgexec",
     "numactl", "chpst", "softlimit", "setpriv", "capsh", "catchsegv", "valgrind", "strace",
     "ltrace", "gdb", "torsocks", "proxychains", "proxychains4", "faketime", "fakeroot",
     "fakechroot", "eatmydata", "parallel", "xvfb-run", "dbus-run-session", "dbus-launch",
     "pkexec", "ssh-agent", "rlwrap", "entr", "schroot", "systemd-nspawn", "sem", "chronic",
     "ifne", "vipe", "with-lock-ex", "lckdo", "run-one", "daemonize", "start-stop-daemon"}
)  # fmt: skip
"""Programs known to run another program given in their arguments, with options this module
does not model: the program they run can't be named for sure, so the command is opaque."""


@dataclass(slots=True)
class Stripped:
    """What stripping wrappers found besides the command itself."""

    opaque: str = ""
    """Why the command is opaque (an option of a wrapper that is not understood)."""
    hazards: list[str] = field(default_factory=list[str])
    """Environment assignments made by ``env``."""
    split_string: Word | None = None
    """``env -S``'s command line: it runs as code."""


def program(word: Word) -> Word:
    """The word with a system directory removed from the program's path (``/bin/rm``: ``rm``)."""
    value = word.value
    if "/" not in value or word.dynamic:
        return word
    path = posixpath.normpath("/" + value.lstrip("/")) if value.startswith("/") else value
    head, base = posixpath.split(path)
    if head not in SYSTEM_DIRS or not base:
        return word
    return Word(base, word.raw, word.quoted, word.dynamic, word.glob, word.ansi_c,
                word.substituted, word.braced)  # fmt: skip


def strip_wrappers(words: list[Word], stripped: Stripped) -> list[Word]:
    """The words from the program a chain of wrappers finally runs (name resolved)."""
    while words:
        words[0] = program(words[0])
        name = words[0].value
        spec = WRAPPERS.get(name)
        if name in OPAQUE_RUNNERS and not words[0].dynamic:
            stripped.opaque = stripped.opaque or (
                f"`{name}` runs another program, which can't be named for sure before it runs"
            )
            break
        if spec is None or words[0].dynamic:
            break
        i = _options(name, spec, words, stripped)
        if i is None:
            break
        rest = words[min(i + spec.positionals, len(words)) :]
        if name == "flock" and rest and rest[0].value in ("-c", "--command"):
            rest = [Word("sh", "sh"), Word("-c", "-c"), *rest[1:]]
        if name == "xargs" and not rest:
            rest = [Word("echo", "echo")]
        if not rest:
            break
        words = rest
    return words


def _options(name: str, spec: _Wrapper, words: list[Word], stripped: Stripped) -> int | None:
    """Where the wrapper's options end, or None when it runs no other command."""
    i = 1
    while i < len(words):
        value = words[i].value
        if value == "--":
            return i + 1
        if spec.assignments and _is_assignment(words[i]):
            stripped.hazards.append(value)
            i += 1
            continue
        if not value.startswith("-") or (value == "-" and "-" not in spec.flag_opts):
            return i
        if name == "env" and (value.startswith("-S") or value.startswith("--split-string")):
            attached = value[2:] if value.startswith("-S") else value.partition("=")[2]
            following = words[i + 1] if i + 1 < len(words) else Word("", "")
            stripped.split_string = Word(attached, attached) if attached else following
            return None
        if value.partition("=")[0] in spec.stops:
            return None
        taken = _option_width(value, spec)
        if taken is None:
            stripped.opaque = stripped.opaque or f"`{name}` option `{value}` is not understood"
            i += 1
            continue
        i += taken
    return i


def _is_assignment(word: Word) -> bool:
    name, eq, _ = word.value.partition("=")
    return bool(eq) and name.isidentifier() and name.isascii()


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
