"""Kinds of subagent: the built-in `general-purpose`, and types defined in files.

A type file is `<cwd>/.toolhost/agents/<name>.md` or `~/.toolhost/agents/<name>.md`:
YAML front matter `name`, `description`, `tools` (names; empty means all) and the body as
the type's system prompt. A file whose front matter cannot be read gives a type, named by
the file, that refuses to start and says why.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..skill import frontmatter
from .prompt import GENERAL_PURPOSE, GENERAL_PURPOSE_DESCRIPTION, GENERAL_PURPOSE_PROMPT


@dataclass(frozen=True, slots=True)
class AgentType:
    """A kind of subagent: its system prompt and which tools it gets."""

    name: str
    description: str
    system_prompt: str
    tools: tuple[str, ...] = ()
    """Tool names it may use; empty: every tool a subagent may have."""
    source: str = "built-in"
    problem: str | None = None
    """Why the type cannot be used (its file's front matter cannot be read), or None."""


BUILTIN_TYPES = (AgentType(GENERAL_PURPOSE, GENERAL_PURPOSE_DESCRIPTION, GENERAL_PURPOSE_PROMPT),)


def agent_types(cwd: Path, home: Path | None = None) -> dict[str, AgentType]:
    """Every type visible from `cwd`; files win over built-ins, the project's over the user's."""
    found = {t.name: t for t in BUILTIN_TYPES}
    user_home = home if home is not None else Path(os.path.expanduser("~"))
    for source, root in (("user", user_home), ("project", cwd)):
        folder = root / ".toolhost" / "agents"
        try:
            files = sorted(folder.glob("*.md"))
        except OSError:
            continue
        for path in files:
            try:
                document = frontmatter.read(path)
            except OSError:
                continue
            except frontmatter.FrontMatterError as exc:
                # Named by its file, never started: its tool list is unknown.
                found[path.stem] = AgentType(path.stem, "", "", source=source, problem=str(exc))
                continue
            name = document.text("name") or path.stem
            found[name] = AgentType(
                name=name,
                description=document.text("description") or name,
                system_prompt=document.body or GENERAL_PURPOSE_PROMPT,
                tools=tuple(document.items("tools")),
                source=source,
            )
    return found
