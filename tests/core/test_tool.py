"""The tool definition: defaults, flags, schemas, the @tool decorator, context pieces."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel

from jupyter_toolhost import ToolUseContext, build_tool, registered_tools, tool
from jupyter_toolhost.core.context import AbortSignal, FileStateCache, ToolUseOptions
from jupyter_toolhost.core.results import ResultStore
from jupyter_toolhost.core.tool import unregister_tool
from jupyter_toolhost.core.types import ToolCall
from jupyter_toolhost.orchestration.pipeline import Pipeline


class Query(BaseModel):
    command: str


def test_defaults_fail_closed() -> None:
    built = build_tool(name="T", input_model=Query, call=lambda i, c: "", description="d")
    query = Query(command="ls")
    assert not built.is_read_only(query)
    assert not built.is_concurrency_safe(query)
    assert not built.is_destructive(query)
    assert not built.should_defer and not built.always_load
    assert built.interrupt_behavior() == "block"
    assert built.max_result_size_chars == 50_000
    assert built.display_name() == "T"
    assert built.prompt() == "d"


def test_flag_predicates_see_the_input_and_raising_means_false() -> None:
    def explode(_input: Query) -> bool:
        raise RuntimeError("predicate bug")

    built = build_tool(
        name="Shell",
        input_model=Query,
        call=lambda i, c: "",
        description="d",
        read_only=lambda i: i.command.startswith("ls"),
        concurrency_safe=explode,
    )
    assert built.flag(built.is_read_only, Query(command="ls -la"))
    assert not built.flag(built.is_read_only, Query(command="rm -rf x"))
    assert not built.flag(built.is_concurrency_safe, Query(command="ls"))


def test_schema_is_lazy_and_api_definition_has_strict() -> None:
    built = build_tool(
        name="Look", input_model=Query, call=lambda i, c: "", description="Look.", strict=True
    )
    assert built._schema is None
    api = built.to_api()
    assert api == {
        "name": "Look",
        "description": "Look.",
        "input_schema": {
            "properties": {"command": {"title": "Command", "type": "string"}},
            "required": ["command"],
            "type": "object",
        },
        "strict": True,
    }
    assert built._schema is not None


def test_invalid_names_are_refused_at_definition() -> None:
    with pytest.raises(ValueError, match="1-128 letters"):
        build_tool(name="has space", input_model=Query, call=lambda i, c: "", description="d")


def test_decorator_builds_schema_from_hints_and_docstring() -> None:
    @tool(read_only=True, concurrency_safe=True, search_hint="stock price quote")
    def lookup(ticker: str, exchange: Literal["NYSE", "NASDAQ"] = "NYSE") -> float:
        """Latest price of a stock.

        Args:
            ticker: The symbol, such as
                AAPL.
            exchange: Where it trades.

        Returns:
            The price.
        """
        return 1.5

    try:
        api = lookup.to_api()
        assert api["description"] == "Latest price of a stock."
        props = api["input_schema"]["properties"]
        assert props["ticker"]["description"] == "The symbol, such as AAPL."
        assert props["exchange"]["enum"] == ["NYSE", "NASDAQ"]
        assert api["input_schema"]["required"] == ["ticker"]
        assert lookup.is_read_only(None) and lookup.is_concurrency_safe(None)
        assert lookup.search_hint == "stock price quote"
        assert lookup in registered_tools()
    finally:
        unregister_tool("lookup")
    assert lookup not in registered_tools()


def test_redefining_a_decorated_tool_replaces_it() -> None:
    @tool
    def helper(x: int) -> int:
        return x

    @tool(name="helper")
    def helper_v2(x: int) -> int:
        return x * 2

    try:
        assert [t for t in registered_tools() if t.name == "helper"] == [helper_v2]
    finally:
        unregister_tool("helper")


async def test_decorated_sync_and_async_functions_run_with_context(tmp_path: Path) -> None:
    @tool(register=False)
    def where(name: str, context: ToolUseContext) -> str:
        on_main = threading.current_thread() is threading.main_thread()
        return f"{name} in {context.cwd.name} on {on_main}"

    @tool(register=False)
    async def later(seconds: float = 0.0) -> dict[str, float]:
        await asyncio.sleep(seconds)
        return {"slept": seconds}

    assert "context" not in where.input_schema["properties"]
    context = ToolUseContext(options=ToolUseOptions(tools=[where, later]), cwd=tmp_path)
    pipeline = Pipeline(results=ResultStore(tmp_path / "r"))
    first = await pipeline.run(ToolCall("a", "where", {"name": "x"}), context)
    second = await pipeline.run(ToolCall("b", "later", {"seconds": 0.01}), context)
    assert first.content == f"x in {tmp_path.name} on False"
    assert second.content == '{\n  "slept": 0.01\n}'


def test_decorator_refuses_var_args() -> None:
    with pytest.raises(TypeError, match=r"\*args/\*\*kwargs"):

        @tool(register=False)
        def anything(*args: int) -> None:
            return None


async def test_abort_signal_children_do_not_abort_parents() -> None:
    parent = AbortSignal()
    child = parent.child()
    grandchild = child.child()
    sibling = parent.child()
    child.abort("sibling failed")
    assert child.aborted and grandchild.aborted and grandchild.reason == "sibling failed"
    assert not parent.aborted and not sibling.aborted
    waiter = asyncio.create_task(sibling.wait())
    await asyncio.sleep(0)
    threading.Timer(0.01, parent.abort, args=("interrupted",)).start()
    assert await asyncio.wait_for(waiter, 2) == "interrupted"
    assert sibling.wait_blocking(0) is True
    seen: list[str] = []
    sibling.add_callback(seen.append)
    assert seen == ["interrupted"]


def test_file_state_cache_tracks_changes_and_evicts(tmp_path: Path) -> None:
    cache = FileStateCache(max_entries=2)
    files = [tmp_path / f"f{i}.txt" for i in range(3)]
    for path in files:
        path.write_text("a", encoding="utf-8")
    assert cache.changed_since_read(files[0]) is None
    cache.record(files[0])
    assert cache.changed_since_read(files[0]) is False
    later = time.time_ns() + 5_000_000_000
    os.utime(files[0], ns=(later, later))
    assert cache.changed_since_read(files[0]) is True
    cache.record(files[0])
    cache.record(files[1])
    cache.record(files[2])
    assert cache.get(files[0]) is None and len(cache) == 2
    files[1].unlink()
    assert cache.changed_since_read(files[1]) is True


def test_context_paths_and_app_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    context = ToolUseContext(cwd=tmp_path)
    assert context.resolve_path("a/b.txt") == tmp_path / "a" / "b.txt"
    assert context.resolve_path("/abs") == Path("/abs")
    assert context.session_dir() == tmp_path / ".toolhost" / "sessions" / context.session_id
    monkeypatch.setenv("JUPYTER_TOOLHOST_HOME", str(tmp_path / "home"))
    assert context.session_dir().parent.parent == tmp_path / "home"
    from dataclasses import replace

    context.set_app_state(
        lambda s: replace(
            s, tool_permission_context=replace(s.tool_permission_context, mode="plan")
        )
    )
    assert context.permission_context.mode == "plan"
    call_context = context.for_call("toolu_1")
    assert call_context.tool_use_id == "toolu_1"
    assert call_context.get_app_state() is context.get_app_state()
