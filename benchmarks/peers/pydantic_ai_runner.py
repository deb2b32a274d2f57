"""pydantic-ai's agent, two ways: with a scripted `FunctionModel` (no HTTP at all), and
with its own Anthropic model over the same `anthropic` client and loopback server as the
others. pydantic-ai runs a response's tool calls in parallel once the response is whole.
"""

from __future__ import annotations

import asyncio

from anthropic import AsyncAnthropic
from pydantic_ai import Agent, UsageLimits
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import Model
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.providers.anthropic import AnthropicProvider

from jupyter_toolhost.testing import MessagesServer

from .script import (
    FINAL_TEXT,
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


def _agent(model: Model, clock: Clock) -> Agent[None, str]:
    agent = Agent(model)

    @agent.tool_plain(name=TOOL_NAME, description=TOOL_DESCRIPTION)
    async def sleep(seconds: float) -> str:
        return await clock.sleep(seconds)

    return agent


async def _run(agent: Agent[None, str], scenario: Scenario, clock: Clock) -> Outcome:
    limits = UsageLimits(request_limit=scenario.turns + 1)
    began = Start.now()
    result = await agent.run(PROMPT, usage_limits=limits)
    return outcome(began, clock, result.output, scenario)


def scripted_model(scenario: Scenario) -> FunctionModel:
    """The scenario as a function model: each response arrives when its last block would."""
    served = 0

    async def respond(_messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        nonlocal served
        served += 1
        if served > scenario.turns:
            return ModelResponse(parts=[TextPart(FINAL_TEXT)])
        if scenario.block_delay:
            await asyncio.sleep(scenario.block_delay * (len(scenario.sleeps) - 1))
        calls = [
            ToolCallPart(TOOL_NAME, {"seconds": s}, tool_call_id=f"call_{served}_{i}")
            for i, s in enumerate(scenario.sleeps)
        ]
        return ModelResponse(parts=list(calls))

    return FunctionModel(respond)


async def run_function_model(scenario: Scenario) -> Outcome:
    """Run `scenario` through pydantic-ai with a scripted `FunctionModel`."""
    clock = Clock()
    return await _run(_agent(scripted_model(scenario), clock), scenario, clock)


async def run_anthropic_model(scenario: Scenario) -> Outcome:
    """Run `scenario` through pydantic-ai's Anthropic model against the loopback server."""
    clock = Clock()
    with MessagesServer(scenario.server_turns()) as server:
        client = AsyncAnthropic(base_url=server.base_url, api_key="loopback", max_retries=0)
        try:
            model = AnthropicModel(MODEL_ID, provider=AnthropicProvider(anthropic_client=client))
            return await _run(_agent(model, clock), scenario, clock)
        finally:
            await client.close()
