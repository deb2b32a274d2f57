"""What the orchestration tests share: sleeping tools that record when each call ran."""

from __future__ import annotations

import asyncio
import math
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from jupyter_toolhost import build_tool
from jupyter_toolhost.core.context import ToolUseContext, ToolUseOptions
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.core.types import ToolError


class NapInput(BaseModel):
    seconds: float = 0.0
    safe: bool = True
    fail: bool = False


class Timeline:
    """Builds sleeping tools that record (start, end) per tool_use id."""

    def __init__(self) -> None:
        self.spans: dict[str, list[float]] = {}

    def reply(self, input: NapInput) -> str:
        return f"slept {input.seconds}"

    def tool(self, name: str = "Nap", **options: Any) -> Tool[NapInput]:
        async def nap(input: NapInput, context: ToolUseContext) -> str:
            assert context.tool_use_id is not None
            span = self.spans[context.tool_use_id] = [time.perf_counter(), math.nan]
            await asyncio.sleep(input.seconds)
            span[1] = time.perf_counter()
            if input.fail:
                raise ToolError("the nap went wrong")
            return self.reply(input)

        return build_tool(
            name=name,
            input_model=NapInput,
            call=nap,
            description="Sleep.",
            concurrency_safe=lambda i: i.safe,
            **options,
        )

    def start(self, call_id: str) -> float:
        return self.spans[call_id][0]

    def end(self, call_id: str) -> float:
        return self.spans[call_id][1]


def make_context(tmp_path: Path, *tools: Tool[Any]) -> ToolUseContext:
    return ToolUseContext(options=ToolUseOptions(tools=tools), cwd=tmp_path)
