"""The `anthropic` SDK's own tool runner (`client.beta.messages.tool_runner`), streaming,
against the loopback server: sequential (tools run once the message is complete, one after
another) or with `run_tools_eagerly=True` (each call runs, inline, as soon as the model has
moved on from it while the reply still streams).

`thread=False`: by default the 2.16 runner keeps the conversation on the server (the
`message-threads` beta) and sends only the new messages; the loopback server does not
implement threads, and the other loops send the whole history, so this one does too.
"""

from __future__ import annotations

from anthropic import AsyncAnthropic, beta_async_tool

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


async def run_tool_runner(scenario: Scenario, *, eager: bool = False) -> Outcome:
    """Run `scenario` through the SDK tool runner until it is done."""
    clock = Clock()

    @beta_async_tool(name=TOOL_NAME, description=TOOL_DESCRIPTION)
    async def sleep(seconds: float) -> str:
        """Wait for the given number of seconds."""
        return await clock.sleep(seconds)

    with MessagesServer(scenario.server_turns()) as server:
        client = AsyncAnthropic(base_url=server.base_url, api_key="loopback", max_retries=0)
        try:
            began = Start.now()
            runner = client.beta.messages.tool_runner(
                model=MODEL_ID,
                max_tokens=8192,
                messages=[{"role": "user", "content": PROMPT}],
                tools=[sleep],
                stream=True,
                run_tools_eagerly=eager,
                thread=False,  # the full history each turn, as the other loops send it
                max_iterations=scenario.turns + 1,
            )
            final = await runner.until_done()
            answer = "".join(b.text for b in final.content if b.type == "text")
            return outcome(began, clock, answer, scenario)
        finally:
            await client.close()


async def run_tool_runner_eager(scenario: Scenario) -> Outcome:
    """`run_tool_runner` with `run_tools_eagerly=True`."""
    return await run_tool_runner(scenario, eager=True)
