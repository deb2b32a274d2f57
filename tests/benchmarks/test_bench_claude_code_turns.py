"""`bench_claude_code`'s N-turn script and its thinking blocks, driven over real HTTP.

The real `anthropic` client talks to the loopback server whose script is the benchmark's
`Conductor`, with thinking on as Claude Code sends it: each turn's calls come after a signed
thinking block (the API's rule for a tool-use chain), the next turn is asked only once the
previous one's results arrived, and the figure subtracts the interval the thinking block adds.
No Claude Code is needed.
"""

from __future__ import annotations

from typing import Any

import pytest
from anthropic import AsyncAnthropic

from benchmarks import bench_claude_code as bench
from jupyter_toolhost.testing import MessagesServer

TOOLS: list[Any] = [
    {
        "name": "Bash",
        "description": "Run a command.",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
    }
]
THINKING: Any = {"type": "enabled", "budget_tokens": 1024}
THREE = bench.Scenario("three", "three turns", ("0",), turns=3, block_delay=0.01)


async def converse(conductor: bench.Conductor, turns: int, *, thinking: bool = True) -> str:
    """Answer `turns` of the script's turns with results; return the last reply's text."""
    messages: list[Any] = [{"role": "user", "content": bench.PROMPT}]
    extra: Any = {"thinking": THINKING} if thinking else {}
    with MessagesServer(conductor) as server:
        client = AsyncAnthropic(base_url=server.base_url, api_key="sk-test", max_retries=0)
        try:
            for turn in range(turns):
                async with client.messages.stream(
                    model=bench.MODEL_ID, max_tokens=4096, tools=TOOLS, messages=messages, **extra
                ) as stream:
                    message = await stream.get_final_message()
                kinds = [block.type for block in message.content]
                assert kinds == (["thinking"] if thinking else []) + ["tool_use"], kinds
                ids = [block.id for block in message.content if block.type == "tool_use"]
                assert ids == conductor.ids_of(turn)
                content = [block.model_dump(exclude_none=True) for block in message.content]
                messages.append({"role": "assistant", "content": content})
                results = [{"type": "tool_result", "tool_use_id": i, "content": ""} for i in ids]
                messages.append({"role": "user", "content": results})
            reply = await client.messages.create(
                model=bench.MODEL_ID, max_tokens=4096, tools=TOOLS, messages=messages, **extra
            )
        finally:
            await client.close()
        assert server.errors == []
    return "".join(block.text for block in reply.content if block.type == "text")


async def test_each_turn_is_asked_after_the_last_ones_results_and_the_lead_is_subtracted() -> None:
    conductor = bench.Conductor(THREE, "t")
    assert await converse(conductor, 3) == bench.FINAL_TEXT
    assert conductor.lead == pytest.approx(3 * THREE.block_delay)
    assert conductor.asked_at is not None and conductor.answered_at is not None
    elapsed = conductor.answered_at - conductor.asked_at
    assert conductor.figure() == pytest.approx(elapsed - conductor.lead)
    assert sorted(r["tool_use_id"] for r in conductor.results) == conductor.ids


async def test_without_thinking_nothing_is_subtracted() -> None:
    conductor = bench.Conductor(THREE, "t")
    assert await converse(conductor, 3, thinking=False) == bench.FINAL_TEXT
    assert conductor.lead == 0.0
    assert conductor.asked_at is not None and conductor.answered_at is not None
    assert conductor.figure() == conductor.answered_at - conductor.asked_at


async def test_a_client_that_stops_early_gives_no_figure() -> None:
    conductor = bench.Conductor(THREE, "t")
    await converse(conductor, 0)  # one request: the prompt, answered with turn 0's calls
    with pytest.raises(bench.RunFailed, match="never sent the calls' tool_results"):
        conductor.figure()
    conductor = bench.Conductor(THREE, "t")
    await converse(conductor, 1)  # turn 0 answered, then the results of turn 0 only
    with pytest.raises(bench.RunFailed, match="tool_results of 1 of 3 turns only"):
        conductor.figure()


def test_the_n_turn_scenarios_match_the_peers_benchmark_keys() -> None:
    from benchmarks import bench_peers

    peers = {s.key for s in bench_peers.SCENARIOS}
    ours = [s for s in bench.SCENARIOS if s.turns > 1]
    assert ours and all(s.key in peers for s in ours)
    assert all(s.commands == ["sleep 0"] and s.calls == s.turns for s in ours)
