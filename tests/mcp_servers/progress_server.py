"""A small MCP server whose tool sends `notifications/progress` while it works (stdio).

``count_up(steps)`` reports progress ``i`` of ``steps`` with a message after each step;
``spin()`` reports progress with no total. Run: ``python progress_server.py``.
"""

from __future__ import annotations

import asyncio

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("progress", instructions="Reports progress for jupyter_toolhost tests.")


@server.tool(description="Count up to `steps`, reporting progress after each step.")
async def count_up(steps: int, ctx: Context) -> str:
    for step in range(1, steps + 1):
        await asyncio.sleep(0.05)
        await ctx.report_progress(step, steps, f"step {step} of {steps}")
    return f"counted to {steps}"


@server.tool(description="Report progress without a total, then answer.")
async def spin(ctx: Context) -> str:
    await ctx.report_progress(7)
    await asyncio.sleep(0.05)
    return "spun"


if __name__ == "__main__":
    server.run("stdio")
