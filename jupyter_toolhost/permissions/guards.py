"""Checks that no allow rule and no mode can waive, run after the deny rules.

- **Protected paths.** A write into a ``.toolhost/``, ``.git/`` or ``.claude/`` folder (the
  settings, hooks and repository configuration that decide what the agent may do), or of a
  file the next kernel or IPython start would run (`startup`: ``ipykernel_launcher.py`` in
  the notebook's folder, ``~/.ipython/profile_*/startup/``, Jupyter's config and
  kernelspecs, ``*.pth`` files...), is asked in every mode, bypassPermissions included, and
  denied in dontAsk and plan. Reading them is not guarded.
- **Trees that hold a denied path.** A command that reads a whole tree (``grep -r``, ``rg``,
  ``find``, ``tar c``, ``cp -r``, ``du``, ``git grep``...) over a directory in which a Read deny
  protects something reads that too; so does a glob that may expand into it. Unless the shell
  runs in the sandbox, where read-denied paths are not visible, it is never allowed by a rule
  or a mode.
- **Commands that cannot be checked.** While any Bash, Read or Edit deny exists, a command
  whose program or targets are only known when it runs (a substitution or variable in command
  position, ``eval``, ``sh -c``, ``python -c``, brace expansion, a target computed by the
  shell, a ``cd`` to an unknown place, a line the grammar cannot parse) is never allowed by a
  prefix rule, the read-only list, acceptEdits, the auto classifier or bypassPermissions; only
  a rule that names the exact command does.

What a guard catches is asked (reason kind "safety"; auto mode's classifier is not consulted)
in default, acceptEdits, plan and auto; denied in dontAsk; and in bypassPermissions, which
promised never to ask, denied — except a protected-path write, which a person may still allow.
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import lru_cache

from ..core.types import DecisionReason
from ..shell.commands import normalize
from ..shell.globs import component_matches
from ..shell.safety import NOT_FILES, READ_ONLY_PROGRAMS, git_globals
from ..shell.wrappers import program
from .facts import CallFacts, CommandFacts, PathRef
from .paths import PathResolver, PathRuleSet, glob_base, glob_shape, is_inside
from .rules.ruleset import CompiledRules, SourcedRule
from .startup import StartupHit, StartupPlaces, startup_file, startup_places
from .written import runs_written, written_by

PROTECTED_DIRS = (".toolhost", ".git", ".claude")
"""Folders whose contents decide what the agent may do (settings, hooks, git config).
``.claude/`` always: a session that imports Claude Code's settings later would run the hooks
an agent planted there earlier. Compared case-folded (on a case-insensitive file system
``.GIT`` is ``.git``) on the lexical and the resolved path."""
POLICY_FOLDER = "/etc/jupyter_toolhost/"
"""Where the machine's policy lives (`settings.managed`): protected like the folders above,
whatever the process may write (a single-user root kernel could write /etc)."""
WORKTREES = "/.toolhost/worktrees/"
"""Where EnterWorktree checks out git worktrees: ordinary working trees, not settings (their
own ``.toolhost/`` and ``.git`` inside stay protected)."""


@dataclass(frozen=True, slots=True)
class Guard:
    """What a guard caught: the message for the person and the model, and whether a person
    may still allow it in bypassPermissions mode."""

    message: str
    reason: DecisionReason
    askable_in_bypass: bool = False
    unchecked: bool = False
    """The call can't be checked before it runs: plan mode denies it as dontAsk does."""
    protected_write: bool = False
    """A write to a protected path: plan mode, which writes nothing, denies it."""
    exact_rule_allows: bool = False
    """A rule that names the exact command line would allow it (the ask offers that rule)."""


def guard(
    rules: CompiledRules,
    facts: CallFacts,
    *,
    resolver: PathResolver,
    sandboxed: bool,
    written: Collection[str] = (),
    exact: bool = False,
) -> Guard | None:
    """The first guard this call trips, or None. `written`: the paths this session's calls
    may have written (see `written`). `exact`: an allow rule names the whole line, so what
    can't be checked is the person's decision — but not a line that can't be parsed (its
    parts can't be held against the deny rules), a program a deny rule names, or code this
    session wrote (the person read the line, not the file it runs)."""
    name = facts.tool_name
    protected = _protected_write(rules, facts, resolver)
    if protected is not None:
        return Guard(
            f"{name} writes {protected.written}, inside a protected folder "
            f"({'/, '.join(PROTECTED_DIRS)}/): the settings, hooks and git configuration "
            "there decide what the agent may do, so a person must approve it",
            DecisionReason("safety", "write to a protected folder", protected.written),
            askable_in_bypass=True,
            protected_write=True,
        )
    started = _startup_write(facts, resolver)
    if started is not None:
        ref, hit = started
        return Guard(
            f"{name} writes {ref.written}, {hit.reason}: the next kernel or IPython start "
            "would run it, outside the sandbox, so a person must approve it",
            DecisionReason("safety", "write to a file the next kernel start runs", ref.written),
            askable_in_bypass=True,
            protected_write=True,
        )
    if not facts.is_shell:
        return None  # every guard below is about a shell command line
    deny = rules.deny
    git_reads = any(
        c.traits.git_contents or (sandboxed and c.traits.git_stages)
        for c in facts.commands
        if c.traits is not None
    )
    directories = _git_directories(facts) if deny.read and git_reads else ()
    if directories is None:
        return Guard(
            "the command line sends git to a repository the check can't follow (--git-dir, "
            "--work-tree, a GIT_DIR-like variable, or a cd or -C known only when it runs), "
            "so whether that history holds paths a Read deny protects can't be told",
            DecisionReason("safety", "git pointed at a repository the check can't follow"),
        )
    if directories:
        hit = _git_hit(rules, facts, resolver, directories, sandboxed=sandboxed)
        problems = [resolver.git_problem(d) for d in directories] if hit else []
        problem = next((p for p in problems if p), None)
        if problem is not None:
            return Guard(
                f"git would read a repository whose state can't be checked safely ({problem}); "
                "so whether its history holds paths a Read deny protects can't be told",
                DecisionReason("safety", "git state that can't be read safely", problem),
            )
        if hit is not None:
            return Guard(
                f"git reads the repository's history, which holds paths the rule {hit} "
                "denies (the sandbox hides them in the working tree, where git would record "
                "them as deleted, but not in git's objects)",
                DecisionReason("safety", "git contents that include a denied path", hit),
            )
    if deny.read:
        for item in facts.commands:
            if sandboxed and not (item.traits and item.traits.copies):
                continue  # denied paths are not visible to a reader in the sandbox
            for tree in item.trees:
                hit = _tree_hit(rules, tree, resolver, _printed_names(item))
                if hit is not None:
                    return Guard(
                        f"`{item.command.text}` reads the whole tree {tree.written}, which "
                        f"holds paths the rule {hit} denies; search a narrower path, or "
                        "run it in the sandbox where denied paths are not visible",
                        DecisionReason("safety", "a recursive read over a denied path", hit),
                    )
            recursive = item.traits is not None and item.traits.roots is not None
            for glob in item.globs:
                hit = _glob_hit(rules, glob, resolver) or _expanded_hit(
                    rules.deny.read, glob, resolver, trees=recursive
                )
                if hit is not None:
                    return Guard(
                        f"the pattern {glob} may expand to a path the rule "
                        f"{hit.rule.text} in {hit.label} denies; name the files instead",
                        DecisionReason("safety", "a glob that may reach a denied path", glob),
                    )
    for item in facts.commands:
        for glob in item.globs if item.writes else ():
            hit = deny.edit.reaches_into(glob) or _expanded_hit(
                deny.edit, glob, resolver, trees=False
            )
            if hit is not None:
                return Guard(
                    f"the pattern {glob} may expand to a path the rule {hit.rule.text} in "
                    f"{hit.label} protects from edits; name the files instead",
                    DecisionReason("safety", "a glob that may reach a protected path", glob),
                )
    if deny.shell or deny.read or deny.edit or "shell" in deny.classes:
        found = _unknowable(rules, facts, sandboxed=sandboxed, written=written, exact=exact)
        if found is not None:
            why, waivable = found
            return Guard(
                f"{why}, and deny rules are in force, so it can't be allowed by a mode or a "
                "prefix rule; rewrite it with the program and paths written out",
                DecisionReason("safety", why),
                unchecked=True,
                exact_rule_allows=waivable,
            )
    return None


def _protected_write(
    rules: CompiledRules, facts: CallFacts, resolver: PathResolver
) -> PathRef | None:
    if facts.path is not None and facts.path.write and _in_protected(facts.path):
        return facts.path
    for item in facts.commands:
        command = item.command
        if (
            item.traits
            and item.traits.git_config
            and not rules.allow.shell.match((command.text, command.source_text))
        ):
            return PathRef(f"the repository's configuration (`{command.text}`)", (), True)
        for ref in item.write_targets:
            if _in_protected(ref):
                return ref
        if item.writes and item.command.name not in ("git", "cd", "pushd"):
            changed = _changed_paths(item, facts.shell_dirs)
            for ref in (*changed, *_placed_inside(item, resolver, facts.shell_dirs)):
                if _in_protected(ref):
                    return ref
            for glob in item.globs:
                if _glob_protected(glob, resolver):
                    return PathRef(glob, (glob,), True)
    return None


def _startup_write(facts: CallFacts, resolver: PathResolver) -> tuple[PathRef, StartupHit] | None:
    """A path the call writes that the next kernel or IPython start would run (`startup`):
    the same paths `_protected_write` looks at, and what a copy or a move puts inside a
    folder it names last (``mv payload/.ipython ~/``)."""
    refs: list[PathRef] = []
    if facts.path is not None and facts.path.write:
        refs.append(facts.path)
    for item in facts.commands:
        refs += item.write_targets
        if item.writes and item.command.name not in ("git", "cd", "pushd"):
            refs += _changed_paths(item, facts.shell_dirs)
            refs += _placed_inside(item, resolver, facts.shell_dirs)
            refs += (PathRef(g, (g,), True) for g in item.globs)
    if not refs:
        return None
    places = startup_places(resolver.home(), facts.working_dirs)
    for ref in refs:
        for path in ref.candidates:
            hit = _startup_hit(path, places, resolver)
            if hit is not None:
                return ref, hit
        if any(c in ref.written for c in "*?["):
            found, _complete = resolver.expand_glob(ref.candidates[0])
            for path in (*found, *map(resolver.realpath, found)):
                hit = _startup_hit(path, places, resolver)
                if hit is not None:
                    return ref, hit
    for item in facts.commands:
        copied = _tree_placed(item, places, resolver, facts.shell_dirs)
        if copied is not None:
            return copied
    return None


def _tree_placed(
    item: CommandFacts, places: StartupPlaces, resolver: PathResolver, dirs: Sequence[str]
) -> tuple[PathRef, StartupHit] | None:
    """A folder copied or moved into a start-up place, or into a folder above one, whose
    tree holds what would land on a start-up path (``cp -r payload/. ~``, ``rsync -a
    payload/ ./``): each entry is taken both inside the target and inside the target's
    folder of the source's name. A tree too big to list counts as holding one."""
    split = _sources_and_target(item, dirs)
    if split is None:
        return None
    sources, target = split
    folded = [c.casefold() for c in target.candidates]
    reaches = any(
        f in places.folded_module_dirs or any(is_inside(p, f) for p in places.folded_folders)
        for f in folded
    )
    if not reaches:
        return None
    for source in sources:
        for root in source.candidates[:1]:
            leaf = posixpath.basename(root.rstrip("/"))
            found: list[StartupHit] = []

            def lands(
                path: str, root: str = root, leaf: str = leaf, found: list[StartupHit] = found
            ) -> bool:
                rel = posixpath.relpath(path, root)
                for base in target.candidates:
                    for landed in (posixpath.join(base, rel), posixpath.join(base, leaf, rel)):
                        hit = startup_file(landed, places)
                        if hit is not None:
                            found.append(hit)
                            return True
                return False

            if resolver.tree_holds(root, lands):
                why = found[0] if found else StartupHit("a tree too big to check for them")
                return PathRef(f"{source.written} into {target.written}", (), True), why
    return None


def _startup_hit(path: str, places: StartupPlaces, resolver: PathResolver) -> StartupHit | None:
    hit = startup_file(path, places)
    if hit is None or hit.package is None:
        return hit
    found, complete = resolver.expand_glob(hit.package + "/__init__.*")
    return hit if found or not complete else None  # (a folder without one shadows nothing)


_PLACING = frozenset({"cp", "mv", "ln", "install", "rsync"})


def _placed_inside(
    item: CommandFacts, resolver: PathResolver | None = None, dirs: Sequence[str] = ()
) -> list[PathRef]:
    """``cp``/``mv``/``ln``/``install``/``rsync`` put each source inside the target folder
    (the last operand, or ``-t DIR``/``--target-directory=DIR``): those paths too (``mv
    payload/.ipython ~/``, ``cp -t . x/ipykernel_launcher.py``); with a resolver, also the
    names a source glob matches on disk (``cp x/* .``)."""
    split = _sources_and_target(item, dirs)
    if split is None:
        return []
    sources, target = split
    leaves = [posixpath.basename(s.candidates[0].rstrip("/")) for s in sources if s.candidates]
    if resolver is not None:
        for glob in item.globs:
            found, _complete = resolver.expand_glob(glob)
            leaves += [posixpath.basename(p.rstrip("/")) for p in found]
    found_refs: list[PathRef] = []
    for leaf in dict.fromkeys(leaves):
        if leaf:
            joined = tuple(posixpath.join(c, leaf) for c in target.candidates)
            found_refs.append(PathRef(posixpath.join(target.written, leaf), joined, True))
    return found_refs


_TARGET_OPTIONS = ("-t", "--target-directory")


_PATTERN_OPTIONS = ("--exclude=", "--include=", "--filter=")
"""Options whose value is a pattern of names to skip or keep, not a path (rsync's)."""
_COPIES = frozenset({"cp", "install", "rsync"})
_LEAVES_SOURCES_CHANGED = ("-l", "--link", "-s", "--symbolic-link", "--remove-source-files")
"""Options with which a copy links its sources (a later write through the copy changes
them) or removes them."""


def _changed_paths(item: CommandFacts, dirs: Sequence[str] = ()) -> list[PathRef]:
    """The paths a writing command may change: a plain copy (``cp``, ``install``, ``rsync``)
    changes only its target, not what it reads (``cp .claude/x /tmp/y``) or an option's
    pattern (``rsync --exclude=.claude``); any other command, every path it names."""
    parts = [w.value for w in item.command.parts[1:]]
    linked = any(
        p in _LEAVES_SOURCES_CHANGED
        or (p.startswith("-") and not p.startswith("--") and ("l" in p or "s" in p))
        for p in parts
    )
    if item.command.name in _COPIES and not linked:
        split = _sources_and_target(item, dirs)
        if split is not None:
            return [split[1]]
    return list(item.paths)


def _sources_and_target(
    item: CommandFacts, dirs: Sequence[str] = ()
) -> tuple[list[PathRef], PathRef] | None:
    """The sources and the target folder of a placing command, or None; `dirs`: where the
    shell starts (for a target folder glued to its option)."""
    if item.command.name not in _PLACING or not item.paths:
        return None
    words = [w.value for w in item.command.parts[1:]]
    patterns = {w.partition("=")[2] for w in words if w.startswith(_PATTERN_OPTIONS)}
    paths = [p for p in item.paths if p.written not in patterns]
    named: str | None = None
    for i, word in enumerate(words):
        if word in _TARGET_OPTIONS and i + 1 < len(words):
            named = words[i + 1]
        elif word.startswith("--target-directory="):
            named = word.partition("=")[2]
        elif word.startswith("-t") and len(word) > 2 and not word.startswith("--"):
            named = word[2:]
    if named is not None:
        target = next((p for p in paths if p.written == named), None)
        if target is None:  # (``-t.`` in one word: resolved where the shell starts)
            places = (posixpath.normpath(posixpath.join(d, named)) for d in dirs)
            target = PathRef(named, tuple(dict.fromkeys(places)), True)
        return [p for p in paths if p is not target], target
    if len(paths) < 2 and not item.globs:
        return None
    return paths[:-1], paths[-1]


def _in_protected(ref: PathRef) -> bool:
    return any(_protected_path(path) for path in ref.candidates)


@lru_cache(maxsize=4096)
def _protected_path(path: str) -> bool:
    # A pure function of the string, cached: every call's paths are checked.
    path = path.casefold().replace(WORKTREES, "/") + "/"
    return path.startswith(POLICY_FOLDER) or any(f"/{d}/" in path for d in PROTECTED_DIRS)


def _glob_protected(glob: str, resolver: PathResolver) -> bool:
    """Whether a glob can name a protected folder or a path inside one (``.gi[t]/hooks/``,
    ``.g?t``, ``.toolhos[t]``), by its spelling or by what it matches on disk now."""
    parts = [p for p in glob.replace(WORKTREES, "/").split("/") if p]
    if any("**" in p or any(component_matches(p, d) for d in PROTECTED_DIRS) for p in parts):
        return True
    found, _complete = resolver.expand_glob(glob)
    return any(_protected_path(p) or _protected_path(resolver.realpath(p)) for p in found)


def _expanded_hit(
    denied: PathRuleSet[SourcedRule], glob: str, resolver: PathResolver, *, trees: bool
) -> SourcedRule | None:
    """A deny rule that a path the glob matches on disk now falls under (through links too);
    with `trees`, also one protecting something inside a matched folder."""
    if not denied:
        return None
    found, _complete = resolver.expand_glob(glob)
    for path in found:
        forms = (path, resolver.realpath(path))
        hit = denied.match(forms)
        if hit is not None:
            return hit
        for form in forms if trees else ():
            item, certain = denied.reaching_tree(form)
            if item is not None and certain:
                return item
    return None


def _glob_hit(rules: CompiledRules, glob: str, resolver: PathResolver) -> SourcedRule | None:
    """A Read deny a glob may expand into: certainly (a denied folder lies where the glob
    looks), or as the files on disk show (a wildcard deny such as ``**/.env``)."""
    read = rules.deny.read
    hit = read.reaches_into(glob)
    if hit is None:
        return None
    base = glob_base(glob)
    _item, certain = read.reaching_tree(base)
    if certain or read.match((base,)) is not None:
        return hit  # (a denied folder lies where the glob looks, or the glob looks inside one)
    shape = glob_shape(glob)

    def reached(path: str) -> bool:
        if shape.fullmatch(path) is None:
            return False
        return read.match((path, resolver.realpath(path))) is not None

    return hit if resolver.tree_holds(base, reached) else None


def _git_hit(
    rules: CompiledRules,
    facts: CallFacts,
    resolver: PathResolver,
    directories: list[str],
    *,
    sandboxed: bool,
) -> str | None:
    read = rules.deny.read
    found: list[str] = []

    limits = _git_pathspecs(facts)

    def denied(path: str) -> bool:
        if limits is not None and not any(is_inside(path, limit) for limit in limits):
            return False  # outside the pathspecs: git prints nothing of it
        hit = read.match((path,))
        if hit is not None:
            found.append(f"{hit.rule.text} in {hit.label}")
        return hit is not None

    untracked = any(_git_sees_untracked(item, sandboxed) for item in facts.commands)
    for directory in directories:
        if resolver.git_holds(directory, denied, untracked=untracked):
            return found[0] if found else "a Read deny rule"
    return None


_GIT_LOCATION_ENV = frozenset(
    {"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY", "GIT_INDEX_FILE",
     "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES"}
)  # fmt: skip
"""Variables that send git to another repository than the one around its folder."""


def _git_directories(facts: CallFacts) -> list[str] | None:
    """The folders around which the line's git commands find their repository: the shell's,
    where each git command runs (after the line's own ``cd``), and each ``git -C DIR`` made
    absolute against them. None when git is sent elsewhere in a way the check does not
    follow: ``--git-dir``, ``--work-tree``, a ``GIT_DIR``-like variable set anywhere on the
    line, a ``cd`` or a ``-C`` known only when it runs."""
    found = list(facts.shell_dirs)
    for item in facts.commands:
        for word in item.command.source:
            name = word.value.partition("=")[0]
            if "=" in word.value and name in _GIT_LOCATION_ENV:
                return None
        if item.command.name != "git":
            continue
        if item.dirs is None:
            return None
        words = item.command.parts[1:]
        options = git_globals([w.value for w in words])
        if any(o.startswith(("--git-dir", "--work-tree")) for o in options):
            return None
        bases = list(item.dirs or facts.shell_dirs)
        for i, option in enumerate(options[:-1]):
            if option != "-C":
                continue
            if words[i + 1].dynamic:
                return None
            bases = [posixpath.normpath(posixpath.join(b, options[i + 1])) for b in bases]
        found += bases
    return list(dict.fromkeys(found))


def _git_sees_untracked(item: CommandFacts, sandboxed: bool) -> bool:
    """Whether a git command may read files git does not track: staging them (``git add
    -A``, where the sandbox would record a hidden file as deleted), ``git grep --untracked``,
    ``git stash -u``, ``--no-index``. ``git diff``, ``log``, ``show``, ``blame`` never do."""
    traits = item.traits
    if traits is None or item.command.name != "git":
        return False
    words = [w.value for w in item.command.parts[1:]]
    sub = next((w for w in words if not w.startswith("-")), "")
    return (
        (sandboxed and traits.git_stages)
        or sub in ("grep", "stash")
        or any("untracked" in w or w == "--no-index" for w in words)
    )


def _git_pathspecs(facts: CallFacts) -> tuple[str, ...] | None:
    """The paths after ``--`` of every git command that prints contents (``git log -p --
    analysis.py``), made absolute against the shell's folders; None when one of them has no
    ``--`` or a pathspec that is not a plain path (globs, ``:(magic)``, variables)."""
    limits: list[str] = []
    for item in facts.commands:
        if item.traits is None or not item.traits.git_contents:
            continue
        words = item.command.parts[1:]
        ends = [i for i, w in enumerate(words) if w.value == "--"]
        blames = words[:1] and words[0].value in ("blame", "annotate") and len(words) > 1
        if not ends and not blames:
            return None
        # `git blame [REV] [--] FILE`: the file is its last word
        specs = words[ends[0] + 1 :] if ends else words[-1:]
        if not specs or any(
            w.dynamic or w.glob or w.value.startswith(":") or set(w.value) & set("*?[\\")
            for w in specs
        ):
            return None
        if item.dirs is None:
            return None
        for word in specs:
            for directory in (*facts.shell_dirs, *item.dirs):
                limits.append(posixpath.normpath(posixpath.join(directory, word.value)))
    return tuple(limits)


def _grep_includes(args: list[str]) -> tuple[str, ...] | None:
    """``grep -r --include=GLOB``: it reads only files whose names match, so only those
    patterns count (None without ``--include``)."""
    found: list[str] = []
    for i, arg in enumerate(args):
        if arg.startswith("--include="):
            found.append(arg.partition("=")[2])
        elif arg == "--include" and i + 1 < len(args):
            found.append(args[i + 1])
    return tuple(found) or None


def _tree_hit(
    rules: CompiledRules,
    tree: PathRef,
    resolver: PathResolver,
    names: tuple[str, ...] | None = None,
) -> str | None:
    """The deny rule a tree read reaches. With `names` (a reader that prints only the names
    matching these patterns), only a denied path on disk now whose name matches counts: the
    reader prints no contents, and a file made later is one the agent named itself."""
    read = rules.deny.read
    for root in tree.candidates:
        item, certain = read.reaching_tree(root)
        if item is None:
            continue
        if names is not None:

            def shown(path: str) -> bool:
                name = posixpath.basename(path)
                return read.match((path,)) is not None and any(
                    component_matches(n, name) or fnmatch.fnmatch(name, n) for n in names
                )

            if resolver.tree_holds(root, shown):
                return f"{item.rule.text} in {item.label}"
            continue
        if certain or resolver.tree_holds(root, lambda p: read.match((p,)) is not None):
            return f"{item.rule.text} in {item.label}"
    return None


_FIND_NAME_TESTS = frozenset({"-name", "-iname"})
_FIND_HARMLESS = frozenset({"-type", "-maxdepth", "-mindepth"})


def _printed_names(item: CommandFacts) -> tuple[str, ...] | None:
    """The name patterns that limit what a tree reader prints (``()``: none at all), or None
    when it may print any name or any contents: ``du -s`` prints one total, ``find ROOT -name
    P`` (with only ``-type``, ``-maxdepth``, ``-mindepth``, ``-print`` beside) prints names
    matching P, ``grep -r --include=P`` reads only files matching P."""
    command = item.command
    args = [w.value for w in command.parts[1:]]
    if command.name == "du":
        summary = any(
            a in ("--summarize", "--max-depth=0", "-d0") or (a[:1] == "-" and "s" in a[1:])
            for a in args if not a.startswith("--") or a in ("--summarize", "--max-depth=0")
        )  # fmt: skip
        every = any(a in ("--all",) or (a[:1] == "-" and a[1:2] != "-" and "a" in a) for a in args)
        return () if summary and not every else None
    if command.name in ("grep", "egrep", "fgrep"):
        return _grep_includes(args)
    if command.name != "find":
        return None
    names: list[str] = []
    i = next((k for k, a in enumerate(args) if a.startswith("-")), len(args))
    while i < len(args):
        arg = args[i]
        if arg in _FIND_NAME_TESTS and i + 1 < len(args):
            names.append(args[i + 1])
            i += 2
        elif arg in _FIND_HARMLESS and i + 1 < len(args):
            i += 2
        elif arg == "-print":
            i += 1
        else:
            return None
    return tuple(names) if len(names) == 1 else None


def _unknowable(
    rules: CompiledRules,
    facts: CallFacts,
    *,
    sandboxed: bool,
    written: Collection[str],
    exact: bool = False,
) -> tuple[str, bool] | None:
    """Why a line can't be checked while deny rules are in force, and whether a rule naming
    the exact line would allow it (not for code this session wrote, a denied program an
    operand spells, or a line the analysis can't split)."""
    if facts.is_shell and facts.unverifiable:
        return f"The command can't be checked before it runs ({facts.unverifiable})", False
    line_writes = written_by(facts)  # (a line may write a script, then run it)
    for item in facts.commands:
        command = item.command
        why = _hidden_program(rules, item) if rules.deny.shell else None
        if why is None and (written or line_writes) and (not sandboxed or rules.deny.shell):
            why = runs_written(item, facts.shell_dirs, (*written, *line_writes)) or None
        if why is not None:
            return why, False  # (no rule waives a denied program, or code this session wrote)
        if exact:
            continue  # (a rule names the whole line: the rest is the person's decision)
        if command.risky and not (command.inline_only and sandboxed and not rules.deny.shell):
            why = _risk(item)
        elif item.traits is not None and item.traits.inline_code is not None:
            why = item.traits.inline_code
        elif item.unresolved or (item.after_links and not sandboxed):
            why = item.unresolved or item.after_links
        elif (item.dynamic_target or (item.dynamic and command.name not in NOT_FILES)) and not (
            sandboxed and _runs_no_operand(rules, command.name)
        ):  # (in the sandbox, the file can't be a denied or protected one)
            why = (
                f"`{command.source_text}` names a file that is only known when it runs"
                " (a variable, a substitution, input from xargs, or a cd to an unknown place)"
            )
        if why is not None and not rules.allow.shell.match((command.source_text,), exact_only=True):
            return why, True  # (a rule that names this exact command allows it)
    return None


_NEVER_RUN_OPERANDS = frozenset(
    {"git", "mkdir", "touch", "cp", "mv", "ln", "chmod", "chown", "chgrp", "rmdir", "cd",
     "pushd", "popd", "tee", "export", "unset", "local", "declare", "readonly", "typeset",
     "man", "info", "apropos", "whatis"}
)  # fmt: skip
"""Programs that never run an operand as a program (besides the read-only list's)."""


def _runs_no_operand(rules: CompiledRules, name: str) -> bool:
    """Whether an operand of `name` can't be a denied program that it runs: no Bash deny
    rule is in force, or the program never runs its operands."""
    return not rules.deny.shell or name in _NEVER_RUN_OPERANDS or name in READ_ONLY_PROGRAMS


def _hidden_program(rules: CompiledRules, item: CommandFacts) -> str | None:
    """A denied command line that the operands of a program not known to leave them alone
    spell out (``prlimit --nofile=9 rm x``, ``somewrapper -q rm x``): the wrapper may run it."""
    command = item.command
    parts = command.parts
    if len(parts) < 2 or command.name in _NEVER_RUN_OPERANDS or command.name in READ_ONLY_PROGRAMS:
        return None
    for k in range(1, len(parts)):
        words = [program(parts[k]).value, *(w.value for w in parts[k + 1 :])]
        hit = rules.deny.shell.match((normalize(words),))
        if hit is not None:
            return (
                f"`{command.name}` may run `{normalize(words)}`, which the rule "
                f"{hit.rule.text} denies: the program it runs can't be named for sure"
            )
    return None


def _risk(item: CommandFacts) -> str:
    command = item.command
    reason = getattr(command, "risk_reason", "") or ""
    if reason:
        return f"{reason}: `{command.source_text}`"
    if command.opaque:
        return f"The program `{command.source_text}` runs is only known when it runs"
    if command.runs_code:
        return f"`{command.source_text}` runs code that can't be checked before it runs"
    if command.env_hazard:
        return f"An assignment in `{command.source_text}` changes what runs"
    return f"`{command.source_text}` is quoted in a way that hides what it runs"
