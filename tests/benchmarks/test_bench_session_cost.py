"""The session-cost benchmark's own side, run short: this project's session through the
loopback server that bills cache reads and writes (Claude Code is never needed here)."""

from __future__ import annotations

import pytest

from benchmarks.bench_session_cost import PAGE_CHARS, Reader, RunFailed, Scenario, run_ours
from jupyter_toolhost.model.pricing import billed_equivalent

pytestmark = pytest.mark.timeout(300)


async def test_a_short_session_is_billed_incrementally() -> None:
    turns = 6
    bill = await run_ours(turns)
    assert (bill.requests, bill.side_requests) == (turns + 1, 0)
    total = bill.total
    whole = total.input_tokens + total.cache_creation_input_tokens + total.cache_read_input_tokens
    # Each page is written once (about PAGE_CHARS / 4 tokens) and read on every later turn.
    assert total.cache_creation_input_tokens >= turns * PAGE_CHARS // 4
    assert total.cache_creation_input_tokens < whole / 2
    assert billed_equivalent(total) < 0.6 * whole
    assert total.input_tokens < 200 * (turns + 1)


def test_a_run_with_an_error_result_gives_no_figure() -> None:
    reader = Reader(1, "t")
    reader.results = [{"type": "tool_result", "tool_use_id": "toolu_t_001", "is_error": True}]
    with pytest.raises(RunFailed, match="errors"):
        reader.check()
    reader.results = []
    with pytest.raises(RunFailed, match="0 of 1"):
        reader.check()


async def test_a_paused_notebook_session_reads_the_previous_cells_after_the_second_pause() -> None:
    """Three cells of two calls, 10 minutes apart on the servers' moved clock: the default
    policy pays the first pause in full, then reads everything before the previous cell."""
    scenario = Scenario("cells_3", "3 cells", 3, 2, 2_000, 600.0, 0.5)
    bill = await run_ours(scenario)
    assert (bill.requests, bill.side_requests) == (3 * 3, 0)
    first, second, third = bill.first_of_cell_reads
    assert first == second == 0
    assert third > 2_000
    assert bill.total.cache_creation_1h_input_tokens > 0
    five = await run_ours(scenario, "5m")
    assert five.first_of_cell_reads == (0, 0, 0)
    assert billed_equivalent(bill.total) < billed_equivalent(five.total)
