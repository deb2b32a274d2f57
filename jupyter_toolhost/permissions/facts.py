"""What a call touches, as permission rules see it: paths, shell commands, URL, MCP server.

`call_facts` asks the tool's declared predicates (`get_path`, `shell_command`, `get_url`,
`is_read_only`) once and resolves every path through the injected resolver; the decision
function then works on these facts only. A predicate that raises, or input holding
characters a reader cannot see, makes the call unverifiable: it can be asked, never
auto-allowed.

Shell paths are resolved where the shell really is: the directory the shell tool carries
between calls (`shell_cwd`), then after each ``cd``/``pushd`` of the line itself. Because a
``cd`` may fail or sit in a subshell, a relative path is resolved against every directory the
shell may be in by then, and each resolution is a candidate (a deny matches any of them; an
allow needs all). A ``cd`` whose target is not known (``cd $X``, ``cd -``, ``popd``) makes
every later relative path unknown. "Inside the working directories" is always about the
session's roots, never about wherever the shell has wandered.

Paths are resolved afresh on every call, whatever the resolver, so a symlink made between
two calls is seen; only pure functions of strings (is this path inside those roots?) are
remembered.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from ..shell.commands import Command, ShellAnalysis, analyze
from ..shell.safety import (
    READ_ONLY_PROGRAMS,
    copies_trees,
    fed_by_xargs,
    git_prints_contents,
    git_sets_config,
    git_stages_worktree,
    is_read_only,
    line_is_read_only,
    recursive_roots,
    runs_inline_code,
)
from ..shell.safety import operands_from_environment as _environment_only
from ..shell.words import Redirect, Word
from .hosts import canonical_host
from .paths import PathResolver, candidates, has_invisible, inside_any


@dataclass(frozen=True, slots=True)
class PathRef:
    """One path a call touches: as written, and its absolute (lexical, resolved) forms."""

    written: str
    candidates: tuple[str, ...]
    write: bool


@dataclass(frozen=True, slots=True)
class Traits:
    """What a command is, apart from where it runs: computed once per command line."""

    path_words: tuple[Word, ...]
    url_words: tuple[Word, ...]
    """Written-out remote URLs that are addresses here, not paths (`_path_words`)."""
    redirects: tuple[Redirect, ...]
    roots: tuple[str, ...] | None
    read_only: bool
    fed_by_xargs: bool
    inline_code: str | None
    git_contents: bool
    git_stages: bool
    git_config: bool
    copies: bool


@lru_cache(maxsize=4096)
def traits_of(text: str) -> tuple[Traits, ...]:
    """The `Traits` of each command `analyze(text)` finds, in order."""
    return tuple(_traits(c) for c in analyze(text).commands)


def _traits(command: Command) -> Traits:
    named = bool(command.parts)
    paths = _path_words(command)
    return Traits(
        path_words=tuple(paths),
        url_words=tuple(w for w in command.path_args() if _remote_url(w) and w not in paths),
        redirects=tuple(command.file_redirects()),
        roots=recursive_roots(command) if named else None,
        read_only=named and is_read_only(command),
        fed_by_xargs=fed_by_xargs(command),
        inline_code=runs_inline_code(command) if named else None,
        git_contents=git_prints_contents(command),
        git_stages=git_stages_worktree(command),
        git_config=git_sets_config(command),
        copies=copies_trees(command),
    )


@dataclass(frozen=True, slots=True)
class CommandFacts:
    """One sub-command with the files it names."""

    command: Command
    paths: tuple[PathRef, ...]
    """Literal operands (as possible reads or writes) and redirection targets."""
    globs: tuple[str, ...] = ()
    """Unquoted glob operands, made absolute."""
    dynamic: bool = False
    """An operand or a redirection target is only known when the shell runs."""
    write_targets: tuple[PathRef, ...] = ()
    read_targets: tuple[PathRef, ...] = ()
    dynamic_target: bool = False
    """A redirection target is only known when the shell runs."""
    trees: tuple[PathRef, ...] = ()
    """Directories the command reads as whole trees (``grep -r``, ``find``, ``tar c``...)."""
    writes: bool = False
    """Not a known reader: its operands may be written."""
    traits: Traits | None = None
    unresolved: str = ""
    """Why a path it names can't be resolved exactly as bash will (empty when each can)."""
    after_links: str = ""
    """Why its paths may point elsewhere by the time it runs: an earlier command of the line
    may make or move links (empty otherwise). The sandbox makes this harmless."""
    dirs: tuple[str, ...] | None = ()
    """The folders the shell may be in when it runs (after the line's own ``cd``s); None
    once that is not known."""


@dataclass(slots=True)
class CallFacts:
    """Everything the rules need to know about one call."""

    tool_name: str
    server: str | None = None
    """An MCP tool's server, as tool names and rules name it."""
    mcp_tool: str | None = None
    """An MCP tool's tool part (its name is ``mcp__<server>__<mcp_tool>``)."""
    server_aliases: tuple[str, ...] = ()
    """The server's configured name, when it was renamed: deny and ask rules that use it
    still apply (allow rules must use `server`)."""
    read_only: bool = False
    path: PathRef | None = None
    shell: ShellAnalysis | None = None
    shell_text: str | None = None
    commands: tuple[CommandFacts, ...] = ()
    url: str | None = None
    host: str | None = None
    content: str | None = None
    """What ``Tool(specifier)`` rules of this tool are matched against (`Tool.rule_content`)."""
    unverifiable: str | None = None
    ascii: bool = True
    """Every path and command is plain ASCII (no look-alike letters to check)."""
    working_dirs: tuple[str, ...] = field(default_factory=tuple)
    shell_dirs: tuple[str, ...] = ()
    """Where the shell starts (its carried directory), resolved."""

    @property
    def is_shell(self) -> bool:
        return self.shell_text is not None

    def inside(self, ref: PathRef) -> bool:
        return _inside(ref.candidates, self.working_dirs)

    def shell_inside(self) -> bool:
        """Whether the shell starts inside the working directories."""
        return _inside(self.shell_dirs, self.working_dirs)


@lru_cache(maxsize=4096)
def _inside(paths: tuple[str, ...], roots: tuple[str, ...]) -> bool:
    # A pure function of the strings, cached: a decision asks it several times per path.
    return inside_any(paths, roots)


def operands_from_environment(text: str, item: CommandFacts) -> bool:
    """`shell_safety.operands_from_environment` for one resolved command: also not when a
    redirection target is unknown here (after a ``cd`` to an unknown directory)."""
    return not item.dynamic_target and _environment_only(text, item.command)


@dataclass(frozen=True, slots=True)
class McpFacts:
    """An MCP tool's names as rules match them: never read from a split of its name when
    the tool knows them (`Tool.mcp_name`)."""

    server: str
    tool: str
    aliases: tuple[str, ...] = ()
    """The server's configured name, when it differs from `server`."""


def mcp_facts(tool: Any) -> McpFacts | None:
    """The server and tool of an MCP tool (None for other tools). A tool built without its
    names (a listing, a hand-made `mcp__...` tool) is read from its name, split where the
    first ``__`` after ``mcp__`` begins; that split is right for every clean server name
    (see `mcp.naming`), and an unclean one gives a server no rule of another server names."""
    names = getattr(tool, "mcp_name", None)
    if names is not None:
        aliases = (names.configured_server,) if names.configured_server != names.server else ()
        return McpFacts(names.server, names.tool, aliases)
    name: str = tool.name
    if not name.startswith("mcp__"):
        return None
    server, _, part = name.removeprefix("mcp__").partition("__")
    return McpFacts(server, part)


def call_facts(
    tool: Any,
    input: Any,
    *,
    cwd: str,
    resolver: PathResolver,
    working_dirs: Sequence[str],
    shell_cwd: str | None = None,
) -> CallFacts:
    """Ask the tool's predicates about `input` and resolve what they name; shell paths are
    resolved against `shell_cwd` (the shell's carried directory; default `cwd`)."""
    name: str = tool.name
    facts = CallFacts(tool_name=name)
    mcp = mcp_facts(tool)
    if mcp is not None:
        facts.server, facts.mcp_tool, facts.server_aliases = mcp.server, mcp.tool, mcp.aliases
    facts.working_dirs = _roots(tuple(working_dirs), cwd, resolver)
    facts.read_only = tool.flag(tool.is_read_only, input) and _trusted_flags(tool)
    try:
        path = tool.get_path(input) if tool.get_path is not None else None
        shell = tool.shell_command(input) if getattr(tool, "shell_command", None) else None
        url = tool.get_url(input) if getattr(tool, "get_url", None) else None
        content = tool.rule_content(input) if getattr(tool, "rule_content", None) else None
    except Exception as exc:
        facts.unverifiable = f"could not tell what the call touches ({type(exc).__name__})"
        facts.read_only = False
        return facts
    if path is not None:
        facts.path = _ref(str(path), cwd, resolver, write=not facts.read_only)
        facts.ascii = "".join(facts.path.candidates).isascii()
        if has_invisible(str(path)):
            facts.unverifiable = "the path holds invisible or control characters"
    if shell is not None:
        facts.ascii = str(shell).isascii() and cwd.isascii()
        _shell_facts(facts, str(shell), shell_cwd or cwd, resolver)
    if content is not None:
        facts.content = str(content)
    if url is not None:
        facts.url = str(url)
        facts.host = _host(facts.url)
    return facts


def _trusted_flags(tool: Any) -> bool:
    """Whether the tool's read-only flag may count for permissions: an MCP tool's comes from
    its server's annotations, untrusted unless the server is configured as trusted."""
    return not tool.is_mcp or tool.annotations_trusted


def _roots(working_dirs: tuple[str, ...], cwd: str, resolver: PathResolver) -> tuple[str, ...]:
    """The working directories, each with its resolved form (see `candidates`)."""
    dirs: list[str] = []
    for directory in working_dirs:
        dirs.extend(candidates(directory, cwd=cwd, resolver=resolver))
    return tuple(dict.fromkeys(dirs))


def _ref(written: str, cwd: str | Sequence[str], resolver: PathResolver, *, write: bool) -> PathRef:
    dirs = (cwd,) if isinstance(cwd, str) else tuple(cwd)
    if len(dirs) == 1:  # (`candidates` gives distinct paths already)
        return PathRef(written, candidates(written, cwd=dirs[0], resolver=resolver), write)
    found = [c for d in dirs for c in candidates(written, cwd=d, resolver=resolver)]
    return PathRef(written, tuple(dict.fromkeys(found)), write)


@dataclass(frozen=True, slots=True)
class _ShellFacts:
    """What `_shell_facts` finds about one command line started in one directory."""

    analysis: ShellAnalysis
    shell_dirs: tuple[str, ...]
    commands: tuple[CommandFacts, ...] = ()
    read_only: bool = False


def _shell_facts(facts: CallFacts, text: str, cwd: str, resolver: PathResolver) -> None:
    facts.shell_text = text
    found = _resolve_shell(text, analyze(text), cwd, resolver)
    facts.shell = found.analysis
    facts.shell_dirs = found.shell_dirs
    if found.analysis.error:
        facts.unverifiable = found.analysis.error
        facts.read_only = False
        return
    facts.commands = found.commands
    facts.read_only = found.read_only


def _resolve_shell(
    text: str, analysis: ShellAnalysis, cwd: str, resolver: PathResolver
) -> _ShellFacts:
    shell_dirs = candidates(cwd, cwd=cwd, resolver=resolver)
    if analysis.error:
        return _ShellFacts(analysis, shell_dirs)
    dirs: tuple[str, ...] | None = (cwd,)
    built: list[CommandFacts] = []
    linked = False
    for command, traits in zip(analysis.commands, traits_of(text), strict=True):
        item = _command_facts(command, traits, dirs, resolver, linked=linked)
        built.append(item)
        linked = linked or (command.name in _LINK_MAKERS and not traits.read_only)
        if command.changes_directory:
            dirs = _after_cd(command, dirs, resolver)
    read_only = line_is_read_only(text, environment_operands=True)
    return _ShellFacts(analysis, shell_dirs, tuple(built), read_only)


def _after_cd(
    command: Command, dirs: tuple[str, ...] | None, resolver: PathResolver
) -> tuple[str, ...] | None:
    """Where the shell may be after this ``cd``: where it was (the cd may fail or sit in a
    subshell) plus the target; None once it is not known."""
    args = [w for w in command.parts[1:] if not w.value.startswith("-") or w.value == "-"]
    if dirs is None or command.name == "popd" or len(args) != 1 or args[0].dynamic:
        if command.name != "popd" and not args and dirs is not None:
            return (*dirs, resolver.home())
        return None
    target = args[0].value
    if target == "-" or args[0].glob:
        return None
    moved = [p for d in dirs for p in candidates(target, cwd=d, resolver=resolver)]
    return tuple(dict.fromkeys((*dirs, *moved)))


def _command_facts(
    command: Command,
    traits: Traits,
    dirs: tuple[str, ...] | None,
    resolver: PathResolver,
    *,
    linked: bool = False,
) -> CommandFacts:
    refs: list[PathRef] = _link_targets(command, dirs or ("/",), resolver)
    refs += [
        _ref(word.value, dirs, resolver, write=False)
        for word in traits.url_words
        if dirs is not None and _scheme_is_a_link(word.value, dirs, resolver)
    ]
    globs: list[str] = []
    dynamic = traits.fed_by_xargs
    for word in traits.path_words:
        if word.dynamic or (dirs is None and not _absolute_word(word.value)):
            dynamic = True
        elif word.glob:
            globs.extend(_glob_path(word, d, resolver) for d in dirs or ("/",))
        elif word.value:
            refs.append(_ref(word.value, dirs or ("/",), resolver, write=False))
    dynamic_target = False
    writes: list[PathRef] = []
    reads: list[PathRef] = []
    for redirect in traits.redirects:
        target = redirect.target
        if target.dynamic or target.glob or (dirs is None and not _absolute_word(target.value)):
            dynamic_target = True
            continue
        ref = _ref(target.value, dirs or ("/",), resolver, write=_writes(redirect))
        (writes if ref.write else reads).append(ref)
    roots = traits.roots
    trees = tuple(
        _ref(root, dirs or ("/",), resolver, write=False)
        for root in roots or ()
        if dirs is not None or _absolute_word(root)
    )
    if roots and dirs is None and len(trees) < len(roots):
        dynamic = True
    words = [w.value for w in traits.path_words if not w.dynamic]
    words += [r.target.value for r in traits.redirects if not r.target.dynamic]
    unresolved = _unresolved(words, dirs or ("/",))
    after_links = _after_links(words) if linked else ""
    return CommandFacts(
        command,
        tuple(refs),
        tuple(globs),
        dynamic,
        tuple(writes),
        tuple(reads),
        dynamic_target,
        trees,
        bool(command.parts) and not traits.read_only,
        traits,
        unresolved,
        after_links,
        dirs,
    )


_LINK_MAKERS = frozenset(
    {"ln", "link", "cp", "mv", "rsync", "tar", "bsdtar", "unzip", "cpio", "pax", "install",
     "git", "7z", "ar"}
)  # fmt: skip
"""Programs that may create, copy or move symbolic links: a path named after one of them in
the same line may point elsewhere by the time it is used."""
_PROCESS_LINK = re.compile(
    r"^/(?:proc/[^/]+/(?:task/[^/]+/)?(?:cwd|root|fd|fdinfo|exe|map_files)|dev/fd)(?:/|$)"
)


def _unresolved(words: Sequence[str], dirs: Sequence[str]) -> str:
    """Why one of the path `words` can't be resolved exactly as bash will (empty if each can):
    a ``/proc/<pid>/cwd``-style link is the running process's own, not the check's."""
    for value in words:
        spelled = [value] if value.startswith("/") else [f"{d.rstrip('/')}/{value}" for d in dirs]
        if value and any(_PROCESS_LINK.match(p) for p in spelled):
            return (
                f"`{value}` goes through a /proc link of the process that runs it, which "
                "can't be resolved before it runs"
            )
    return ""


def _after_links(words: Sequence[str]) -> str:
    """Why a path named after a command that may make or move links can't be resolved."""
    named = next((w for w in words if w), None)
    if named is None:
        return ""
    return (
        f"`{named}` is named after a command that may create or move links in the same line, "
        "so where it points can't be known before it runs"
    )


def _link_targets(command: Command, dirs: Sequence[str], resolver: PathResolver) -> list[PathRef]:
    """``ln -s TARGET LINK``: a relative TARGET as the link will resolve it, against the
    link's own folder (and, when LINK is a folder, inside it)."""
    if command.name != "ln":
        return []
    args = [w for w in command.parts[1:]]
    if not any((a.value.startswith("-") and not a.value.startswith("--") and "s" in a.value)
               or a.value == "--symbolic" for a in args):  # fmt: skip
        return []
    operands = [a.value for a in args if not a.value.startswith("-")]
    if len(operands) < 2 or any(a.dynamic for a in args):
        return []
    link = operands[-1]
    found: list[PathRef] = []
    for target in operands[:-1]:
        if target.startswith("/"):
            continue
        bases = [f"{d.rstrip('/')}/{b}" for d in dirs for b in (posixpath.dirname(link), link)]
        found.append(_ref(target, tuple(bases), resolver, write=False))
    return found


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_FETCHERS = frozenset({"git", "svn", "hg", "curl", "wget", "pip", "pip3", "uv", "npm", "npx"})
"""Programs of the lists below that read a URL as an address to fetch."""
_LOCAL_FILE_PROGRAMS = (READ_ONLY_PROGRAMS | _LINK_MAKERS | frozenset(
    {"rm", "rmdir", "mkdir", "touch", "tee", "truncate", "shred", "chmod", "chown", "chgrp",
     "dd", "sed", "patch", "zip", "gzip", "gunzip", "bzip2", "xz", "zstd", "source", ".",
     "bash", "sh", "zsh", "dash", "python", "python3", "node", "perl", "ruby", "Rscript"}
)) - _FETCHERS  # fmt: skip
"""Programs that read every operand as a local file: for them ``https://host/a/.git/x`` is
the relative path ``https:/host/a/.git/x``. Any other program (``curl``, ``pip``, a tool of
the project's own) is taken to read a written-out URL as an address to fetch, whose path part
names nothing on this machine, unless the folder its scheme would name (``https:``) is a link
(`_scheme_is_a_link`). A ``file:`` URL is always a path."""


def _path_words(command: Command) -> list[Word]:
    """Operands that may be paths, plus the value of ``key=FILE`` operands (``dd of=``) and
    the path half of git's ``REV:path``. A written-out URL is a path only for a program that
    reads its operands as local files (`_LOCAL_FILE_PROGRAMS`), or for wget's options that
    make the URL's path a local one; a ``file:`` URL always is."""
    words = command.path_args()
    name = command.name.rsplit("/", 1)[-1]
    if name not in _LOCAL_FILE_PROGRAMS and not _local_paths_from_urls(command):
        words = [w for w in words if not _remote_url(w)]
    for word in list(words):
        key, eq, value = word.value.partition("=")
        if eq and value and key.isalpha() and not word.dynamic:  # `dd of=FILE`, `if=FILE`
            words.append(Word(value, value, word.quoted, False, word.glob))
    if command.name == "git":
        words = [w for w in words if not _git_message(command, w)]
        for word in list(words):
            rev, colon, path = word.value.partition(":")
            if colon and path and "/" not in rev and not word.dynamic:
                words.append(Word(path, path, word.quoted, False, word.glob))
    return words


def _git_message(command: Command, word: Word) -> bool:
    """Whether `word` is the text of git's ``-m``/``--message`` (a commit, tag or stash
    message, often ``"$(cat <<'EOF' ... EOF)"``): words, not a path."""
    parts = command.parts
    for i, part in enumerate(parts[1:], start=1):
        if part is word:
            before = parts[i - 1].value
            return before in ("-m", "--message") or (
                before.startswith("-") and not before.startswith("--") and before.endswith("m")
                and set(before[1:]) <= set("aqsvm")
            )  # fmt: skip
    return word.value != "" and any(
        p.value == f"--message={word.value}" or p.value == f"-m{word.value}" for p in parts
    )


_WGET_TREES = re.compile(
    r"-(-force-directories|-recursive|-mirror|-no-host-directories|-cut-dirs|-page-requisites"
    r"|-protocol-directories|[a-zA-Z]*[xrmpH])"
)
"""wget options that build the local file's path from the URL's path (``-x``, ``-r``, ``-m``,
``-nH --cut-dirs``): with them the URL's path does name a file here."""


def _local_paths_from_urls(command: Command) -> bool:
    if command.name.rsplit("/", 1)[-1] != "wget":
        return False
    return any(_WGET_TREES.match(w.value) for w in command.parts[1:])


def _remote_url(word: Word) -> bool:
    """``scheme://...`` with a scheme other than ``file``, written out (not computed)."""
    value = word.value
    return (
        not word.dynamic and _URL.match(value) is not None and not value.lower().startswith("file:")
    )


def _scheme_is_a_link(url: str, dirs: Sequence[str], resolver: PathResolver) -> bool:
    """Whether the folder a URL's scheme would name as a relative path (``https:``) is a
    link in one of `dirs`: then the URL's path may reach a real folder here after all."""
    scheme = url.split("://", 1)[0] + ":"
    return any(
        resolver.realpath(f"{d.rstrip('/')}/{scheme}")
        != f"{resolver.realpath(d).rstrip('/')}/{scheme}"
        for d in dirs
    )


def _absolute_word(value: str) -> bool:
    return value.startswith(("/", "~"))


def _writes(redirect: Redirect) -> bool:
    return redirect.op not in ("<", "<&")


def _glob_path(word: Word, cwd: str, resolver: PathResolver) -> str:
    value = word.value
    if value == "~" or value.startswith("~/"):
        value = resolver.home() + value[1:]
    return posixpath.normpath(value if value.startswith("/") else f"{cwd.rstrip('/')}/{value}")


@lru_cache(maxsize=1024)
def _host(url: str) -> str | None:
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    return canonical_host(parts.hostname)
