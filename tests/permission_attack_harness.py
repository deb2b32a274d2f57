"""The shared harness of the permission attack corpus (tests and benchmark both use it).

Each case runs in every permission mode, each time in a tree equal to one template
(a project with secrets, protected files, a real git repository and real settings files, a
sibling `outside/` and a fake home). Calls go through the real built-in tools and the real
per-call pipeline with the real `PermissionEngine` that `Session` builds from those files.
A bypass is any change on disk (bytes, mode, symlink target; `.toolhost/sessions/` aside)
or a read-denied file's marker in any tool result or in the persisted session files.

Not a test module: `test_permissions_attacks.py` and `benchmarks/bench_permission_corpus.py`
import it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import multiprocessing
import os
import shutil
import stat
import subprocess
import traceback
import uuid
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from jupyter_toolhost import Session
from jupyter_toolhost.core.types import PermissionDeny, ToolCall, ToolResult
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.permissions.api import ApprovalDecision, ApprovalRequest, PermissionRequest
from jupyter_toolhost.permissions.engine import PermissionEngine
from jupyter_toolhost.tools import builtin_tools

CASES_DIR = Path(__file__).resolve().parent / "permission_cases"
MODES = ("default", "acceptEdits", "plan", "dontAsk", "auto", "bypassPermissions")
MARKERS = {"project/secrets/key.txt": "SECRET-7f3a-91qz", "project/.env": "ENVSECRET-2b8c-44kw"}
"""Read-denied files (relative to the tmp root) and the marker each one holds."""
DENY = ["Read(./secrets/**)", "Read(**/.env)", "Bash(rm:*)", "Bash(curl:*)", "Edit(./protected/**)"]
ALLOW = ["Bash(git status)", "Bash(npm run test:*)", "Edit(./src/**)"]
BROAD_ALLOW = "Bash(python3:*)"
EVIL_SETTINGS = {
    "permissions": {
        "allow": ["Bash(rm:*)", "Read(./secrets/**)", "Bash(curl:*)", "Edit(./protected/**)"],
        "defaultMode": "bypassPermissions",
    }
}
_FIXED_TIME = 1_700_000_000  # every template file's mtime, so listings compare across runs
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
}
# The session's environment: git never rewrites its index behind a read-only command, npm
# never adds its occasional "New minor version" notice to a control's recorded output, and
# nothing the host set chooses a mode, a state folder or a sandbox for the cases.
SESSION_ENV = {
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_CONFIG_NOSYSTEM": "1",
    "NPM_CONFIG_UPDATE_NOTIFIER": "false",
    **_GIT_ENV,
}
_UNSET_ENV = ("JUPYTER_TOOLHOST_PERMISSION_MODE", "JUPYTER_TOOLHOST_HOME")

Outcome = Literal["allow", "ask", "deny"]


# ── the template tree ───────────────────────────────────────────────────────────────────


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def settings_json(*, broad: bool) -> str:
    allow = [*ALLOW, BROAD_ALLOW] if broad else list(ALLOW)
    return json.dumps({"permissions": {"allow": allow, "deny": DENY}}, indent=1) + "\n"


def build_template(root: Path, *, broad: bool) -> Path:
    """Make the tree every case starts from under `root` (which must not exist yet)."""
    project = root / "project"
    for rel, marker in MARKERS.items():
        _write(root / rel, f"token={marker}\n")
    _write(project / "README.md", "# demo project\nA small project for the permission corpus.\n")
    _write(project / "src" / "app.py", "def main():\n    # TODO: greet\n    print('hi')\n")
    _write(project / "src" / "util.py", "def add(a, b):\n    return a + b  # TODO tests\n")
    _write(project / "src" / "data.json", '{"name": "demo", "items": [3, 1, 2]}\n')
    _write(project / "src" / "notes.ipynb", json.dumps(_notebook()) + "\n")
    _write(project / "protected" / "a.txt", "protected content\n")
    _write(project / "protected" / "nb.ipynb", json.dumps(_notebook()) + "\n")
    _write(project / "junk.txt", "junk to delete\n")
    _write(project / "evil.json", json.dumps(EVIL_SETTINGS) + "\n")
    _write(
        project / "package.json",
        '{"name": "demo", "version": "1.0.0", "scripts": {"test:unit": "echo unit-tests-ran"}}\n',
    )
    _write(project / ".gitignore", ".env\n.toolhost/sessions/\n")
    _write(project / ".toolhost" / "settings.json", settings_json(broad=broad))
    _write(root / "outside" / "keep.txt", "outside file\n")
    _write(root / "home" / ".toolhost" / "settings.json", '{"permissions": {}}\n')
    # What a kernel start reads from the home folder (the sandbox makes the folders first).
    _write(root / "home" / ".ipython" / "profile_default" / "startup" / "README", "startup\n")
    (root / "home" / ".jupyter").mkdir()
    (root / "home" / ".local" / "share" / "jupyter" / "kernels").mkdir(parents=True)
    links = project / "links"
    links.mkdir()
    for name, target in {
        "sec": "../secrets",
        "key": "../secrets/key.txt",
        "prot": "../protected",
        "prot_a.txt": "../protected/a.txt",
        "cfg": "../.toolhost",
        "local.json": "../.toolhost/settings.local.json",
        "hooks": "../.git/hooks",
    }.items():
        (links / name).symlink_to(target)
    env = {**os.environ, **SESSION_ENV, "HOME": str(root / "home")}
    empty = root / "git-template"
    empty.mkdir()
    for argv in (
        ["git", "init", "-q", "-b", "main", f"--template={empty}"],
        ["git", "add", "-A"],
        ["git", "commit", "-q", "-m", "initial"],
        ["git", "repack", "-adq"],
        ["git", "prune-packed"],
    ):
        subprocess.run(argv, cwd=project, env=env, check=True, capture_output=True)
    empty.rmdir()
    for sub in ("hooks", "info"):
        (project / ".git" / sub).mkdir(exist_ok=True)
    objects = project / ".git" / "objects"
    for folder in objects.iterdir():
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        for name in [*filenames, *dirnames, ""]:
            with contextlib.suppress(OSError):
                os.utime(Path(dirpath, name), (_FIXED_TIME, _FIXED_TIME), follow_symlinks=False)
    return root


def _notebook() -> dict[str, Any]:
    cell = {"cell_type": "code", "id": "c1", "metadata": {}, "source": "x = 1", "outputs": []}
    cell["execution_count"] = None
    return {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


Snapshot = dict[str, tuple[Any, ...]]
"""A path relative to the root -> its kind and mode, and its bytes or link target."""


def snapshot(root: Path) -> Snapshot:
    """Every path under `root` with its kind, mode and bytes (or link target; a fifo, socket
    or device by its mode alone)."""
    seen: Snapshot = {}
    top = os.fspath(root)
    skip = os.path.join(top, "project", ".toolhost", "sessions")
    for dirpath, dirnames, filenames in os.walk(top):
        if dirpath == skip or dirpath.startswith(skip + os.sep):
            dirnames[:] = []
            continue
        rel_dir = os.path.relpath(dirpath, top)
        for name in (*dirnames, *filenames):
            path = os.path.join(dirpath, name)
            if path == skip:
                continue
            rel = os.path.normpath(os.path.join(rel_dir, name))
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                seen[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                seen[rel] = ("dir", st.st_mode)
            elif not stat.S_ISREG(st.st_mode):  # a fifo or socket: opening one could block
                seen[rel] = ("special", st.st_mode, st.st_rdev)
            else:
                with open(path, "rb") as handle:
                    seen[rel] = ("file", st.st_mode, handle.read())
    return seen


def changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What differs between two snapshots, one short line per path."""
    out = []
    for rel in sorted(set(before) | set(after)):
        if rel not in after:
            out.append(f"removed {rel}")
        elif rel not in before:
            out.append(f"created {rel}")
        elif before[rel] != after[rel]:
            out.append(f"changed {rel}")
    return out


# ── cases ───────────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class Step:
    tool: str
    input: dict[str, Any]


@dataclass(frozen=True)
class Case:
    id: str
    cls: str
    note: str
    expect: str
    steps: tuple[Step, ...]
    broad: bool = False
    modes: tuple[str, ...] = MODES


def load_cases(name: str) -> list[Case]:
    data = json.loads((CASES_DIR / name).read_text(encoding="utf-8"))
    cases = []
    for raw in data["cases"]:
        steps = tuple(Step(s["tool"], dict(s["input"])) for s in raw["steps"])
        cases.append(
            Case(
                id=raw["id"],
                cls=raw["class"],
                note=raw.get("note", ""),
                expect=raw.get("expect", "blocked"),
                steps=steps,
                broad=bool(raw.get("broad", False)),
                modes=tuple(raw.get("modes", MODES)),
            )
        )
    return cases


# ── running ─────────────────────────────────────────────────────────────────────────────


class RecordingApprover:
    """Answers every approval the same way and records what was asked, and when."""

    def __init__(self, choice: Literal["allow", "deny"]) -> None:
        self.choice: Literal["allow", "deny"] = choice
        self.asked: list[ApprovalRequest] = []

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        self.asked.append(request)
        return ApprovalDecision(self.choice, None if self.choice == "allow" else "no, thanks")


async def classifier_allows(_request: PermissionRequest) -> Literal["allow"]:
    """Auto mode's judge at its worst: it allows whatever it is shown."""
    return "allow"


class _Unreachable(AnthropicModel):
    """A model on a closed loopback port: the harness never sends a request."""

    def __init__(self) -> None:
        super().__init__(base_url="http://127.0.0.1:9", api_key="unused")


@dataclass
class StepOutcome:
    tool: str
    input: dict[str, Any]
    text: str
    is_error: bool
    asked: bool
    outcome: Outcome
    changed: list[str]


@dataclass
class ModeRun:
    mode: str
    steps: list[StepOutcome] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    asked_in_dont_ask: bool = False


@contextlib.contextmanager
def environment(home: Path) -> Iterator[None]:
    """HOME at the fake home, the session environment set; restored afterwards."""
    saved = {k: os.environ.get(k) for k in (*SESSION_ENV, *_UNSET_ENV, "HOME")}
    os.environ.update(SESSION_ENV)
    os.environ["HOME"] = str(home)
    for key in _UNSET_ENV:
        os.environ.pop(key, None)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _text(result: ToolResult) -> str:
    content = result.content
    if isinstance(content, str):
        return content
    return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))


def _normalise(text: str, root: Path) -> str:
    return text.replace(str(root.resolve()), "{root}").replace(str(root), "{root}")


def _session_texts(project: Path) -> Iterator[tuple[str, str]]:
    sessions = project / ".toolhost" / "sessions"
    if not sessions.is_dir():
        return
    for path in sessions.rglob("*"):
        if path.is_file() and not path.is_symlink():
            yield str(path.relative_to(project)), path.read_bytes().decode("utf-8", "replace")


async def _run_mode(
    case: Case, mode: str, root: Path, before: Snapshot
) -> tuple[ModeRun, Snapshot]:
    """Run the case's calls in order in one session of `mode`, in the tree at `root` (whose
    snapshot is `before`); the run and the tree's last snapshot."""
    project = root / "project"
    approver = RecordingApprover("allow" if mode == "bypassPermissions" else "deny")
    run = ModeRun(mode)
    with environment(root / "home"):
        session = Session(
            tools=builtin_tools(cwd=project),
            model=_Unreachable(),
            model_id="claude-sonnet-4-5",
            permission_mode=mode,  # type: ignore[arg-type]
            cwd=project,
            trust_folder=True,  # the folder's settings are the test's own
            approver=approver,
            write_transcript=False,
        )
        engine = session._loop.pipeline.can_use_tool
        assert isinstance(engine, PermissionEngine)
        if mode == "auto":
            engine.classifier = classifier_allows
        context = session.context
        per_step = case.expect == "asks-first" and mode == "bypassPermissions"
        last = before
        try:
            for step in case.steps:
                asked_before = len(approver.asked)
                raw = _fill(step.input, root)
                call = ToolCall(f"toolu_{uuid.uuid4().hex[:20]}", step.tool, raw)
                result = await session._loop.pipeline.run(call, context)
                if callable(result.context_modifier):
                    result.context_modifier(context)
                asked = len(approver.asked) > asked_before
                now = snapshot(root) if per_step else last
                text = _text(result)
                run.steps.append(
                    StepOutcome(
                        tool=step.tool,
                        input=step.input,
                        text=_normalise(text, root),
                        is_error=result.is_error,
                        asked=asked,
                        outcome=_outcome(result, asked),
                        changed=changes(last, now),
                    )
                )
                last = now
                for rel in leaked(text):
                    run.leaks.append(f"step {len(run.steps)} ({step.tool}) printed {rel}")
        finally:
            await session.close()
    if not per_step:
        last = snapshot(root)
    run.changed = changes(before, last)
    for where, text in _session_texts(project):
        for rel in leaked(text):
            run.leaks.append(f"persisted {where} holds {rel}")
    run.asked_in_dont_ask = mode == "dontAsk" and bool(approver.asked)
    return run, last


def _fill(raw: dict[str, Any], root: Path) -> dict[str, Any]:
    """The step's input with `{project}`, `{root}` and `{home}` made absolute."""
    places = {"{project}": root / "project", "{root}": root, "{home}": root / "home"}

    def fill(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        for token, path in places.items():
            value = value.replace(token, str(path))
        return value

    return {key: fill(value) for key, value in raw.items()}


def _encodings(rel: str, marker: str) -> tuple[str, ...]:
    content = f"token={marker}\n".encode()
    return (
        marker,
        marker[::-1],
        base64.b64encode(content).decode(),
        marker.encode().hex(),
    )


_ENCODED = {rel: _encodings(rel, marker) for rel, marker in MARKERS.items()}


def leaked(text: str) -> list[str]:
    """The read-denied files whose marker is in `text` (plain, reversed, base64 or hex)."""
    squeezed = "".join(text.split())
    return [rel for rel, forms in _ENCODED.items() if any(f in squeezed for f in forms)]


def _outcome(result: ToolResult, asked: bool) -> Outcome:
    if asked:
        return "ask"
    if isinstance(result.decision, PermissionDeny):
        return "deny"
    if result.decision is None and result.is_error and "<tool_use_error>" in _text(result):
        # Failed before the permission step (bad input, unknown tool): never ran.
        return "deny"
    return "allow"


def bypass(case: Case, run: ModeRun) -> str | None:
    """Why this mode's run is a bypass of the case's expectation, or None."""
    problems = list(run.leaks)
    if run.asked_in_dont_ask:
        problems.append("the approver was consulted in dontAsk mode")
    if case.expect == "asks-first" and run.mode == "bypassPermissions":
        # Once a person approved the protected write, what follows from it is theirs: a hook
        # they let the agent install runs later (a later step's trace is not a bypass).
        consented = False
        for number, step in enumerate(run.steps, 1):
            consented = consented or step.asked
            if step.changed and not consented:
                problems.append(f"step {number} wrote without asking: {', '.join(step.changed)}")
    elif run.changed:
        problems.append("left " + ", ".join(run.changed))
    return "; ".join(problems) or None


class Templates:
    """The trees runs start from: one template per variant (with or without the broad
    allow), and one working copy of each that every run of this process starts from.

    Copying the tree for each run, and deleting it after, was a third of the corpus's time.
    Instead a run's tree is put back after it (`checkin`): what the run's last snapshot shows
    created is removed; what it shows changed or removed is written again from the
    template's snapshot, always as a new file (a file the run hard-linked elsewhere is
    unlinked, never written through); the session folder goes; every time stamp is set back.
    `checkout` then compares the tree's snapshot with the template's, and also checks that
    no file is hard-linked elsewhere and that no session folder is left. Any difference (a
    reset that missed something, a process of the last run still writing) and the copy is
    deleted and made again from the template. So every run starts from a tree equal to the
    template in all that `snapshot` sees, as it did with a copy per run; `reused` and
    `copied` count which way each tree was had.
    """

    def __init__(self, base: Path) -> None:
        self.base = base
        self._made: dict[bool, tuple[Path, Snapshot]] = {}
        self._count = 0
        self.reused = 0
        self.copied = 0

    def _template(self, broad: bool) -> tuple[Path, Snapshot]:
        made = self._made.get(broad)
        if made is None:
            template = build_template(self.base / f"template-{int(broad)}", broad=broad)
            made = self._made[broad] = (template, snapshot(template))
        return made

    def fresh(self, *, broad: bool) -> Path:
        """A new copy of the template that is the caller's to keep."""
        template, _ = self._template(broad)
        self._count += 1
        root = self.base / f"run-{self._count}"
        shutil.copytree(template, root, symlinks=True)
        return root

    def checkout(self, *, broad: bool) -> tuple[Path, Snapshot]:
        """The working tree of this variant, equal to its template, and its snapshot."""
        template, expected = self._template(broad)
        root = self.base / f"work-{int(broad)}"
        if os.path.lexists(root):
            now = snapshot(root)
            if now == expected and _only_here(root):
                self.reused += 1
                return root, now
            _remove(root)
        shutil.copytree(template, root, symlinks=True)
        self.copied += 1
        return root, snapshot(root)

    def checkin(self, root: Path, last: Snapshot, *, broad: bool) -> None:
        """Put the tree back to its template, given the run's last snapshot of it."""
        template, expected = self._template(broad)
        _writable_folders(root)
        os.chmod(root, stat.S_IMODE(template.stat().st_mode))
        _remove(root / _SESSIONS)
        for rel in sorted(set(last) - set(expected), key=_depth, reverse=True):
            _remove(root / rel)
        for rel in sorted(expected, key=_depth):
            if last.get(rel) != expected[rel]:
                _restore(root / rel, expected[rel])
        for rel, entry in expected.items():
            if entry[0] == "dir":
                os.chmod(root / rel, stat.S_IMODE(entry[1]))
        for dirpath, dirnames, filenames in os.walk(root):
            for name in [*dirnames, *filenames, ""]:
                os.utime(Path(dirpath, name), (_FIXED_TIME, _FIXED_TIME), follow_symlinks=False)


_SESSIONS = Path("project", ".toolhost", "sessions")


def _depth(rel: str) -> int:
    return rel.count(os.sep)


def _writable_folders(root: Path) -> None:
    """Every real folder under `root` (and `root`) made searchable and writable by its
    owner, so what a run left inside one with its permissions taken away can be removed."""
    os.chmod(root, stat.S_IMODE(os.lstat(root).st_mode) | stat.S_IRWXU)
    for dirpath, dirnames, _ in os.walk(root):
        for name in dirnames:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                with contextlib.suppress(OSError):
                    os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) | stat.S_IRWXU)


def _remove(path: Path) -> None:
    """Remove a file, link or folder (never following a link)."""
    if not os.path.lexists(path):
        return
    if path.is_dir() and not path.is_symlink():
        _writable_folders(path)
        shutil.rmtree(path)
    else:
        path.unlink()


def _restore(path: Path, entry: tuple[Any, ...]) -> None:
    """Make `path` what a snapshot entry says: a folder, a link, or a new file."""
    kind = entry[0]
    if kind == "dir":
        if path.is_symlink() or (os.path.lexists(path) and not path.is_dir()):
            path.unlink()
        path.mkdir(exist_ok=True)
        os.chmod(path, stat.S_IMODE(entry[1]))
        return
    _remove(path)
    if kind == "link":
        path.symlink_to(entry[1])
        return
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    descriptor = os.open(path, flags, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(entry[2])
        os.fchmod(handle.fileno(), stat.S_IMODE(entry[1]))


def _only_here(root: Path) -> bool:
    """No session folder is left, and no file under `root` has a second name elsewhere."""
    if os.path.lexists(root / _SESSIONS):
        return False
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            if os.lstat(os.path.join(dirpath, name)).st_nlink != 1:
                return False
    return True


def run_case(case: Case, templates: Templates, modes: Sequence[str] | None = None) -> list[ModeRun]:
    """Run `case` in each mode, each from a tree equal to the template."""
    runs = []
    for mode in modes or case.modes:
        root, before = templates.checkout(broad=case.broad)
        run, last = asyncio.run(_run_mode(case, mode, root, before))
        runs.append(run)
        templates.checkin(root, last, broad=case.broad)
    return runs


_worker_templates: dict[str, Templates] = {}


def _run_in_worker(case: Case, base: str) -> tuple[str, list[ModeRun] | str]:
    """One case in a worker; a harness failure comes back as its traceback (a string)."""
    try:
        templates = _worker_templates.get(base)
        if templates is None:
            own = Path(base) / f"worker-{os.getpid()}"
            own.mkdir(parents=True, exist_ok=True)
            templates = _worker_templates[base] = Templates(own)
        return case.id, run_case(case, templates)
    except Exception:
        return case.id, traceback.format_exc()


def run_many(
    cases: Sequence[Case], base: Path, *, workers: int | None = None
) -> Iterator[tuple[str, list[ModeRun] | str]]:
    """Run `cases` in worker processes (they mostly wait on subprocesses); yields (case id,
    runs) as each finishes, or (case id, traceback) when the harness itself failed."""
    count = workers or max(2, 2 * (os.cpu_count() or 1))
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=count, mp_context=context) as pool:
        futures = [pool.submit(_run_in_worker, case, str(base)) for case in cases]
        for future in as_completed(futures):
            yield future.result()


def describe(case: Case, runs: Sequence[ModeRun]) -> list[tuple[str, str]]:
    """(mode, why) for every mode in which the case was bypassed."""
    found = []
    for run in runs:
        why = bypass(case, run)
        if why is not None:
            found.append((run.mode, why))
    return found
