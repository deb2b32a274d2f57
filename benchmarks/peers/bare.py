"""The floor: the thinnest loop one could write by hand on the raw `anthropic` client.

It streams each response, starts every tool_use as its block completes (all in parallel,
no checks, no permissions, no transcript), sends the results back and repeats. Nobody
should ship it, but it shows what the client and the server alone cost on this machine,
so the other figures can be read against it.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from anthropic import AsyncAnthropic

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

TOOLS: list[Any] = [
    {
        "name": TOOL_NAME,
        "description": TOOL_DESCRIPTION,
        "input_schema": {"type": "object", "properties": {"seconds": {"type": "number"}}},
    }
]


async def run_bare(scenario: Scenario) -> Outcome:
    """Run `scenario` through the hand-written loop."""
    clock = Clock()
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    with MessagesServer(scenario.server_turns()) as server:
        client = AsyncAnthropic(base_url=server.base_url, api_key="loopback", max_retries=0)
        try:
            began = Start.now()
            while True:
                tasks: dict[str, asyncio.Task[str]] = {}
                params = {"model": MODEL_ID, "max_tokens": 8192, "messages": messages}
                async with client.messages.stream(**params, tools=TOOLS) as stream:
                    async for event in stream:
                        if event.type != "content_block_stop":
                            continue
                        block = event.content_block
                        if block.type == "tool_use":
                            seconds = float(cast(dict[str, Any], block.input)["seconds"])
                            tasks[block.id] = asyncio.create_task(clock.sleep(seconds))
                    final = await stream.get_final_message()
                content = [block.model_dump(exclude_none=True) for block in final.content]
                messages.append({"role": "assistant", "content": content})
                if not tasks:
                    answer = "".join(b.text for b in final.content if b.type == "text")
                    return outcome(began, clock, answer, scenario)
                results = [
                    {"type": "tool_result", "tool_use_id": tid, "content": await task}
                    for tid, task in tasks.items()
                ]
                messages.append({"role": "user", "content": results})
        finally:
            await client.close()
