"""Skills' and agent types' front matter is YAML: the shapes real SKILL.md files use read as
their authors meant, and a malformed one is an error that names the file, never a crash."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest

from jupyter_toolhost.core.context import ToolUseContext, ToolUseOptions
from jupyter_toolhost.core.types import ToolInputError
from jupyter_toolhost.tools.agent import AgentInput, start_agent
from jupyter_toolhost.tools.agent.agent_types import agent_types
from jupyter_toolhost.tools.skill import SkillInput, discover, load_skill, skills_prompt
from jupyter_toolhost.tools.skill.frontmatter import FrontMatterError, parse, read
from jupyter_toolhost.tools.skill.prompt import BROKEN

FOLDED = """\ufeff---
name: "sales-report"
description: >
  Builds the weekly sales report from the CSV exports.
  Use when the user asks for sales figures: totals, trends or a chart.
allowed-tools: Bash(python scripts/report.py:*) Read Bash(git log:*)
license: Apache-2.0
metadata:
  version: "1.2"
  author: data-team
tags:
  - reporting
  - csv
user-invocable: true
updated: 2026-01-31
argument-hint:
---
# Sales report

Run the script, then summarise.
"""


def test_a_real_world_skill_front_matter_reads_as_meant() -> None:
    document = parse(FOLDED)
    assert document.text("name") == "sales-report"  # quotes are YAML's, not the name's
    assert document.text("description") == (
        "Builds the weekly sales report from the CSV exports. Use when the user asks for "
        "sales figures: totals, trends or a chart."
    )
    assert document.items("allowed-tools") == [
        "Bash(python scripts/report.py:*)",
        "Read",
        "Bash(git log:*)",
    ]
    assert document.items("tags") == ["reporting", "csv"]
    assert document.text("user-invocable") == "true" and document.text("updated") == "2026-01-31"
    assert document.items("argument-hint") == [] and document.text("argument-hint") == ""
    assert "metadata" not in document.fields  # a nested mapping no reader uses
    assert document.body == "# Sales report\n\nRun the script, then summarise."


@pytest.mark.parametrize(
    ("value", "items"),
    [
        ("[Read, 'Bash(git diff:*)']", ["Read", "Bash(git diff:*)"]),
        ("Read, Grep, Glob", ["Read", "Grep", "Glob"]),
        ('"Bash(npm run test, lint:*), Read"', ["Bash(npm run test, lint:*)", "Read"]),
        (
            "\n  - Read\n  - 'WebFetch(domain:example.com)'",
            ["Read", "WebFetch(domain:example.com)"],
        ),
    ],
    ids=["flow-list", "commas", "comma-inside-parentheses", "block-list"],
)
def test_tool_lists_in_every_form(value: str, items: list[str]) -> None:
    document = parse(f"---\nallowed-tools: {value}\n---\nbody")
    assert document.items("allowed-tools") == items


def test_literal_text_keeps_its_lines_and_no_front_matter_is_all_body() -> None:
    document = parse("---\ndescription: |\n  First line.\n  Second line.\n---\n")
    assert document.text("description") == "First line.\nSecond line."
    assert parse("# Just a body\n").body == "# Just a body"
    assert parse("---\nname: x\nno closing line\n").fields == {}  # not a front matter
    assert parse("---\n---\nbody").fields == {}


@pytest.mark.parametrize(
    ("block", "wording"),
    [
        (
            "name: pdf\ndescription: Use when: the user has a PDF",
            r"SKILL\.md: the front matter is not valid YAML \(line 3: mapping values are not "
            r"allowed here; a value that holds \": \" must be quoted\)",
        ),
        ("name: [unclosed", r"SKILL\.md: the front matter is not valid YAML \(line \d+: "),
        ("- name\n- description", r"SKILL\.md: the front matter should be `key: value` lines"),
    ],
    ids=["colon-in-value", "unclosed-list", "a-list"],
)
def test_a_malformed_front_matter_is_an_error_naming_the_file(
    tmp_path: Path, block: str, wording: str
) -> None:
    path = tmp_path / "SKILL.md"
    path.write_text(f"---\n{block}\n---\nBody.\n")
    with pytest.raises(FrontMatterError, match=wording) as caught:
        read(path)
    assert str(caught.value).startswith(str(path))


def test_a_broken_skill_is_listed_and_loading_it_says_why(tmp_path: Path) -> None:
    skills = tmp_path / ".toolhost" / "skills"
    (skills / "pdf").mkdir(parents=True)
    (skills / "pdf" / "SKILL.md").write_text("---\ndescription: Use when: PDFs\n---\nRead it.")
    (skills / "csv").mkdir()
    (skills / "csv" / "SKILL.md").write_text("---\ndescription: 'Use when: CSVs'\n---\nLoad it.")
    found = discover(tmp_path, home=tmp_path / "home")
    assert found["csv"].description == "Use when: CSVs" and found["csv"].problem is None
    assert found["pdf"].description == BROKEN
    assert f"- pdf: {BROKEN}" in skills_prompt(found)

    context = ToolUseContext(options=ToolUseOptions(tools=[]), cwd=tmp_path)
    with pytest.raises(ToolInputError, match="not valid YAML") as caught:
        load_skill(SkillInput(skill="pdf"), context, home=tmp_path / "home")
    assert str(skills / "pdf" / "SKILL.md") in str(caught.value)
    loaded = load_skill(SkillInput(skill="csv"), context, home=tmp_path / "home")
    assert "Load it." in loaded["text"]


async def test_a_broken_agent_type_refuses_to_start_and_says_why(tmp_path: Path) -> None:
    agents = tmp_path / ".toolhost" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text("---\ntools: [Read, Grep\n---\nReview the diff.")
    types = agent_types(tmp_path, home=tmp_path / "home")
    assert types["reviewer"].problem is not None and "general-purpose" in types
    context = ToolUseContext(options=ToolUseOptions(tools=[]), cwd=tmp_path)
    with pytest.raises(ToolInputError, match=r"reviewer\.md: the front matter is not valid"):
        await start_agent(
            AgentInput(description="review", prompt="Review it.", subagent_type="reviewer"),
            context,
        )


def installed_skill_files() -> list[Path]:
    """SKILL.md files that installed packages ship (some bundle skills for coding agents; the
    test extra's Playwright has since 1.59, its floor)."""
    found: list[Path] = []
    for distribution in importlib.metadata.distributions():
        for file in distribution.files or ():
            if file.name == "SKILL.md":
                found.append(Path(str(distribution.locate_file(file))))
    return sorted(set(found))


def test_the_skills_installed_packages_ship_read_cleanly() -> None:
    files = [path for path in installed_skill_files() if path.is_file()]
    if not files:
        pytest.skip("no installed package ships a SKILL.md")
    for path in files:
        document = read(path)  # raises on a front matter we could not read
        # A name as the skills format writes it (lowercase words and hyphens); not always
        # its folder's (Playwright 1.59 ships `playwright-cli` in a folder called `skill`).
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", document.text("name")), path
        assert len(document.text("description")) > 20, path
        assert document.body, path
        for rule in document.items("allowed-tools"):
            assert re.fullmatch(r"[\w.*-]+(\([^()]*\))?", rule), rule  # one rule per item
