"""What the model is told about Skill."""

from __future__ import annotations

NAME = "Skill"

DESCRIPTION = """Loads a skill: packaged instructions (and files beside them) for a kind of task.

When a task matches one of the available skills listed in the system prompt, call this
tool with the skill's name before doing the work, then follow the instructions it returns.
`args` is passed to the skill (for example a file name or an option). Do not call a skill
that is already loaded in this conversation, and do not invent skill names."""

PROMPT_HEADER = """Skills available (load one with Skill{skill: "<name>"} when the task matches
its description):"""

NO_SKILLS = "No skills are installed (.toolhost/skills/<name>/SKILL.md)."

LOADED = """Skill "{name}" loaded from {path}.
Files of the skill are in {base}.

{body}"""

BROKEN = "(broken: its SKILL.md front matter cannot be read; loading it says why)"
"""The description listed for a skill whose front matter is not valid YAML."""
