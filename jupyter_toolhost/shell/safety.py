"""What shell commands do to files: which only read, which read whole trees, which write.

`is_read_only(command)` is the one list of commands that neither write a file nor run another
program — the permission engine auto-allows them inside the working directories, and the Bash
tool runs a line made only of them beside other calls. A command qualifies only when it is
listed and uses none of the options (or operands) that make it write or run code: ``sort -o``,
``sed -i`` or a sed script with ``w``/``e``/``r``, ``awk`` with ``system``/``getline``/``|``/``>``,
``find -exec``/``-delete``/``-fprint``, ``uniq in out``, ``git -c``, ``git branch NAME``, ...
Anything not listed counts as writing.

`recursive_roots(command)` names the directories a command reads as whole trees (``grep -r``,
``rg``, ``find``, ``tar c``, ``cp -r``, ``du``, ``ls -R``, ...): a Read deny inside one of them
is read too. `git_prints_contents` names git commands that print files from the repository's
objects (``git show``, ``git log -p``, ``git grep``...), which a sandbox does not hide.
`writes_operands(command)` says whether the operands may be written (not a reader).
`line_is_read_only(text)` judges a whole line: the one answer the Bash tool (may it run
beside other calls?) and the permission engine (may it run without asking?) share.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .commands import Command, analyze

_READ_ONLY = frozenset(
    {
        "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "pwd", "echo",
        "printf", "which", "stat", "file", "du", "df", "diff", "cut", "tr", "basename",
        "dirname", "realpath", "readlink", "find", "git", "tree", "true", "false", "test",
        "[", "nl", "od", "hexdump", "md5sum", "sha1sum", "sha256sum", "sha512sum", "b2sum",
        "cksum", "whoami", "id", "uname", "date", "cmp", "comm", "column", "sleep", "sort",
        "uniq", "jq", "sed", "awk", "gawk", "mawk", "seq", "expr", "strings", "base64",
        "base32", "xxd", "tac", "rev", "fold", "fmt", "expand", "unexpand", "paste", "join",
        "numfmt", "tsort", "pr", "shuf", "groups", "nproc", "arch", "printenv", "uptime",
        "free", "locale", "getconf", "hostname", "tty", "type", "ps", "look",
    }
)  # fmt: skip
READ_ONLY_PROGRAMS = _READ_ONLY
"""Programs on the read-only list (with the right options they neither write nor run code)."""
_FORBIDDEN_OPTIONS: dict[str, tuple[str, ...]] = {
    "rg": ("--pre", "--search-zip", "-z"),
    "file": ("-C", "--compile"),
    "tree": ("-o", "-R"),
    "date": ("-s", "--set"),
    "sort": ("-o", "--output", "--compress-program"),
    "shuf": ("-o", "--output"),
    "jq": ("-f", "--from-file", "--rawfile", "--slurpfile", "-L"),
    "sed": ("-i", "--in-place", "-f", "--file", "-s", "--separate"),
    "awk": ("-f", "--file", "-i", "--include", "-l", "--load", "-E", "--exec"),
    "hostname": ("-F", "--file", "-b", "--boot"),
    "xxd": ("-r",),
}
_FORBIDDEN_OPTIONS["gawk"] = _FORBIDDEN_OPTIONS["mawk"] = _FORBIDDEN_OPTIONS["awk"]
_MAX_OPERANDS = {"uniq": 1, "xxd": 1, "hostname": 0}
"""Commands whose extra operand is an output file (``uniq in out``) or a change of state."""

_GIT_READ_ONLY = frozenset(
    {
        "status", "log", "diff", "show", "rev-parse", "ls-files", "ls-tree", "blame",
        "describe", "shortlog", "cat-file", "grep", "merge-base", "name-rev", "rev-list",
        "show-ref", "for-each-ref", "count-objects", "whatchanged", "branch", "tag", "remote",
        "stash", "config", "reflog",
    }
)  # fmt: skip
_GIT_FORBIDDEN = (
    "--output", "-o", "--ext-diff", "--exec", "-O", "--open-files-in-pager", "--textconv",
    "--upload-pack", "--receive-pack", "--run",
)  # fmt: skip
_GIT_LISTING = {
    "branch": frozenset({"-a", "--all", "-r", "--remotes", "-v", "-vv", "--list", "-l",
                         "--show-current", "--merged", "--no-merged", "--contains"}),
    "tag": frozenset({"-l", "--list", "-n", "--contains", "--points-at", "--sort"}),
    "remote": frozenset({"-v", "--verbose", "show", "get-url"}),
    "stash": frozenset({"list", "show"}),
    "config": frozenset({"--get", "--get-all", "--get-regexp", "-l", "--list", "--show-origin",
                         "--local", "--global", "--system", "--show-scope"}),
    "reflog": frozenset({"show", "-n"}),
}  # fmt: skip
"""Subcommands that only read when every option is one of these (else they create or set)."""

_CREATES_FILES = frozenset({"mkdir", "touch", "mv", "cp"})

_SED_SAFE = re.compile(r"[\s\d,$;!{}pdqQ=nNlhHgGxz+~^.*\[\]\\]*")
_AWK_UNSAFE = re.compile(r"system|getline|\||>|close|fflush|ENVIRON|PROCINFO|@load|@include")


def is_read_only(command: Command) -> bool:
    """Whether the command only reads (listed, with no option that writes or runs code)."""
    if command.risky or not command.parts or command.name not in _READ_ONLY:
        return False
    name = command.name
    args = [w.value for w in command.parts[1:]]
    forbidden = _FORBIDDEN_OPTIONS.get(name, ())
    if forbidden and any(_uses_option(a, forbidden) for a in args):
        return False
    limit = _MAX_OPERANDS.get(name)
    if limit is not None and len(_operands(args)) > limit:
        return False
    check = _CHECKS.get(name)
    return check(args) if check is not None else True


NOT_FILES = frozenset(
    {"echo", "printf", "sleep", "seq", "expr", "true", "false", "test", "[", "basename",
     "dirname", "date", "export", "read", "shift", "exit", "return", "set", "unset", "local"}
)  # fmt: skip
"""Commands whose operands are never file names: a variable among them reads no file."""
_SETS_VARIABLES = re.compile(
    r"=|\b(?:for|select|read|mapfile|readarray|set|getopts|declare|typeset|local|export"
    r"|readonly|shift|cd|pushd|popd)\b|\bprintf\b[^;&|\n]*\s-v\b"
)


def line_is_read_only(text: str, *, environment_operands: bool = False) -> bool:
    """Whether every command of the line is a known reader (`is_read_only`), nothing is
    redirected into a file, no redirection target is computed by the shell, and no operand
    is either (a variable, a substitution, input from ``xargs``). ``cd`` is no reader: it
    moves the directory the next call starts in.

    `environment_operands` lets ``echo $HOME`` pass (`operands_from_environment`): the
    permission engine's choice; the Bash tool keeps such a line out of parallel runs.
    """
    analysis = analyze(text)
    if analysis.error or not analysis.commands:
        return False
    for command in analysis.commands:
        if command.parts and not is_read_only(command):
            return False
        redirects = command.file_redirects()
        if any(r.op not in ("<", "<&") or r.target.dynamic or r.target.glob for r in redirects):
            return False
        unknown = fed_by_xargs(command) or any(w.dynamic for w in command.path_args())
        if unknown and not (environment_operands and operands_from_environment(text, command)):
            return False
    return True


def operands_from_environment(text: str, command: Command) -> bool:
    """``echo $HOME``: a command that names no files (``echo``, ``printf``...) whose unknown
    operands are variables the line itself never sets, so they hold the user's environment
    (each Bash call is a fresh shell), not text the agent chose. Not for operands fed by
    xargs, nor when any word is a command substitution or a redirection target is unknown."""
    if command.name not in NOT_FILES or fed_by_xargs(command):
        return False
    if any(w.substituted for w in command.parts):
        return False
    if any(r.target.dynamic or r.target.glob for r in command.file_redirects()):
        return False
    return _SETS_VARIABLES.search(text) is None


def fed_by_xargs(command: Command) -> bool:
    """``xargs cmd``: the operands come from standard input, so they are not known."""
    skipped = len(command.source) - len(command.parts)
    return any(w.value.rsplit("/", 1)[-1] == "xargs" for w in command.source[:skipped])


def _uses_option(arg: str, forbidden: tuple[str, ...]) -> bool:
    if arg.startswith("--"):
        return arg.partition("=")[0] in forbidden
    if not arg.startswith("-") or arg == "-":
        return False
    short = [f for f in forbidden if len(f) == 2 and not f.startswith("--")]
    return arg[:2] in short or any(f[1] in arg[1:] for f in short if f[1].isalpha())


def _operands(args: list[str]) -> list[str]:
    out: list[str] = []
    ended = False
    for arg in args:
        if not ended and arg == "--":
            ended = True
        elif ended or not arg.startswith("-") or arg == "-":
            out.append(arg)
    return out


def _git(args: list[str]) -> bool:
    if not args or args[0] not in _GIT_READ_ONLY:
        return False  # global options first (`git -c`, `git -C`) are not read-only
    sub, rest = args[0], args[1:]
    if any(_uses_option(a, _GIT_FORBIDDEN) for a in rest):
        return False
    listing = _GIT_LISTING.get(sub)
    return True if listing is None else _git_listing_only(sub, rest, listing)


def _git_listing_only(sub: str, rest: list[str], listing: frozenset[str]) -> bool:
    options = [a.partition("=")[0] for a in rest if a.startswith("-")]
    operands = _operands(rest)
    if sub in ("branch", "tag"):
        lists = any(o in ("-l", "--list", "--merged", "--no-merged", "--contains", "--points-at")
                    for o in options)  # fmt: skip
        return all(o in listing for o in options) and (not operands or lists)
    if sub == "stash":
        return bool(rest) and rest[0] in listing
    if sub == "reflog":
        return not rest or rest[0] == "show" or rest[0].startswith("-")
    if sub == "remote":
        return not rest or rest[0] in listing
    reads = any(o in ("--get", "--get-all", "--get-regexp", "-l", "--list") for o in options)
    return reads and all(o in listing for o in options) and len(operands) <= 2


def _find(args: list[str]) -> bool:
    unsafe = ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0",
              "-fprintf", "-fls")  # fmt: skip
    return not any(a in unsafe for a in args)


def _sed(args: list[str]) -> bool:
    scripts: list[str] = []
    taken = False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-e", "--expression") and i + 1 < len(args):
            scripts.append(args[i + 1])
            taken = True
            i += 2
            continue
        if arg.startswith("--expression="):
            scripts.append(arg.partition("=")[2])
            taken = True
        elif not arg.startswith("-") and not taken:
            scripts.append(arg)
            taken = True
        i += 1
    return all(_sed_script_safe(s) for s in scripts)


def _sed_script_safe(script: str) -> bool:
    """True when the script only prints, deletes, substitutes to stdout (no w, W, e, r, R)."""
    rest = re.sub(r"(?<![A-Za-z])s(.)(?:(?!\1).|\\.)*\1(?:(?!\1).|\\.)*\1[gpiImM0-9]*", " ", script)
    rest = re.sub(r"(?<![A-Za-z])y(.)(?:(?!\1).)*\1(?:(?!\1).)*\1", " ", rest)
    rest = re.sub(r"/(?:[^/\\]|\\.)*/I?", " ", rest)
    return _SED_SAFE.fullmatch(rest) is not None


def _awk(args: list[str]) -> bool:
    programs = [a for a in args if not a.startswith("-")][:1]
    values = [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-v", "--assign")]
    return not any(_AWK_UNSAFE.search(p) for p in (*programs, *values))


_CHECKS: dict[str, Callable[[list[str]], bool]] = {
    "git": _git,
    "find": _find,
    "sed": _sed,
    "awk": _awk,
    "gawk": _awk,
    "mawk": _awk,
}


def creates_or_moves_files(command: Command) -> bool:
    """``mkdir``, ``touch``, ``mv``, ``cp``: allowed by acceptEdits inside working dirs."""
    return not command.risky and command.name in _CREATES_FILES


# ── commands that read whole trees ─────────────────────────────────────────────────────

_RECURSIVE_FLAGS = {
    "grep": ("-r", "-R", "--recursive", "--dereference-recursive", "--directories=recurse"),
    "ls": ("-R", "--recursive"),
    "cp": ("-r", "-R", "--recursive", "-a", "--archive"),
    "scp": ("-r",),
    "zip": ("-r", "--recurse-paths", "-R"),
}
_RECURSIVE_FLAGS["egrep"] = _RECURSIVE_FLAGS["fgrep"] = _RECURSIVE_FLAGS["grep"]
_ALWAYS_RECURSIVE = frozenset({"rg", "ag", "ack", "find", "du", "tree", "rsync", "tar"})
_PATTERN_FIRST = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack"})
_DEFAULT_DOT = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack", "find", "du", "tree",
                          "ls"})  # fmt: skip


def recursive_roots(command: Command) -> tuple[str, ...] | None:
    """The operands a command reads as whole trees, or None when it reads no tree.

    ``grep -r x`` with no operand reads ``.``. Only literal operands are returned; a command
    whose operands are not known is judged elsewhere.
    """
    name = command.name
    args = [w.value for w in command.parts[1:]]
    flags = _RECURSIVE_FLAGS.get(name)
    if name not in _ALWAYS_RECURSIVE and not (flags and any(_has_flag(a, flags) for a in args)):
        return None
    if name == "tar" and not _tar_creates(args):
        return None
    operands = _tree_operands(name, args)
    if not operands and name in _DEFAULT_DOT:
        return (".",)
    return tuple(operands)


def _has_flag(arg: str, flags: tuple[str, ...]) -> bool:
    if arg in flags:
        return True
    if arg.startswith("--") or not arg.startswith("-") or arg == "-":
        return False
    letters = {f[1] for f in flags if len(f) == 2}
    return bool(letters & set(arg[1:]))


def _tree_operands(name: str, args: list[str]) -> list[str]:
    if name == "find":
        out: list[str] = []
        for arg in args:
            if arg.startswith(("-", "(", "!", ")")):
                break
            out.append(arg)
        return out
    operands = _operands(args)
    explicit = any(a in ("-e", "--regexp", "-f", "--file") or a.startswith("--regexp=")
                   for a in args)  # fmt: skip
    if name in _PATTERN_FIRST and not explicit and "--files" not in args:
        operands = operands[1:]
    return operands


def _tar_creates(args: list[str]) -> bool:
    first = args[0] if args else ""
    letters = first.lstrip("-") if not first.startswith("--") else ""
    return (
        "c" in letters
        or "r" in letters
        or "u" in letters
        or any(a in ("--create", "--append", "--update") for a in args)
    )


def writes_operands(command: Command) -> bool:
    """Whether the command may write what its operands name (it is not a known reader)."""
    return bool(command.parts) and not is_read_only(command)


# ── git's own contents, and code hidden in options ─────────────────────────────────────

_GIT_CONTENT = frozenset(
    {"show", "diff", "blame", "annotate", "cat-file", "archive", "grep", "format-patch",
     "difftool", "range-diff", "bundle", "clone", "fast-export", "push", "send-pack",
     "worktree", "log", "whatchanged", "reflog", "stash"}
)  # fmt: skip
_GIT_PATCH = ("-p", "-u", "--patch", "--cc", "-c", "--full-diff", "-S", "-G", "--word-diff")
_GIT_NAMES_ONLY = ("--stat", "--name-only", "--name-status", "--shortstat", "--numstat",
                   "--summary", "--dirstat", "--oneline", "--format", "--pretty", "-s",
                   "--no-patch")  # fmt: skip
_GIT_STAGES = frozenset(
    {"add", "commit", "stash", "rm", "mv", "checkout", "restore", "reset", "switch", "merge",
     "rebase", "cherry-pick", "revert", "pull", "am", "apply"}
)  # fmt: skip


GIT_VALUED_GLOBALS = ("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix",
                      "--attr-source")  # fmt: skip
"""git's options before the subcommand that take a value, as the next word or after ``=``
(``git -C dir log``: the subcommand is ``log``, not ``dir``)."""


def _git_sub(args: list[str]) -> tuple[str, list[str]]:
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("-"):
            return arg, args[i + 1 :]
        i += 2 if arg in GIT_VALUED_GLOBALS else 1
    return "", []


def git_prints_contents(command: Command) -> bool:
    """``git show``, ``git diff``, ``git log -p``, ``git archive``, ``git clone``...: file
    contents from the repository's objects, which a sandbox does not hide."""
    if command.name != "git":
        return False
    sub, rest = _git_sub([w.value for w in command.parts[1:]])
    if sub not in _GIT_CONTENT:
        return False
    patch = any(a.startswith(_GIT_PATCH) or a.startswith("-U") for a in rest)
    if sub in ("log", "whatchanged", "reflog", "stash"):
        return patch or (sub == "stash" and rest[:1] == ["show"] and not _names_only(rest))
    return not (sub in ("show", "diff") and not patch and _names_only(rest))


def _names_only(rest: list[str]) -> bool:
    return any(a.partition("=")[0] in _GIT_NAMES_ONLY for a in rest)


def git_stages_worktree(command: Command) -> bool:
    """``git add``, ``git commit``, ``git stash``...: git records the working tree, where the
    sandbox makes read-denied files look deleted."""
    if command.name != "git":
        return False
    return _git_sub([w.value for w in command.parts[1:]])[0] in _GIT_STAGES


_COPIERS = frozenset({"cp", "rsync", "scp", "tar", "zip", "cpio", "pax"})


def copies_trees(command: Command) -> bool:
    """A tree reader that copies what it reads (``cp -r``, ``tar c``, ``rsync``): the copy
    carries a repository's history along with the files, so the sandbox does not make it
    harmless."""
    return command.name in _COPIERS


def git_sets_config(command: Command) -> bool:
    """``git config KEY VALUE`` and friends: the repository's configuration, which names
    programs git runs (hooks, pagers, filters, fsmonitor), is changed."""
    if command.name != "git":
        return False
    args = [w.value for w in command.parts[1:]]
    return bool(args) and args[0] in ("config", "remote", "submodule") and not _git(args)


_INLINE_CODE: dict[str, tuple[str, ...]] = {
    "tar": ("--to-command", "--use-compress-program", "-I", "--checkpoint-action",
            "--info-script", "--new-volume-script", "-F", "--rsh-command"),
    "rsync": ("-e", "--rsh", "--rsync-path"),
    "zip": ("-TT", "--unzip-command"),
    "rg": ("--pre",),
    "sort": ("--compress-program",),
    "git": ("-c", "--config-env", "--exec-path", "--upload-pack", "--receive-pack", "--ext-diff",
            "--exec", "--open-files-in-pager"),
    "less": ("",),
    "man": ("-P", "--pager", "-H", "--html"),
    "ssh": ("",),
    "vim": ("-c", "--cmd", "+"),
    "vi": ("-c", "--cmd", "+"),
    "trap": ("",),
}  # fmt: skip


def runs_inline_code(command: Command) -> str | None:
    """Why a command runs code given in its arguments, for commands the parser does not know
    as code runners: ``awk`` with ``system()`` or pipes, ``sed`` with ``e``, ``trap``, ``git -c``,
    ``tar --to-command``... None when it does not."""
    name = command.name
    args = [w.value for w in command.parts[1:]]
    if name in ("awk", "gawk", "mawk") and not _awk(args):
        return f"`{name}` with system(), getline, pipes or redirections runs other programs"
    if name == "sed" and not _sed(args):
        return "a sed script with w, e or r commands writes files or runs programs"
    if name == "git":
        args = git_globals(args) + [a for a in args if a.startswith("--")]
    informational = any(a in ("--version", "-V", "--help", "-h") for a in args)
    stdin = not _operands(args) or _operands(args)[0] == "-"
    if _interpreter(name) and stdin and not informational:
        return f"`{name}` reads its program from standard input, which can't be checked"
    options = _INLINE_CODE.get(name)
    if options is None:
        return None
    if options == ("",):
        return f"`{name}` runs commands given to it"
    if any(_names_option(a, o) for a in args for o in options):
        return f"`{command.text}` passes a program for {name} to run"
    return None


_INTERPRETERS = re.compile(r"(python|pypy|node|nodejs|deno|bun|perl|ruby|php|lua|Rscript|R)[\d.]*")


def _interpreter(name: str) -> bool:
    return _INTERPRETERS.fullmatch(name) is not None


def _names_option(arg: str, option: str) -> bool:
    if arg == option or arg.startswith(option + "="):
        return True
    return len(option) <= 2 and not option.startswith("--") and arg.startswith(option)


def git_globals(args: list[str]) -> list[str]:
    """git's options before its subcommand (``git -c k=v log``: the ``-c`` is git's own),
    with their values."""
    sub, rest = _git_sub(args)
    return args[: len(args) - len(rest) - (1 if sub else 0)]
