"""The offline demo: a sample folder, two small tools and the prompt the shipped cassette
answers (`jupyter_toolhost/cassettes/demo.json`).

`python -m jupyter_toolhost` with no arguments replays that cassette on a fresh sample
folder, with no key and no network. The tools here are small stand-ins for the built-in
`Glob` and `Read` (same names and input fields), kept separate so the recorded results do
not change when the built-ins evolve. `python -m jupyter_toolhost.demo --record PATH`
records the cassette again against the loopback server, with the model's replies scripted
in `record_demo` below; the cassette says so (`"source": {"kind": "scripted"}`, model
`scripted`, no token counts), so it names no real model and shows no invented costs.
"""

from __future__ import annotations

import asyncio
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from .core.context import ToolUseContext
from .core.tool import Tool, build_tool
from .core.types import ToolInputError

DEMO_PROMPT = "What is in this folder? Read the notes and the sales data, then summarise them."
SAMPLE_FILES = {
    "notes.txt": (
        "Quarterly review notes\n"
        "- The north region grew fastest.\n"
        "- Follow up with the south team about the March dip.\n"
    ),
    "data/sales.csv": "month,region,units\nJan,north,120\nFeb,north,135\nMar,south,80\n",
    "README.md": "# Sample project\nA tiny folder for the jupyter_toolhost demo.\n",
}
FINAL_ANSWER = (
    "The folder holds three files: README.md, notes.txt and data/sales.csv.\n\n"
    "- **notes.txt** is a quarterly review: the north region grew fastest, and the south "
    "team needs a follow-up about the March dip.\n"
    "- **data/sales.csv** has monthly units by region: north sold 120 in January and 135 "
    "in February; south sold 80 in March — the dip the notes mention."
)


def demo_cassette_path() -> Path:
    """Where the shipped demo cassette is."""
    return Path(str(resources.files("jupyter_toolhost") / "cassettes" / "demo.json"))


def make_sample_folder(root: Path) -> Path:
    """Write the sample files under `root` and return it."""
    for name, content in SAMPLE_FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    return root


class GlobInput(BaseModel):
    pattern: str = Field(description="A glob pattern, e.g. '**/*.py'")
    path: str | None = Field(None, description="The folder to search (default: the cwd)")


class ReadInput(BaseModel):
    file_path: str = Field(description="The file to read")
    offset: int | None = Field(None, description="The line to start at (1-based)")
    limit: int | None = Field(None, description="How many lines to read")


def _glob(input: GlobInput, context: ToolUseContext) -> str:
    root = context.resolve_path(input.path or ".")
    found = sorted(
        str(p.relative_to(root))
        for p in root.glob(input.pattern)
        if p.is_file() and ".toolhost" not in p.parts
    )
    return "\n".join(found) if found else "No files found"


def _read(input: ReadInput, context: ToolUseContext) -> str:
    path = context.resolve_path(input.file_path)
    if not path.is_file():
        raise ToolInputError(f"File does not exist: {input.file_path}")
    lines = path.read_text(encoding="utf-8").splitlines()
    start = max(1, input.offset or 1)
    chosen = lines[start - 1 : start - 1 + input.limit if input.limit else None]
    return "\n".join(f"{n:6}\t{line}" for n, line in enumerate(chosen, start=start))


def demo_tools() -> list[Tool[Any]]:
    """`Glob` and `Read`, read-only and concurrency-safe."""
    return [
        build_tool(
            name="Glob",
            input_model=GlobInput,
            call=_glob,
            description="List files matching a glob pattern, relative to the folder searched.",
            read_only=True,
            concurrency_safe=True,
            render_tool_use=lambda i: i.pattern,
        ),
        build_tool(
            name="Read",
            input_model=ReadInput,
            call=_read,
            description="Read a text file; lines are numbered.",
            read_only=True,
            concurrency_safe=True,
            render_tool_use=lambda i: i.file_path,
        ),
    ]


async def record_demo(path: Path) -> None:
    """Record the demo cassette against the loopback server with scripted replies (the
    file is marked scripted)."""
    import tempfile

    from .agent.session import Session
    from .model.anthropic_model import DEFAULT_MODEL, AnthropicModel
    from .model.cassette import CassetteModel
    from .testing import MessagesServer, Turn, text, tool_use

    script = [
        Turn([text("Let me see what is in the folder."), tool_use("Glob", {"pattern": "**/*"})]),
        Turn(
            [
                text("I'll read the notes and the sales data together."),
                tool_use("Read", {"file_path": "notes.txt"}),
                tool_use("Read", {"file_path": "data/sales.csv"}),
            ]
        ),
        Turn([text(FINAL_ANSWER)]),
    ]
    with tempfile.TemporaryDirectory() as folder, MessagesServer(script) as server:
        inner = AnthropicModel(base_url=server.base_url, api_key="loopback")
        session = Session(
            tools=demo_tools(),
            model=CassetteModel(path, mode="record", inner=inner, source="scripted"),
            model_id=DEFAULT_MODEL,
            cwd=make_sample_folder(Path(folder)),
            write_transcript=False,
        )
        await session.run(DEMO_PROMPT)
        if server.errors:
            raise RuntimeError(f"the loopback server rejected a request: {server.errors}")


if __name__ == "__main__":
    if sys.argv[1:2] != ["--record"] or len(sys.argv) != 3:
        sys.exit("usage: python -m jupyter_toolhost.demo --record PATH")
    asyncio.run(record_demo(Path(sys.argv[2])))
