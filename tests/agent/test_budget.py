"""Budgets (`agent.budget`): caps checked before a request, a day's count shared by real
processes through a real file, and messages that say which cap and where to raise it."""

from __future__ import annotations

import datetime
import json
import multiprocessing
import stat
from pathlib import Path

from jupyter_toolhost.agent.budget import BudgetGuard, DayCounter
from jupyter_toolhost.model.base import Usage
from jupyter_toolhost.permissions.settings.managed import Budgets

MODEL = "claude-haiku-4-5"  # $1 / $5 per million tokens


def budgets(**caps: float) -> Budgets:
    return Budgets.model_validate(caps)


def test_a_cell_cap_stops_before_the_request_that_would_pass_it() -> None:
    guard = BudgetGuard(budgets(cellUsd=0.01), sources={"cellUsd": "policy:/etc/p.json"})
    guard.start_cell()
    first = Usage(input_tokens=4_000, output_tokens=200)  # $0.005
    assert guard.refusal(MODEL, first) is None
    guard.record(MODEL, first)
    second = guard.expected(context_tokens=4_500)  # $0.0045 + 200 output ($0.001)
    assert second.output_tokens == 200
    refused = guard.refusal(MODEL, second)
    assert refused is not None
    assert "Budget reached: cellUsd $0.01 for this cell ($0.01 spent" in refused
    assert "No request was sent" in refused and "/etc/p.json" in refused
    assert "ask whoever runs this server" in refused
    guard.start_cell()  # a new cell starts from nothing
    assert guard.refusal(MODEL, second) is None


def test_token_caps_and_the_session_cap_span_cells() -> None:
    guard = BudgetGuard(budgets(sessionTokens=10_000), sources={"sessionTokens": "~/s.json"})
    for _ in range(2):
        guard.start_cell()
        guard.record(
            MODEL, Usage(input_tokens=3_000, cache_read_input_tokens=1_000, output_tokens=500)
        )
    assert guard.session.tokens == 9_000
    refused = guard.refusal(MODEL, Usage(input_tokens=1_500))
    assert refused is not None and "sessionTokens 10,000 tokens" in refused
    assert 'Raise it under "budgets" → "sessionTokens" in ~/s.json' in refused


def test_a_dollar_cap_with_a_model_without_a_list_price_refuses_to_guess() -> None:
    guard = BudgetGuard(budgets(cellUsd=1))
    refused = guard.refusal("some-local-model", Usage(input_tokens=10))
    assert refused is not None and "has no list price" in refused and "in tokens" in refused
    assert BudgetGuard(budgets(cellTokens=100)).refusal("some-local-model", Usage(10)) is None


def test_the_lower_cap_wins() -> None:
    policy = budgets(cellUsd=0.5, dayUsd=2)
    user = budgets(cellUsd=0.2, sessionUsd=1)
    assert policy.lowest(user).caps() == {"cellUsd": 0.2, "sessionUsd": 1, "dayUsd": 2}


def _add_many(home: str, count: int) -> None:
    counter = DayCounter(Path(home))
    for _ in range(count):
        counter.add(MODEL, Usage(input_tokens=1_000, output_tokens=100))


def test_the_days_count_is_shared_by_processes_and_private(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_add_many, args=(str(tmp_path), 25)) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    counter = DayCounter(tmp_path)
    total = counter.read()
    assert total.tokens == 100 * 1_100
    assert total.usd is not None and abs(total.usd - 100 * 0.0015) < 1e-9
    folder = tmp_path / ".toolhost" / "usage"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    day_file = folder / f"{datetime.date.today().isoformat()}.json"
    assert stat.S_IMODE(day_file.stat().st_mode) == 0o600


def test_a_day_cap_reads_what_other_kernels_spent(tmp_path: Path) -> None:
    counter = DayCounter(tmp_path)
    counter.add(MODEL, Usage(input_tokens=900_000))  # $0.90 spent by another kernel
    guard = BudgetGuard(budgets(dayUsd=1), day=counter)
    guard.start_cell()
    refused = guard.refusal(MODEL, Usage(input_tokens=200_000))
    assert refused is not None and "dayUsd $1.00 for today ($0.90 spent" in refused
    assert guard.refusal(MODEL, Usage(input_tokens=50_000)) is None


def test_a_broken_day_file_counts_as_the_cap_reached(tmp_path: Path) -> None:
    counter = DayCounter(tmp_path)
    counter.add(MODEL, Usage(input_tokens=10))
    day_file = tmp_path / ".toolhost" / "usage" / f"{datetime.date.today().isoformat()}.json"
    day_file.write_text("{broken")
    assert counter.read().usd == float("inf")
    guard = BudgetGuard(budgets(dayTokens=10**9), day=counter)
    assert guard.refusal(MODEL, Usage(input_tokens=1)) is not None
    counter.add(MODEL, Usage(input_tokens=10))
    data = json.loads(day_file.read_text())
    assert data["tokens"] == 10 and abs(data["usd"] - 1e-05) < 1e-12  # started again
    assert counter.read().tokens == 10


async def test_a_looping_cell_stops_before_the_request_that_would_pass_its_cap(
    tmp_path: Path,
) -> None:
    """The real loop and client against the loopback Messages API: a model that calls a
    tool again and again is stopped by the cell's token cap; no request past it is sent,
    every tool_use has its result, and the conversation carries on once the cap allows."""
    from jupyter_toolhost import Session, tool
    from jupyter_toolhost.agent.events import Notice
    from jupyter_toolhost.model.anthropic_model import AnthropicModel
    from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

    @tool(read_only=True)
    def step(n: int) -> str:
        """One more step."""
        return "x" * 2_000

    script = [Turn([tool_use("step", {"n": i})]) for i in range(10)] + [Turn([text("Carried on.")])]
    with MessagesServer(script) as server:
        session = Session(
            tools=[step],
            model=AnthropicModel(base_url=server.base_url, api_key="test-key"),
            model_id=MODEL,
            cwd=tmp_path,
            permission_mode="bypassPermissions",
        )
        session.settings.budget = BudgetGuard(
            budgets(cellTokens=6_000), sources={"cellTokens": "policy:/etc/p.json"}
        )
        notices: list[str] = []
        result = await session.run(
            "Loop", on_event=lambda e: notices.append(e.text) if isinstance(e, Notice) else None
        )
        assert result.stop_reason == "budget"
        sent = len(server.requests)
        assert 1 < sent < 10, sent
        assert any("Budget reached: cellTokens 6,000 tokens for this cell" in n for n in notices)
        spent = session.settings.budget.cell.tokens
        assert spent <= 6_000, spent  # the request that would pass the cap was not sent
        messages = session.messages
        uses = [b["id"] for m in messages for b in m["content"] if b.get("type") == "tool_use"]
        answered = [
            b["tool_use_id"]
            for m in messages
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_result"
        ]
        assert uses == answered  # every tool_use has exactly one result
        session.settings.budget = None  # the person raised the cap: the loop goes on
        again = await session.run("Go on")
        assert again == "Carried on." and server.errors == []
