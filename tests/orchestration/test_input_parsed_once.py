"""A tool call's input is validated once, from the streamed block to the tool's call: the
orchestrator's concurrency check and the pipeline take the input the stream reader parsed."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, model_validator

from jupyter_toolhost import Session, build_tool
from jupyter_toolhost.core.context import ToolUseContext, ToolUseOptions
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.core.types import ToolCall
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.orchestration.batches import run_tools
from jupyter_toolhost.orchestration.pipeline import Pipeline
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use


class CountedInput(BaseModel):
    text: str
    validated: ClassVar[list[str]] = []

    @model_validator(mode="after")
    def _count(self) -> CountedInput:
        CountedInput.validated.append(self.text)
        return self


def _echo(input: CountedInput, context: ToolUseContext) -> str:
    return f"echo: {input.text}"


def _tool() -> Tool[CountedInput]:
    return build_tool(
        name="Echo",
        input_model=CountedInput,
        call=_echo,
        description="Echo the text back.",
        read_only=True,
        concurrency_safe=True,
    )


async def test_a_streamed_call_is_validated_once(tmp_path: Path) -> None:
    CountedInput.validated.clear()
    script = [
        Turn([tool_use("Echo", {"text": "one"}), tool_use("Echo", {"text": "two"})]),
        Turn([text("Done.")]),
    ]
    with MessagesServer(script) as server:
        model = AnthropicModel(base_url=server.base_url, api_key="test-key")
        session = Session(
            tools=[_tool()],
            model=model,
            model_id="claude-sonnet-4-5",
            cwd=tmp_path,
            permission_mode="bypassPermissions",
        )
        result = await session.run("Echo one and two.")
    assert server.errors == [] and result.text == "Done."
    assert sorted(CountedInput.validated) == ["one", "two"]


async def test_a_batch_of_calls_is_validated_once_each(tmp_path: Path) -> None:
    CountedInput.validated.clear()
    context = ToolUseContext(options=ToolUseOptions(tools=(_tool(),)), cwd=tmp_path)
    pipeline = Pipeline(results=ResultStore(tmp_path / "results"))
    calls = [ToolCall("toolu_1", "Echo", {"text": "a"}), ToolCall("toolu_2", "Echo", {})]
    results = await run_tools(calls, pipeline=pipeline, context=context)
    assert results[0].content == "echo: a"
    assert results[1].is_error and "text" in str(results[1].content)
    assert CountedInput.validated == ["a"]
