"""One `emit` hands events to the orchestrator's single sink and to the session's list of
sinks alike: a sink that raises is logged and the others still get the event."""

from __future__ import annotations

import logging

import pytest

from jupyter_toolhost.agent.events import Notice, emit
from jupyter_toolhost.orchestration.events import CallStarted


def _raises(event: object) -> None:
    raise RuntimeError("a broken front end")


def test_one_sink_and_a_list_of_sinks_get_the_event(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[object] = []
    started = CallStarted("call_1", 0.0)
    emit(seen.append, started)
    notice = Notice("hook", "a hook ran")
    with caplog.at_level(logging.ERROR):
        emit([_raises, seen.append], notice)
    emit(None, started)
    assert seen == [started, notice]
    assert "an on_event handler raised on Notice" in caplog.text
