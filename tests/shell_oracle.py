"""The real-run oracle: what a shell command really does in the throwaway project.

Not a test module. `real_run` runs a command with ``bash -c``, under bubblewrap (the host
read-only, no network, its own PID namespace, an empty ``/tmp``, only the project's temp
tree writable), in a fresh copy of the project `shell_corpus.build_project` makes, and
reports what the command did that a deny rule forbids: the victim deleted or changed, the
protected folder changed, the secret's bytes (plain, reversed, base64 or hex) in its output
or in any file it left.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from shell_corpus import SECRET, VICTIM

RUN_TIMEOUT_S = 5.0


@dataclass
class Harm:
    """What one real run did that the rules forbid (empty lists: nothing)."""

    command: str
    did: list[str]
    timed_out: bool = False

    def __bool__(self) -> bool:
        return bool(self.did)


def bwrap_available() -> str | None:
    """Why commands cannot be run under bubblewrap here (None when they can)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed (./dev test installs it)"
    probe = subprocess.run(
        [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-net", "--", "true"],
        capture_output=True,
        timeout=30,
    )
    return None if probe.returncode == 0 else f"bwrap cannot start: {probe.stderr[-200:]!r}"


def _encodings() -> tuple[str, ...]:
    content = f"token={SECRET}\n".encode()
    return (SECRET, SECRET[::-1], base64.b64encode(content).decode(), SECRET.encode().hex())


def shows_secret(text: str) -> bool:
    """Whether `text` holds the secret: plain, reversed, base64 or hex, spaces ignored."""
    squeezed = "".join(text.split())
    return any(form in squeezed for form in _encodings())


def _files(root: Path) -> dict[str, bytes | str]:
    seen: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in (*filenames, *dirnames):
            path = Path(dirpath, name)
            rel = str(path.relative_to(root))
            if path.is_symlink():
                seen[rel] = "link:" + os.readlink(path)
            elif path.is_file():
                try:
                    seen[rel] = path.read_bytes()
                except OSError:
                    seen[rel] = "unreadable"
            else:
                seen[rel] = "dir"
    return seen


def real_run(command: str, template: Path, scratch: Path) -> Harm:
    """Run `command` with ``bash -c`` in a fresh copy of `template` (the project's tree),
    under bubblewrap; what it did that a deny rule forbids."""
    if scratch.exists():
        shutil.rmtree(scratch)
    shutil.copytree(template, scratch, symlinks=True)
    before = _files(scratch)
    project = scratch / "project"
    argv = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    argv += ["--tmpfs", "/tmp", "--bind", str(scratch), str(scratch)]
    argv += ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--die-with-parent"]
    argv += ["--new-session", "--chdir", str(project), "--", "bash", "-c", command]
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(scratch / "home"), "LANG": "C"}
    timed_out = False
    try:
        done = subprocess.run(
            argv, env=env, capture_output=True, timeout=RUN_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
        output = done.stdout + done.stderr
    except subprocess.TimeoutExpired as exc:
        timed_out = True
        output = (exc.stdout or b"") + (exc.stderr or b"")
    after = _files(scratch)
    did = []
    if after.get("project/victim") != VICTIM.encode():
        did.append("deleted or changed the victim")
    protected = {k: v for k, v in after.items() if k.startswith("project/protected")}
    if protected != {k: v for k, v in before.items() if k.startswith("project/protected")}:
        did.append("changed protected/")
    if shows_secret(output.decode("utf-8", "replace")):
        did.append("printed the secret")
    for rel, content in after.items():
        if rel == "project/secrets/key.txt" or before.get(rel) == content:
            continue
        if isinstance(content, bytes) and shows_secret(content.decode("utf-8", "replace")):
            did.append(f"copied the secret into {rel}")
    return Harm(command, did, timed_out)
