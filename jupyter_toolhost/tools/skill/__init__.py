"""Skill: finds skills on disk, lists them in the system prompt, loads one when called.

A skill is a folder `<name>/` holding `SKILL.md`: front matter (`name`, `description`,
`allowed-tools`, in YAML) and markdown instructions; a skill whose front matter cannot be
read is listed as broken, and loading it reports why. Folders are looked up in
`<cwd>/.toolhost/skills/` (the project's, which win) and `~/.toolhost/skills/`. The system
prompt lists skills by name and description only; the body is read when the skill is
called. A skill's `allowed-tools` become allow rules (source `skill:<name>`) for the rest
of the session.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ...core.context import AppState, ToolUseContext
from ...core.tool import Tool, build_tool
from ...core.types import ToolInputError
from . import frontmatter
from .prompt import BROKEN, DESCRIPTION, LOADED, NAME, NO_SKILLS, PROMPT_HEADER

SKILL_FILE = "SKILL.md"


@dataclass(frozen=True, slots=True)
class SkillInfo:
    """A skill found on disk (its body is read only when it is loaded)."""

    name: str
    description: str
    path: Path
    allowed_tools: tuple[str, ...] = ()
    source: str = "project"
    problem: str | None = None
    """Why the skill cannot be loaded (its front matter cannot be read), or None."""


def skill_dirs(cwd: Path, home: Path | None = None) -> list[tuple[str, Path]]:
    """Where skills are looked up, first wins: the project's, then the user's."""
    user_home = home if home is not None else Path(os.path.expanduser("~"))
    return [
        ("project", cwd / ".toolhost" / "skills"),
        ("user", user_home / ".toolhost" / "skills"),
    ]


def discover(cwd: Path, home: Path | None = None) -> dict[str, SkillInfo]:
    """Every skill visible from `cwd`, by name; unreadable folders are skipped."""
    found: dict[str, SkillInfo] = {}
    for source, root in skill_dirs(cwd, home):
        try:
            folders = sorted(p for p in root.iterdir() if (p / SKILL_FILE).is_file())
        except OSError:
            continue
        for folder in folders:
            info = _info(folder / SKILL_FILE, source)
            if info is not None and info.name not in found:
                found[info.name] = info
    return found


def _info(path: Path, source: str) -> SkillInfo | None:
    try:
        document = frontmatter.read(path)
    except OSError:
        return None
    except frontmatter.FrontMatterError as exc:
        return SkillInfo(path.parent.name, BROKEN, path, source=source, problem=str(exc))
    description = document.text("description") or _first_paragraph(document.body)
    return SkillInfo(
        name=document.text("name") or path.parent.name,
        description=" ".join(description.split()),
        path=path,
        allowed_tools=tuple(document.items("allowed-tools")),
        source=source,
    )


def _first_paragraph(body: str) -> str:
    for block in body.split("\n\n"):
        text = block.strip().lstrip("#").strip()
        if text:
            return text[:200]
    return "(no description)"


def skills_prompt(skills: dict[str, SkillInfo]) -> str:
    """The system prompt's list of skills: names and descriptions, never bodies."""
    if not skills:
        return NO_SKILLS
    lines = [PROMPT_HEADER]
    lines += [f"- {s.name}: {s.description}" for s in sorted(skills.values(), key=_by_name)]
    return "\n".join(lines)


def _by_name(skill: SkillInfo) -> str:
    return skill.name


class SkillInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    skill: str = Field(description='The skill\'s name, e.g. "pdf" or "data-cleaning".')
    args: str | None = Field(default=None, description="Arguments for the skill.")


def load_skill(
    input: SkillInput, context: ToolUseContext, *, home: Path | None = None
) -> dict[str, Any]:
    skills = discover(context.cwd, home)
    name = input.skill.strip().lstrip("/")
    info = skills.get(name)
    if info is None:
        known = ", ".join(sorted(skills)) or "none are installed"
        raise ToolInputError(f"Unknown skill {input.skill!r}. Available skills: {known}.")
    if info.problem is not None:
        raise ToolInputError(info.problem)
    try:
        body = frontmatter.read(info.path).body
    except OSError as exc:
        raise ToolInputError(f"Cannot read {info.path}: {exc}") from None
    except frontmatter.FrontMatterError as exc:  # changed since it was listed
        raise ToolInputError(str(exc)) from None
    args = (input.args or "").strip()
    if "$ARGUMENTS" in body:
        body = body.replace("$ARGUMENTS", args)
    elif args:
        body += f"\n\nARGUMENTS: {args}"
    if info.allowed_tools:
        _allow(context, f"skill:{info.name}", info.allowed_tools)
    text = LOADED.format(name=info.name, path=info.path, base=info.path.parent, body=body)
    return {"skill": info.name, "path": str(info.path), "text": text}


def _allow(context: ToolUseContext, source: str, rules: tuple[str, ...]) -> None:
    def update(state: AppState) -> AppState:
        permissions = state.tool_permission_context
        all_rules = {key: dict(value) for key, value in permissions.rules.items()}
        mine = all_rules.setdefault(source, {})
        mine["allow"] = tuple(dict.fromkeys((*mine.get("allow", ()), *rules)))
        updated = replace(permissions, rules=all_rules)
        return replace(state, tool_permission_context=updated)

    context.set_app_state(update)


def make_tool(*, cwd: str | os.PathLike[str] | None = None, home: Path | None = None) -> Tool[Any]:
    """A Skill tool; its prompt lists the skills visible from `cwd` (default: the process's
    working directory, read each time the prompt is built)."""

    def prompt() -> str:
        return DESCRIPTION + "\n\n" + skills_prompt(discover(Path(cwd or os.getcwd()), home))

    def call(input: SkillInput, context: ToolUseContext) -> dict[str, Any]:
        return load_skill(input, context, home=home)

    return build_tool(
        name=NAME,
        input_model=SkillInput,
        call=call,
        description=DESCRIPTION,
        prompt=prompt,
        read_only=True,
        concurrency_safe=True,
        map_result=lambda output: output["text"],
        render_tool_use=lambda input: input.skill,
        rule_content=lambda input: input.skill,
        search_hint="load skill instructions",
    )


TOOL = make_tool()
