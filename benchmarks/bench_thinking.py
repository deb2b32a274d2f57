"""What extended thinking costs the loop: streamed calls after a thought, and the checks.

Run with ``python -m benchmarks.bench_thinking``. The real `anthropic` client against the
loopback server: one message of a streamed thought then 10 safe `sleep(0.1)` calls, 0.05 s
apart, with and without the thought (the calls must still start as they stream); the
server's thinking checks (signatures) on a long conversation; and
`drop_settled_thinking` (resume, compaction) on a long conversation.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from typing import Any

from pydantic import BaseModel

from jupyter_toolhost import Session, build_tool
from jupyter_toolhost.core.context import ToolUseContext
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.model.thinking import drop_settled_thinking
from jupyter_toolhost.testing import MessagesServer, Turn, text, thinking, tool_use
from jupyter_toolhost.testing.thinking import Signer
from jupyter_toolhost.testing.validation import validate_request

from .common import Measure, median, print_table, write_results

NAME = "bench_thinking"
REPEATS = 5
LONG = 400
"""Assistant messages in the long conversation."""
THINK = {"type": "enabled", "budget_tokens": 2048}


class SleepInput(BaseModel):
    seconds: float


def sleep_tool() -> Any:
    async def sleep(input: SleepInput, context: ToolUseContext) -> str:
        await asyncio.sleep(input.seconds)
        return "ok"

    return build_tool(
        name="Sleep", input_model=SleepInput, call=sleep, description="s", concurrency_safe=True
    )


async def one_message(with_thought: bool) -> float:
    """Seconds the run takes: the message with the calls, then the short answer."""
    head = [thinking("Ten short sleeps, all at once. " * 20)] if with_thought else []
    calls = [tool_use("Sleep", {"seconds": 0.1}) for _ in range(10)]
    script = [Turn([*head, *calls], block_delay=0.05), Turn([text("done")])]
    with MessagesServer(script) as server, tempfile.TemporaryDirectory() as tmp:
        session = Session(
            tools=[sleep_tool()],
            model=AnthropicModel(base_url=server.base_url, api_key="k"),
            model_id="claude-sonnet-4-5",
            cwd=tmp,
            permission_mode="bypassPermissions",
            load_settings=False,
            write_transcript=False,
            thinking=THINK if with_thought else None,
        )
        began = time.perf_counter()
        await session.run("sleep")
        elapsed = time.perf_counter() - began
        assert server.errors == []
        return elapsed


def long_conversation(signer: Signer) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "start"}]
    for n in range(LONG):
        thought = signer.render(thinking(f"step {n} " * 30), omitted=False)
        use = {"type": "tool_use", "id": f"t{n}", "name": "Sleep", "input": {"seconds": 0}}
        result = {"type": "tool_result", "tool_use_id": f"t{n}", "content": "ok"}
        messages += [{"role": "assistant", "content": [thought, use]}]
        messages += [{"role": "user", "content": [result]}]
    return messages


def checks() -> list[Measure]:
    signer = Signer()
    messages = long_conversation(signer)
    body = {"model": "m", "max_tokens": 4096, "thinking": THINK, "messages": messages}
    samples, drops = [], []
    for _ in range(REPEATS):
        began = time.perf_counter()
        assert validate_request(body, signer=signer) is None
        samples.append(time.perf_counter() - began)
        settled = [*messages, {"role": "user", "content": "next"}]
        began = time.perf_counter()
        drop_settled_thinking(settled)
        drops.append(time.perf_counter() - began)
    size = LONG * 2 + 2
    return [
        Measure("server_check_ms", f"server checks, {LONG} thoughts", median(samples) * 1e3, "ms"),
        Measure(
            "drop_settled_ms", f"drop_settled_thinking, {size} msgs", median(drops) * 1e3, "ms"
        ),
    ]


async def main() -> list[Measure]:
    plain = [await one_message(False) for _ in range(REPEATS)]
    thought = [await one_message(True) for _ in range(REPEATS)]
    return [
        Measure("ten_calls_s", "10 streamed sleep(0.1), no thinking", median(plain), "s"),
        Measure(
            "ten_calls_thinking_s",
            "10 streamed sleep(0.1) after a streamed thought",
            median(thought),
            "s",
            "the thought adds one 0.05 s gap before the calls",
        ),
        *checks(),
    ]


if __name__ == "__main__":
    results = asyncio.run(main())
    print_table("thinking", results)
    print(f"\nwritten to {write_results(NAME, results)}")
