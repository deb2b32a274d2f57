"""What the package saves of a user's conversation is theirs alone, whatever the umask.

On a shared machine (a JupyterHub running each student as their own system user) the usual
umask 022 would make saved results, transcripts, checkpoints, cassettes and settings
readable by every other user. A real session on the loopback Messages API, under umask
022, saves each kind, and none of it may be readable or listable by group or others;
`tests/test_classroom_hub.py` proves the same between two real system users.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from session_support import MODEL

from jupyter_toolhost import Session
from jupyter_toolhost.core.private import private_file, private_folder
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.model.cassette import CassetteModel
from jupyter_toolhost.permissions.settings.settings import save_rule
from jupyter_toolhost.permissions.settings.trust import folder_trust, remember_trust
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.tools import builtin_tools

OPEN_TO_OTHERS = stat.S_IRWXG | stat.S_IRWXO


@pytest.fixture
def loose_umask() -> Iterator[None]:
    """The umask most systems give a user (022: new files readable by everyone)."""
    saved = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(saved)


def _open_to_others(top: Path) -> dict[str, str]:
    return {
        str(path.relative_to(top)): oct(stat.S_IMODE(path.lstat().st_mode))
        for path in [top, *top.rglob("*")]
        if stat.S_IMODE(path.lstat().st_mode) & OPEN_TO_OTHERS and not path.is_symlink()
    }


def test_a_private_folder_is_made_with_its_missing_parents_for_the_owner_alone(
    tmp_path: Path, loose_umask: None
) -> None:
    (tmp_path / "shared").mkdir(mode=0o755)
    made = private_folder(tmp_path / "shared" / ".toolhost" / "sessions" / "s1")
    assert made.is_dir()
    for folder in (made, made.parent, made.parent.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    # A folder that was there keeps its mode; making it again changes nothing.
    assert stat.S_IMODE((tmp_path / "shared").stat().st_mode) == 0o755
    assert private_folder(made) == made
    # A file in the way fails as Path.mkdir does.
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(NotADirectoryError):
        private_folder(tmp_path / "a-file" / "below")
    with pytest.raises(FileExistsError):
        private_folder(tmp_path / "a-file")


def test_a_private_file_is_for_the_owner_alone_and_appends_when_asked(
    tmp_path: Path, loose_umask: None
) -> None:
    path = tmp_path / "out.txt"
    with private_file(path) as out:
        out.write(b"one\n")
    with private_file(path, append=True) as out:
        out.write(b"two\n")
    assert path.read_bytes() == b"one\ntwo\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_everything_a_session_saves_is_unreadable_by_other_users(
    tmp_path: Path, loose_umask: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # (the Bash sandbox makes ~/.toolhost/ too)
    (project / "data.csv").write_text("a,b\n1,2\n")
    with MessagesServer() as server:
        server.add_turns(
            Turn([tool_use("Read", {"file_path": "data.csv"})]),
            Turn(
                [
                    tool_use(
                        "Edit", {"file_path": "data.csv", "old_string": "1", "new_string": "3"}
                    ),
                    tool_use("Write", {"file_path": "notes/plan.md", "content": "plan\n"}),
                ]
            ),
            Turn([tool_use("Bash", {"command": "seq 1 20000; seq 1 3 >&2"})]),
            Turn([tool_use("Bash", {"command": "echo later", "run_in_background": True})]),
            Turn([text("done")]),
        )
        cassette = CassetteModel(
            project / ".toolhost" / "cassettes" / "run.json",
            cassette_mode="record",
            inner=AnthropicModel(base_url=server.base_url, api_key="test-key"),
        )
        session = Session(
            tools=builtin_tools(),
            model=cassette,
            model_id=MODEL,
            cwd=project,
            permission_mode="bypassPermissions",
            retry_backoff_s=0.01,
        )
        assert asyncio.run(session.run("Change the data and count")) == "done"
        assert server.errors == [], server.errors
    save_rule("Bash(seq:*)", scope="user", cwd=project, home=home)
    save_rule("Read(./data.csv)", scope="project", cwd=project, home=home)
    remember_trust(folder_trust(project, home=home, decided=True), home=home)

    state = project / ".toolhost"
    saved = {path.name for path in state.rglob("*")}
    for kind in ("transcript.jsonl", "index.json", "run.json", "settings.json"):
        assert kind in saved, sorted(saved)
    assert any(p.parent.name == "tool-results" for p in state.rglob("*.txt")), sorted(saved)
    assert any(p.parent.name == "files" for p in state.rglob("*")), "no checkpoint blob saved"
    assert (home / ".toolhost" / "settings.json").is_file()
    assert len(list((home / ".toolhost").iterdir())) >= 2, "the trust record is missing"
    assert _open_to_others(state) == {}
    assert _open_to_others(home / ".toolhost") == {}
