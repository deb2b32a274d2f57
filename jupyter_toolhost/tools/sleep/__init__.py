"""Sleep: wait a given time, ending early (as an error) when the call is aborted."""

from __future__ import annotations

import asyncio

from pydantic import BaseModel, ConfigDict, Field

from ...core.context import ToolUseContext
from ...core.tool import Tool, build_tool
from ...core.types import ToolError
from .prompt import DESCRIPTION, MAX_DURATION_MS, NAME


class SleepInput(BaseModel):
    """Input of Sleep."""

    model_config = ConfigDict(extra="forbid")

    duration_ms: int = Field(ge=0, le=MAX_DURATION_MS, description="How long to wait, in ms.")


async def sleep(input: SleepInput, context: ToolUseContext) -> str:
    """Wait, watching the abort signal; raises `ToolError` when interrupted."""
    seconds = input.duration_ms / 1000
    try:
        reason = await asyncio.wait_for(context.abort.wait(), seconds)
    except TimeoutError:
        return f"Slept for {input.duration_ms} ms."
    raise ToolError(f"Sleep was interrupted: {reason}")


def make_tool() -> Tool[SleepInput]:
    """A fresh Sleep tool."""
    return build_tool(
        name=NAME,
        input_model=SleepInput,
        call=sleep,
        description=DESCRIPTION,
        read_only=True,
        concurrency_safe=True,
        interrupt_behavior="cancel",
        render_tool_use=lambda input: f"{input.duration_ms} ms",
        search_hint="sleep wait pause poll background delay",
    )


TOOL = make_tool()
