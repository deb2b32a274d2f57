"""The README and the docs pages keep their promises, with no network.

Every relative link in README.md and docs/*.md names a file that exists (and, for
`page.md#anchor`, a heading of that page that exists); the README stays a front door of at
most 8 KB; and every section the README once held as the manual has a page. The Sphinx
build itself (`./dev docs`, run in CI with warnings as errors) checks the references inside
the docs too; this module also covers the README, which Sphinx does not build.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
README = REPO / "README.md"
PAGES = sorted(DOCS.glob("*.md"))

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
"""A Markdown inline link or image: its target."""

FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
CODE = re.compile(r"`[^`\n]*`")

MANUAL_SECTIONS = {
    "Two commands on a fresh machine": ("getting-started.md", "From a clone: the `./dev` commands"),
    "Quick start with an API key": ("getting-started.md", "Quick start with an API key"),
    "Python API": ("python-api.md", "Python API"),
    "Tools": ("tools.md", "Tools"),
    "How calls run": ("how-calls-run.md", "How calls run"),
    "Permissions": ("permissions.md", "Permissions"),
    "What a deny covers, in every mode": ("permissions.md", "What a deny covers, in every mode"),
    "The Bash sandbox": ("permissions.md", "The Bash sandbox"),
    "Hooks": ("permissions.md", "Hooks"),
    "MCP servers": ("mcp.md", "MCP servers"),
    "What a cell shows": ("cell.md", "What a cell shows"),
    "Looking inside": ("looking-inside.md", "Looking inside"),
    "Environment": ("configuration.md", "Environment"),
    "Notebooks": ("notebooks.md", "The shipped notebooks"),
    "Development": ("development.md", "Development"),
    "Benchmarks": ("benchmarks.md", "Benchmarks"),
    "Results": ("benchmarks.md", "Results"),
}
"""Each section of the README when it was the manual (up to December 2026): its page, heading."""


def _prose(text: str) -> str:
    """`text` without fenced code blocks and inline code (links there are not links)."""
    return CODE.sub("", FENCE.sub("", text))


def links(text: str) -> list[str]:
    """The relative link targets in Markdown `text` (no scheme, not `mailto:`)."""
    return [
        target
        for target in LINK.findall(_prose(text))
        if not re.match(r"[a-z][a-z0-9+.-]*:", target, re.IGNORECASE)
    ]


def slug(heading: str) -> str:
    """The anchor MyST (and GitHub) give a heading: lower case, punctuation dropped."""
    text = unicodedata.normalize("NFKC", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a Markdown page's headings."""
    return {
        slug(match.group(2))
        for match in re.finditer(r"^(#{1,6})\s+(.+?)\s*#*$", _prose(page.read_text("utf-8")), re.M)
    }


def broken(source: Path) -> list[str]:
    """The relative links of `source` that name no file, or no heading of that file."""
    found = []
    for target in links(source.read_text(encoding="utf-8")):
        path_part, _, anchor = target.partition("#")
        path = (source.parent / path_part).resolve() if path_part else source
        if not path.exists():
            found.append(f"{target}: no such file")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            found.append(f"{target}: {path.name} has no heading with that anchor")
    return found


@pytest.mark.parametrize("source", [README, *PAGES], ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_resolves(source: Path) -> None:
    assert broken(source) == []


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n\n## A part\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\nSee [there](other.md#a-part), [gone](missing.md), [no](other.md#nope),\n"
        "![pic](images/none.png), [web](https://example.org/x), [self](#page).\n"
        "```\n[in code](not-checked.md)\n```\nand `[inline](also-not.md)`.\n",
        encoding="utf-8",
    )
    assert broken(page) == [
        "missing.md: no such file",
        "other.md#nope: other.md has no heading with that anchor",
        "images/none.png: no such file",
    ]


def test_slugs_match_the_anchors_myst_makes() -> None:
    assert slug("What a deny covers, in every mode") == "what-a-deny-covers-in-every-mode"
    assert slug("The Bash sandbox") == "the-bash-sandbox"
    assert slug("`%agent` and friends") == "agent-and-friends"


def test_the_readme_is_a_front_door() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) <= 8 * 1024, "the README is at most 8 KB: move detail to docs/"
    for needed in ("pip install jupyter-toolhost", "%load_ext jupyter_toolhost", "%%agent"):
        assert needed in text, needed
    for command in ("./dev demo", "./dev test"):
        assert command in text, command
    assert re.search(r"!\[[^\]]*\]\(docs/images/[^)]+\.png\)", text), "a screenshot"
    assert "## Licence" in text or "## License" in text


def test_every_section_of_the_old_manual_has_a_page() -> None:
    for old, (page, heading) in MANUAL_SECTIONS.items():
        text = (DOCS / page).read_text(encoding="utf-8")
        assert re.search(rf"^#+\s+{re.escape(heading)}\s*$", text, re.M), f"{old!r}: {page}"


def test_every_page_is_in_the_table_of_contents() -> None:
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    toctree = re.search(r"```\{toctree\}(.*?)```", index, re.S)
    assert toctree is not None
    listed = {line.strip() for line in toctree.group(1).splitlines()}
    assert {page.stem for page in PAGES} - {"index"} <= listed


OUTSIDE_REFERENCES = re.compile("seed" + r" section|DESI" + "GN|issue" + " #")
"""Words that point at documents outside the repository: the design notes and the issue
tracker the project started from. Code and docs name public sources (Claude Code's and the
Messages API's documentation) or give the reasoning itself. Spelled in pieces here so this
file does not match itself."""
SELF_CONTAINED = ("jupyter_toolhost", "benchmarks", "docs", "tests", "notebooks")
SKIPPED_DIRS = {"__pycache__", "_build", "node_modules", "scratch"}


def _repository_texts() -> list[Path]:
    files = [REPO / "pyproject.toml", README, REPO / "dev"]
    for top in SELF_CONTAINED:
        for path in sorted((REPO / top).rglob("*")):
            if path.is_file() and not SKIPPED_DIRS & set(path.relative_to(REPO).parts):
                files.append(path)
    return files


def test_no_reference_to_a_document_outside_the_repository() -> None:
    found = []
    for path in _repository_texts():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary files (images, the lab extension's build) hold no prose
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE_REFERENCES.search(line):
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()[:120]}")
    assert len(_repository_texts()) > 200  # the walk found the package, tests and docs
    assert not found, "\n".join(found)


def test_the_outside_reference_check_finds_each_spelling() -> None:
    for line in ("as the seed" + " section 3.3 says", "the DESI" + "GN target", "issue" + " #21"):
        assert OUTSIDE_REFERENCES.search(line)
    for line in ("designed for notebooks", "issue 21 of a GitHub repo", "a seed of 42"):
        assert not OUTSIDE_REFERENCES.search(line)
