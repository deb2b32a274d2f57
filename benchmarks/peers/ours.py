"""This project's `Session` with the real `anthropic` client against the loopback server.

`run_ours` runs a scenario as a user would (streaming executor, transcript on);
`whole_message=True` wraps the model so the loop only sees the tool_use blocks once the
whole message has arrived — the same executor, without the streaming head start.
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator

from anthropic import AsyncAnthropic
from pydantic import BaseModel

from jupyter_toolhost import build_tool
from jupyter_toolhost.agent.session import Session
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.model.base import MessageComplete, Model, ModelEvent, ModelRequest
from jupyter_toolhost.testing import MessagesServer

from .script import (
    MODEL_ID,
    PROMPT,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    Clock,
    Outcome,
    Scenario,
    Start,
    outcome,
)


class SleepInput(BaseModel):
    seconds: float = 0.0


def sleep_tool(clock: Clock, *, safe: bool) -> Tool[SleepInput]:
    """The scenario's tool, read-only (so no approval is asked) and safe when `safe`."""

    async def call(input: SleepInput, _context: object) -> str:
        return await clock.sleep(input.seconds)

    return build_tool(
        name=TOOL_NAME,
        input_model=SleepInput,
        call=call,
        description=TOOL_DESCRIPTION,
        read_only=True,
        concurrency_safe=safe,
    )


class WholeMessage:
    """A model that holds back every event until the message is complete."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        held = [event async for event in self.inner.stream(request)]
        if not held or not isinstance(held[-1], MessageComplete):
            raise RuntimeError("the stream ended without a complete message")
        for event in held:
            yield event


async def run_ours(scenario: Scenario, *, whole_message: bool = False) -> Outcome:
    """Run `scenario` through `Session.run`; the client is built before the clock starts."""
    clock = Clock()
    with MessagesServer(scenario.server_turns()) as server, tempfile.TemporaryDirectory() as tmp:
        client = AsyncAnthropic(base_url=server.base_url, api_key="loopback", max_retries=0)
        try:
            model: Model = AnthropicModel(client=client)
            if whole_message:
                model = WholeMessage(model)
            session = Session(
                tools=[sleep_tool(clock, safe=scenario.safe)],
                model=model,
                model_id=MODEL_ID,
                cwd=tmp,
                max_turns=scenario.turns + 1,
                compact_threshold_tokens=None,
            )
            began = Start.now()
            answer = await session.run(PROMPT)
            return outcome(began, clock, str(answer), scenario)
        finally:
            await client.close()


async def run_ours_whole_message(scenario: Scenario) -> Outcome:
    """`run_ours` with the tool_use blocks handed over only once the message is complete."""
    return await run_ours(scenario, whole_message=True)
