"""This package's settings files and Claude Code's are read by one reader: a broken file of
either kind is reported in the same words, with its file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from jupyter_toolhost.permissions.settings.settings import SettingsError, load_settings, save_rule

BROKEN = {
    "invalid JSON": '{\n  "permissions": {\n    "allow": ["Bash(ls)",]\n  }\n}\n',
    "not an object": "[1, 2]\n",
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_both_kinds_of_settings_file_report_a_broken_file_alike(kind: str, tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    for folder in (".toolhost", ".claude"):
        (project / folder).mkdir(parents=True)
        (project / folder / "settings.json").write_text(BROKEN[kind])
    settings = load_settings(cwd=project, home=home, import_claude=True)
    by_file = {Path(p.file).parent.name: (p.line, p.message) for p in settings.problems}
    assert set(by_file) == {".toolhost", ".claude"}
    assert by_file[".toolhost"] == by_file[".claude"]
    with pytest.raises(SettingsError) as raised:
        save_rule("Bash(ls)", cwd=project, home=home)
    line, message = by_file[".toolhost"]
    assert (raised.value.line, raised.value.message) == (line, f"{message}, not changed")


def test_a_rule_that_is_not_a_string_is_a_problem_of_its_file(tmp_path: Path) -> None:
    folder = tmp_path / ".toolhost"
    folder.mkdir()
    (folder / "settings.json").write_text('{"permissions": {"allow": [["Bash(ls)"], "Read"]}}')
    settings = load_settings(cwd=tmp_path, home=tmp_path / "home")
    assert settings.rules["projectSettings"]["allow"] == ("Read",)
    (problem,) = settings.problems
    assert problem.file == str(folder / "settings.json") and problem.line == 1
    assert problem.message.startswith("permissions.allow[0]: must be a rule string such as")
    assert problem.message.endswith("not a list")
