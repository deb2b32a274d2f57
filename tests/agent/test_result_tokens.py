"""What each tool result adds to the conversation (`agent.result_tokens`): measured from the
usage of the request that first carries it, through the real loop and `anthropic` client
against the loopback Messages API (which bills text as bytes / 4 and an image as
width × height / 750, as the API does), and the share of cost each result has had since."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import pytest

from jupyter_toolhost.agent.events import ResultSize
from jupyter_toolhost.agent.result_tokens import ResultLedger, estimate_tokens
from jupyter_toolhost.core.images import image_tokens
from jupyter_toolhost.core.numbers import tokens_added
from jupyter_toolhost.model.base import Usage

MODEL = "claude-haiku-4-5"


def _png(width: int, height: int) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 90)).save(buffer, format="PNG")
    return buffer.getvalue()


async def _run(tmp_path: Path, tools: list[Any], script: list[Any], prompt: str = "Go") -> Any:
    from jupyter_toolhost import Session
    from jupyter_toolhost.model.anthropic_model import AnthropicModel
    from jupyter_toolhost.testing import MessagesServer

    sizes: list[ResultSize] = []
    with MessagesServer(script) as server:
        session = Session(
            tools=tools,
            model=AnthropicModel(base_url=server.base_url, api_key="test-key"),
            model_id=MODEL,
            cwd=tmp_path,
            permission_mode="bypassPermissions",
        )
        await session.run(
            prompt, on_event=lambda e: sizes.append(e) if isinstance(e, ResultSize) else None
        )
        assert server.errors == []
    return session, sizes


async def test_a_batchs_results_are_measured_and_shared_by_size(tmp_path: Path) -> None:
    from jupyter_toolhost import tool
    from jupyter_toolhost.testing import Turn, text, tool_use

    @tool(read_only=True)
    def big() -> str:
        """A long result."""
        return "b" * 8_000

    @tool(read_only=True)
    def small() -> str:
        """A short result."""
        return "s" * 2_000

    script = [Turn([tool_use("big", {}), tool_use("small", {})]), Turn([text("Done.")])]
    session, sizes = await _run(tmp_path, [big, small], script)
    by_name = {session.result_tokens.calls[s.tool_use_id].tool_name: s for s in sizes}
    assert set(by_name) == {"big", "small"}
    assert all(s.measured for s in sizes), sizes
    # The server bills bytes / 4: 8,000 characters are about 2,000 tokens, and the split
    # follows the sizes (the wrapping JSON of each block shares the growth too).
    assert 1_900 <= by_name["big"].tokens <= 2_150, by_name
    assert 470 <= by_name["small"].tokens <= 560, by_name
    ranked = session.result_tokens.ranked()
    assert [c.tool_name for c in ranked] == ["big", "small"]
    assert ranked[0].requests == 1 and ranked[0].cost_usd is not None and ranked[0].cost_usd > 0
    assert ranked[0].cost_usd > ranked[1].cost_usd > 0  # type: ignore[operator]


async def test_a_result_carried_by_more_requests_costs_more(tmp_path: Path) -> None:
    from jupyter_toolhost import tool
    from jupyter_toolhost.testing import Turn, text, tool_use

    @tool(read_only=True)
    def step(n: int) -> str:
        """One step."""
        return "x" * 1_200

    script = [Turn([tool_use("step", {"n": i})]) for i in range(3)] + [Turn([text("Done.")])]
    session, sizes = await _run(tmp_path, [step], script)
    assert len(sizes) == 3 and all(s.measured for s in sizes)
    costs = [session.result_tokens.calls[s.tool_use_id] for s in sizes]
    assert [c.requests for c in costs] == [3, 2, 1]  # the first is read by every later request
    assert costs[0].cost_usd > costs[1].cost_usd > costs[2].cost_usd  # type: ignore[operator]


async def test_an_image_is_sent_at_the_billed_size_and_the_card_text_says_so(
    tmp_path: Path,
) -> None:
    from jupyter_toolhost import tool
    from jupyter_toolhost.testing import Turn, text, tool_use

    data = base64.b64encode(_png(3000, 2000)).decode()

    @tool(read_only=True)
    def plot() -> list[dict[str, Any]]:
        """A large plot."""
        source = {"type": "base64", "media_type": "image/png", "data": data}
        return [{"type": "image", "source": source}]

    script = [Turn([tool_use("plot", {})]), Turn([text("ok")])]
    _, sizes = await _run(tmp_path, [plot], script)
    (size,) = sizes
    (shape,) = size.images
    assert max(shape) <= 1568 and shape[0] * shape[1] <= 1_151_000  # what the model sees
    billed = image_tokens(*shape)
    assert billed <= 1_600
    assert size.measured and billed <= size.tokens <= billed + 150, size
    text_shown = tokens_added(size.tokens, measured=True, images=size.images)
    assert f"image {shape[0]}×{shape[1]} px" in text_shown
    # The 3000 × 2000 original would cost the same tokens: the API scales it down itself.
    assert image_tokens(3000, 2000) == billed


def test_a_growth_that_does_not_fit_keeps_the_estimate() -> None:
    """Compaction, clearing or dropped thoughts between two requests change the context by
    more than the new message: the result keeps its estimate, marked as one."""
    ledger = ResultLedger()
    first = [{"role": "user", "content": "Go"}]
    ledger.reported(first, Usage(input_tokens=1_000, output_tokens=50), MODEL)
    use = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "y" * 4_000}
    second = [
        *first,
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [result]},
    ]
    (size,) = ledger.reported(second, Usage(input_tokens=300, output_tokens=20), MODEL)
    estimate = estimate_tokens(result)[0]  # 4,000 characters and the block's own fields
    assert not size.measured and size.tokens == estimate and 1_000 < estimate < 1_020
    assert tokens_added(size.tokens, measured=False) == f"≈{estimate:,} tokens"


def test_a_model_without_a_price_has_tokens_but_no_cost() -> None:
    ledger = ResultLedger()
    ledger.reported([{"role": "user", "content": "Go"}], Usage(input_tokens=100), "local-model")
    use = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "z" * 400}
    messages = [
        {"role": "user", "content": "Go"},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [result]},
    ]
    (size,) = ledger.reported(messages, Usage(input_tokens=210), "local-model")
    assert size.measured and size.tokens == 110
    (call,) = ledger.ranked()
    assert call.cost_usd is None and call.requests == 1 and call.tool_name == "Read"


@pytest.mark.parametrize(
    "content",
    ["", "plain", [{"type": "text", "text": "a" * 40}], [{"type": "search_result", "x": 1}], 7],
)
def test_estimates_take_any_content(content: object) -> None:
    tokens, images = estimate_tokens(content)
    assert tokens >= 0 and images == ()


def _conversation_steps() -> Any:
    from hypothesis import strategies as st

    result = st.one_of(
        st.text(max_size=300),
        st.lists(
            st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=100)}),
            max_size=3,
        ),
    )
    batch = st.lists(result, min_size=0, max_size=4)
    usage = st.builds(
        Usage,
        input_tokens=st.integers(0, 50_000),
        output_tokens=st.integers(0, 2_000),
        cache_read_input_tokens=st.integers(0, 50_000),
    )
    return st.lists(st.tuples(batch, usage), min_size=1, max_size=8)


def test_any_conversation_sizes_each_result_once_and_costs_only_grow() -> None:
    """Hypothesis writes conversations (batches of any content, any usage figures, growth
    that fits or not): every result is sized exactly once, never below zero, and what each
    has cost never shrinks."""
    from hypothesis import given, settings

    @settings(max_examples=150, deadline=None)
    @given(_conversation_steps())
    def check(steps: list[tuple[list[object], Usage]]) -> None:
        ledger = ResultLedger()
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Go"}]
        sized: list[str] = []
        costs: dict[str, float] = {}
        for number, (batch, usage) in enumerate(steps):
            for size in ledger.reported(messages, usage, MODEL):
                assert size.tokens >= 0
                sized.append(size.tool_use_id)
            for call in ledger.calls.values():
                assert call.cost_usd is not None and call.cost_usd >= costs.get(
                    call.tool_use_id, 0.0
                )
                costs[call.tool_use_id] = call.cost_usd
            ids = [f"toolu_{number}_{i}" for i in range(len(batch))]
            if ids:
                uses = [{"type": "tool_use", "id": i, "name": "T", "input": {}} for i in ids]
                results = [
                    {"type": "tool_result", "tool_use_id": i, "content": content}
                    for i, content in zip(ids, batch, strict=True)
                ]
                messages += [
                    {"role": "assistant", "content": uses},
                    {"role": "user", "content": results},
                ]
        assert len(sized) == len(set(sized))  # never twice
        expected = {f"toolu_{n}_{i}" for n, (b, _) in enumerate(steps[:-1]) for i in range(len(b))}
        assert set(sized) == expected  # each result the next request carried

    check()


def test_a_cleared_result_weighs_its_note_from_then_on() -> None:
    """The ledger reads only what changed since the last request (the conversation's
    watch): an old result edited into a clearing note weighs the note's tokens after it."""
    from jupyter_toolhost.agent.clearing import note
    from jupyter_toolhost.core.history import MessageList

    ledger = ResultLedger()
    messages = MessageList([{"role": "user", "content": "Go"}])
    ledger.reported(messages, Usage(input_tokens=100), MODEL)
    use = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "w" * 8_000}
    messages += [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]
    ledger.reported(messages, Usage(input_tokens=2_130), MODEL)
    (call,) = ledger.ranked()
    assert call.measured and call.requests == 1
    full = call.cost_usd
    messages.append({"role": "assistant", "content": [{"type": "text", "text": "ok"}]})
    messages.append({"role": "user", "content": "again"})
    ledger.reported(messages, Usage(input_tokens=2_140), MODEL)
    whole = call.cost_usd - full  # type: ignore[operator]
    cleared = {**result, "content": note(8_000, ".toolhost/tool-results/toolu_1.txt")}
    messages[2] = {"role": "user", "content": [cleared]}  # what clearing does
    messages += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "more"}]
    before = call.cost_usd
    ledger.reported(messages, Usage(input_tokens=200), MODEL)
    assert call.requests == 3
    assert 0 < call.cost_usd - before < whole / 10  # type: ignore[operator]
