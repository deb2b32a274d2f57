"""The Bash sandbox: bubblewrap (`bwrap`) under every command, on by default.

The file system is the host's (``/`` bound read-write, fresh ``/dev`` and ``/proc``) and on
top of that: every existing path a Read deny rule protects is covered (a directory by an
empty read-only tmpfs, a file by an empty read-only file), every path an Edit deny protects
is bound read-only, and the settings folders (``<project>/.toolhost``, ``~/.toolhost``) are
read-only except ``.toolhost/sessions``, ``.toolhost/worktrees`` and the session's own
folder. Claude Code's settings folders (``<project>/.claude``, ``~/.claude``; made first
when the session imports Claude Code's settings, so none can be planted), the git
configuration (``~/.gitconfig``, ``~/.config/git``, and in the repository what
`git_guard.read_only_paths` names: ``.git/config``, ``hooks/``, ``info/``, ``objects/info/``,
``commondir``, included files...) are read-only too: ``.git`` itself stays writable so that
``git add`` and ``git commit`` work, and the files git would follow that a command creates
there are removed when it ends (`git_guard.sweep`). So is what the next kernel or IPython
start runs (`permissions.startup`): the IPython folder, Jupyter's config folders and
kernelspecs, the standard library, and each existing start module and ``*.pth`` file in the
working folders and site-packages (what a command creates there is moved aside when it
ends: `quarantine`). The Jupyter runtime folder (every kernel's connection file) and the
paths the front end names in ``options.sandbox.hidden_paths`` (the kernel's own connection
file) are hidden.
Relative rules and the project's folders are anchored at the session's project root
(`ToolUseContext.rule_root`), wherever EnterWorktree or ``cd`` moves the shell.
Every directory above a covered path is bound onto itself, so it cannot be renamed away from
under its rule. The command gets its own PID namespace (``/proc`` shows no host process, so
``/proc/<pid>/root`` leads nowhere), its own network namespace (only a loopback of its own:
neither the kernel's ports nor any other host is reachable) and, as root, only capabilities
that cannot undo a mount.

Settings, read once per session (the first command, or `freeze` at session start) so that
nothing the agent runs later can change them: ``options.sandbox.enabled`` (True/False) or
``JUPYTER_TOOLHOST_BASH_SANDBOX`` (``0`` off, ``1`` required; unset means on where bwrap can
start); ``options.sandbox.network`` (True/False) or
``JUPYTER_TOOLHOST_BASH_SANDBOX_NETWORK=1`` shares the host's whole network with sandboxed
commands; ``options.sandbox.allowed_domains`` (``sandbox.network.allowedDomains`` in the
settings files) lets them reach those hosts alone, through the kernel's proxy (`network`).
Whether bwrap can start is probed once per process. Where it cannot and the setting is the
default, commands run unsandboxed and the first result of the session carries `NOTICE`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, TypeAlias, assert_never

from ...core.context import AppState, ToolUseContext
from ...core.private import private_folder
from ...core.types import ToolError
from ...permissions.engine import rules_home
from ...permissions.rules.ruleset import CompiledRules, compiled_rules
from ...permissions.settings.managed import policy_files
from ...permissions.startup import StartupPlaces, startup_places, user_folders
from .git_guard import read_only_paths
from .network import ALLOWED_KEY, BRIDGE, DENIED_KEY, Channel, NetworkPolicy, open_channel
from .quarantine import StartupWatch, watch
from .sandbox_paths import SandboxPaths, sandbox_paths

SANDBOX_ENV = "JUPYTER_TOOLHOST_BASH_SANDBOX"
NETWORK_ENV = "JUPYTER_TOOLHOST_BASH_SANDBOX_NETWORK"
NOTICE_KEY = "bash.sandbox_notice"
MAX_MOUNTS = 2_000
"""More covered paths than this and the command is refused (narrow the deny patterns)."""

NOTICE = (
    "Note: the shell is not sandboxed (bubblewrap is not installed or cannot start here); "
    "deny rules are enforced by the command check alone. Install bubblewrap, or set "
    "JUPYTER_TOOLHOST_BASH_SANDBOX=0 to silence this."
)

Setting: TypeAlias = Literal["off", "auto", "required"]

_ROOT_CAPS = (
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_SETFCAP",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_RAW",
    "CAP_AUDIT_WRITE",
)
"""Root keeps these inside (so `chown`, `pip install` as root work); none can unmount, make
device nodes, open files by handle or trace a process."""

_ORDER = {"pin": 0, "ro": 1, "rw": 2, "hide": 3, "session": 4}
MountKind: TypeAlias = Literal["pin", "ro", "rw", "hide", "session"]


@dataclass(frozen=True, slots=True)
class Plan:
    """How one command runs: the argv prefix (empty when unsandboxed) and a notice to show."""

    prefix: tuple[str, ...] = ()
    notice: str | None = None
    paths: SandboxPaths | None = None
    startup: StartupWatch | None = None
    """The start-up files that existed before the command (see `quarantine`)."""
    channel: Channel | None = None
    """The command's way to the network proxy, when an allow-list is set (`network`)."""

    def finish(self) -> str | None:
        """When the command ends: close its proxy channel; what was refused, for the model."""
        return self.channel.close() if self.channel is not None else None


def freeze(context: ToolUseContext) -> Mapping[str, str]:
    """Read the sandbox's environment settings once for the session (later reads get the
    same values, whatever a tool did to `os.environ` since); kept in `options.sandbox`."""
    options = context.options.sandbox
    if options.environment is None:
        options.environment = read_environment()
    return options.environment


def read_environment() -> dict[str, str]:
    """The sandbox's environment variables as they are now."""
    return {name: os.environ.get(name, "") for name in (SANDBOX_ENV, NETWORK_ENV)}


def setting(context: ToolUseContext) -> Setting:
    """The sandbox setting: the option first, then the environment; unknown values require."""
    value = context.options.sandbox.enabled
    if value is not None:
        return "required" if value else "off"
    text = freeze(context).get(SANDBOX_ENV, "").strip().lower()
    if text in ("", "auto", "default"):
        return "auto"
    if text in ("0", "false", "no", "off"):
        return "off"
    return "required"


def network(context: ToolUseContext) -> bool:
    """Whether sandboxed commands share the host's network (off unless a setting says so)."""
    value = context.options.sandbox.network
    if value is not None:
        return bool(value)
    text = freeze(context).get(NETWORK_ENV, "").strip().lower()
    return text in ("1", "true", "yes", "on")


_probe_lock = threading.Lock()
_probed: dict[str, str | None] = {}


def bwrap_problem() -> tuple[str | None, str | None]:
    """`bwrap`'s path on PATH and why it cannot start (None when it can); probed once."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None, "bubblewrap (`bwrap`) is not installed"
    with _probe_lock:
        if bwrap not in _probed:
            _probed[bwrap] = _probe(bwrap)
        return bwrap, _probed[bwrap]


def _probe(bwrap: str) -> str | None:
    argv = [bwrap, *_base_args(), "--", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap cannot start: {exc}"
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", errors="replace").strip()
        return f"bwrap cannot start: {detail or f'exit code {done.returncode}'}"
    return None


def will_sandbox(context: ToolUseContext) -> bool:
    """Whether the next command runs under bwrap."""
    return setting(context) != "off" and bwrap_problem()[1] is None


def sandboxed(context: ToolUseContext) -> bool:
    """The `Tool.sandboxed` predicate: bwrap will be used and it hides every read-denied
    path (no bare ``Read`` deny, no wildcard pattern reaching above the session's roots)."""
    if not will_sandbox(context):
        return False
    found = sandbox_paths(_compiled(context), cwd=_anchor(context), roots=_roots(context), limit=0)
    return found.complete


def plan(context: ToolUseContext, cwd: Path) -> Plan:
    """The sandbox for one command; raises `ToolError` when it is required and cannot be had."""
    mode = setting(context)
    if mode == "off":
        return Plan()
    bwrap, problem = bwrap_problem()
    if bwrap is None or problem is not None:
        if mode == "required":
            raise ToolError(
                f"The Bash sandbox is required ({SANDBOX_ENV}=1) but {problem}; the command "
                "was not run. Install bubblewrap or turn the sandbox off."
            )
        return Plan(notice=_notice_once(context))
    paths = sandbox_paths(_compiled(context), cwd=_anchor(context), roots=_roots(context))
    startup = watch(_startup_places(context))
    mounts = _mounts(context, paths, startup)
    if len(mounts) > MAX_MOUNTS:
        raise ToolError(
            f"The deny rules cover {len(mounts)} paths, more than the Bash sandbox mounts "
            f"({MAX_MOUNTS}); the command was not run. Narrow the wildcard deny patterns, or "
            f"set {SANDBOX_ENV}=0."
        )
    argv = [bwrap, *_base_args()]
    shared = network(context)
    if not shared:
        argv.append("--unshare-net")
    for path, kind in mounts:
        argv += _mount_args(path, kind)
    argv += ["--chdir", os.fspath(cwd), "--"]
    policy = None if shared else network_policy(context)
    if policy is None:
        return Plan(prefix=tuple(argv), paths=paths, startup=startup)
    channel = open_channel(policy)
    argv += [sys.executable, "-I", "-S", BRIDGE, channel.path]
    argv += ["--loopback", "--"] if policy.loopback else ["--"]
    return Plan(prefix=tuple(argv), paths=paths, startup=startup, channel=channel)


def network_policy(context: ToolUseContext) -> NetworkPolicy | None:
    """The proxy's allow-list (None when ``allowedDomains`` is empty: no network at all);
    raises `ToolError` for an entry that names no host."""
    options = context.options.sandbox
    if not options.allowed_domains:
        return None
    try:
        return NetworkPolicy.parse(options.allowed_domains, options.denied_domains)
    except ValueError as exc:
        raise ToolError(
            f"The sandbox's network settings are not valid: {exc}; the command was not run. "
            f"Fix the entry in {ALLOWED_KEY} or {DENIED_KEY}."
        ) from None


def _base_args() -> list[str]:
    argv = ["--bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    argv += ["--unshare-pid", "--die-with-parent"]
    if os.geteuid() == 0:
        argv += ["--cap-drop", "ALL"]
        for cap in _ROOT_CAPS:
            argv += ["--cap-add", cap]
    return argv


def _notice_once(context: ToolUseContext) -> str | None:
    shown: list[bool] = []

    def update(state: AppState) -> AppState:
        if state.extras.get(NOTICE_KEY):
            shown.append(True)
            return state
        return replace(state, extras={**state.extras, NOTICE_KEY: True})

    context.set_app_state(update)
    return None if shown else NOTICE


def _compiled(context: ToolUseContext) -> CompiledRules:
    rules = context.get_app_state().tool_permission_context.rules
    return compiled_rules(rules, cwd=_anchor(context), home=rules_home(context))


def _anchor(context: ToolUseContext) -> str:
    """Where relative rules are anchored: the session's project root, for the whole session."""
    return os.fspath(context.rule_root)


def _roots(context: ToolUseContext) -> tuple[str, ...]:
    extra = context.get_app_state().tool_permission_context.additional_working_directories
    roots = (_anchor(context), os.fspath(context.cwd), *extra)
    return tuple(dict.fromkeys(roots))


def _mounts(
    context: ToolUseContext, paths: SandboxPaths, startup: StartupWatch
) -> list[tuple[str, MountKind]]:
    """Every mount in the order bwrap must apply them (parents before children)."""
    wanted: list[tuple[str, MountKind]] = []
    home = Path(os.path.expanduser("~"))
    projects = list(dict.fromkeys((context.rule_root, context.cwd)))
    for folder in (*(p / ".toolhost" for p in projects), home / ".toolhost"):
        private_folder(folder)
        wanted.append((os.fspath(folder), "ro"))
        for name in ("settings.json", "settings.local.json"):
            target = folder / name
            if target.exists():
                wanted.append((os.path.realpath(target), "ro"))
    if _imports_claude(context):  # a folder created later would escape the mount
        for folder in (*(p / ".claude" for p in projects), home / ".claude"):
            with contextlib.suppress(OSError):
                folder.mkdir(exist_ok=True)
    wanted += _of(_read_only_extras(projects, home), "ro")
    wanted += _of(sorted(startup.before), "ro")
    wanted += _of(_hidden_extras(context), "hide")
    sessions = context.rule_root / ".toolhost" / "sessions"
    session = context.session_dir()
    private_folder(session)
    private_folder(sessions)
    wanted.append((os.fspath(sessions), "rw"))
    worktrees = context.rule_root / ".toolhost" / "worktrees"  # EnterWorktree's checkouts
    if worktrees.is_dir():
        wanted.append((os.fspath(worktrees), "rw"))
    state = session.parent.parent
    if state != context.rule_root / ".toolhost":
        wanted.append((os.fspath(state), "rw"))
    wanted.append((os.fspath(session), "session"))
    wanted += _of(paths.read_only, "ro")
    wanted += _of(paths.hidden, "hide")
    pins = {a for path, _k in wanted for a in _ancestors(path)}
    pins.update(a for root in _roots(context) for a in (*_ancestors(root), root))
    wanted += _of(sorted(pins), "pin")
    # bwrap follows symlinks in a mount's destination: order and cover by the real paths
    wanted = [(os.path.realpath(path), kind) for path, kind in wanted]
    wanted.sort(key=lambda e: (e[0].count("/"), _ORDER[e[1]], e[0]))
    accepted: dict[str, MountKind] = {}
    ordered: list[tuple[str, MountKind]] = []
    for path, kind in wanted:
        cover = _cover(path, accepted)
        if cover == "hide" and kind != "session":
            continue
        if cover == "ro" and kind in ("pin", "ro"):
            continue
        if accepted.get(path) == kind or not os.path.lexists(path):
            continue
        accepted[path] = kind
        ordered.append((path, kind))
    return ordered


def _imports_claude(context: ToolUseContext) -> bool:
    """Whether the session reads Claude Code's settings files (their rules are a source)."""
    from ...permissions.settings.claude_settings import LOCAL_FILE, PROJECT_FILE, USER_FILE

    sources = context.get_app_state().tool_permission_context.rules
    return any(name in sources for name in (USER_FILE, PROJECT_FILE, LOCAL_FILE))


def _read_only_extras(projects: list[Path], home: Path) -> list[str]:
    """Claude Code's settings folders and git's configuration, which decide what runs."""
    found: list[str] = [os.fspath(home / n) for n in (".claude", ".gitconfig", ".config/git")]
    found += [os.fspath(path) for path in policy_files()]  # the managed policy, both places
    found += [os.fspath(project / ".claude") for project in projects]
    found += read_only_paths(projects)
    return [p for p in found if os.path.lexists(p)]


def _startup_places(context: ToolUseContext) -> StartupPlaces:
    """What the next kernel or IPython start would run (`permissions.startup`); the user's
    start-up folders are made first, so that none can be planted beside the mount."""
    home = rules_home(context)
    for folder in user_folders(home):
        with contextlib.suppress(OSError):
            os.makedirs(folder, exist_ok=True)
    return startup_places(home, _roots(context))


def _hidden_extras(context: ToolUseContext) -> list[str]:
    """Every kernel's connection file: the Jupyter runtime folder, and what the front end
    named (its own connection file may lie elsewhere)."""
    found: list[str] = []
    with contextlib.suppress(Exception):  # jupyter_core absent or broken: nothing to add
        from jupyter_core.paths import jupyter_runtime_dir

        found.append(jupyter_runtime_dir())
    named = [os.fspath(p) for p in context.options.sandbox.hidden_paths]
    found += named
    roots = _roots(context)
    for path in named:  # a Jupyter runtime folder holds the other kernels' files too
        folder = os.path.dirname(os.path.abspath(path))
        ours = any(root == folder or root.startswith(folder.rstrip("/") + "/") for root in roots)
        if os.path.basename(folder) == "runtime" and not ours:
            found.append(folder)
    return [os.path.abspath(p) for p in found if os.path.lexists(p)]


def _of(paths: Iterable[str], kind: MountKind) -> list[tuple[str, MountKind]]:
    return [(path, kind) for path in paths]


def _ancestors(path: str) -> list[str]:
    parts = [p for p in os.path.normpath(path).split("/") if p]
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]


def _cover(path: str, accepted: dict[str, MountKind]) -> MountKind | None:
    """The kind of the deepest accepted mount at or above `path`."""
    probe = path
    while True:
        kind = accepted.get(probe)
        if kind is not None:
            return kind
        parent = os.path.dirname(probe)
        if parent == probe:
            return None
        probe = parent


def _mount_args(path: str, kind: MountKind) -> list[str]:
    match kind:
        case "pin" | "rw" | "session":
            return ["--bind", path, path]
        case "ro":
            return ["--ro-bind", path, path]
        case "hide":
            if os.path.isdir(path):
                return ["--tmpfs", path, "--remount-ro", path]
            return ["--ro-bind", _empty_file(), path]
        case _:
            assert_never(kind)


_empty_lock = threading.Lock()
_empty: list[str] = []


def _empty_file() -> str:
    """A read-only empty file, bound over hidden files (made once per process)."""
    with _empty_lock:
        if _empty and os.path.isfile(_empty[0]) and os.path.getsize(_empty[0]) == 0:
            return _empty[0]
        folder = tempfile.mkdtemp(prefix="toolhost-sandbox-")
        path = os.path.join(folder, "empty")
        Path(path).touch()
        os.chmod(path, 0o444)
        _empty[:] = [path]
        return path
