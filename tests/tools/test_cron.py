"""CronCreate/CronList/CronDelete: a job firing twice into the session through the real
loop, the scheduler on plain asyncio, and the cron expression parser."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest
from session_support import Router, last_results, result_text, session_for

from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.tools import cron
from jupyter_toolhost.tools.cron import MIN_INTERVAL_KEY, scheduler
from jupyter_toolhost.tools.cron.prompt import LIFETIME
from jupyter_toolhost.tools.cron.schedule import ScheduleError, parse_schedule
from jupyter_toolhost.tools.cron.scheduler import CronScheduler


async def test_a_scheduled_prompt_fires_twice_into_the_session(tmp_path: Path) -> None:
    ids: dict[str, str] = {}

    def listed(body: dict[str, object]) -> Turn:
        created = result_text(last_results(body)[0])  # type: ignore[arg-type]
        ids["job"] = created.split("job ")[1].split(" ")[0]
        return Turn([tool_use("CronList", {})])

    router = Router(
        {
            "MAIN-CRON": [
                Turn([tool_use("CronCreate", {"cron": "@every 0.3s", "prompt": "CRON-PING"})]),
                listed,
                Turn([text("Scheduled.")]),
                Turn([text("pong 1")]),
                Turn([text("pong 2")]),
                lambda body: Turn([tool_use("CronDelete", {"id": ids["job"]})]),
                Turn([text("Deleted.")]),
            ]
        }
    )
    fired: list[str] = []
    answers: list[str] = []
    done = asyncio.Event()
    lock = asyncio.Lock()
    with MessagesServer(router) as server:
        session = session_for(server, tmp_path, cron.make_tools())

        async def run_prompt(prompt: str) -> None:
            fired.append(prompt)
            if len(fired) > 2:
                return  # later firings are only counted, so the script stays short
            async with lock:
                answers.append(await session.run(prompt))
            if len(answers) == 2:
                done.set()

        session.context.options = replace(session.context.options, run_prompt=run_prompt)
        session.context.options.extras[MIN_INTERVAL_KEY] = 0.1
        async with lock:
            assert await session.run("MAIN-CRON: ping me") == "Scheduled."
        await asyncio.wait_for(done.wait(), 10)
        async with lock:
            assert await session.run("stop pinging") == "Deleted."
        count = len(fired)
        await asyncio.sleep(0.7)

    assert server.errors == []
    assert answers == ["pong 1", "pong 2"]
    assert fired[:2] == ["CRON-PING", "CRON-PING"]
    assert len(fired) == count  # nothing fires after the delete
    created = result_text(last_results(router.seen["MAIN-CRON"][1])[0])
    assert created.startswith(f"Scheduled recurring job {ids['job']} (every 0.3 s)")
    assert LIFETIME in created
    listing = result_text(last_results(router.seen["MAIN-CRON"][2])[0])
    assert listing.startswith(f"{ids['job']}: every 0.3 s, recurring") and LIFETIME in listing
    deleted = result_text(last_results(router.seen["MAIN-CRON"][6])[0])
    assert deleted.startswith(f"Deleted job {ids['job']}")
    # The two scheduled runs are in the conversation, answered.
    prompts = [
        m["content"][0]["text"]
        for m in session.messages
        if m["role"] == "user" and m["content"][0].get("type") == "text"
    ]
    assert prompts.count("CRON-PING") == 2
    assert scheduler(session.context).jobs() == []


async def test_cron_create_needs_a_runner_and_a_valid_expression(tmp_path: Path) -> None:
    router = Router(
        {
            "MAIN-NORUN": [
                Turn([tool_use("CronCreate", {"cron": "@every 1m", "prompt": "x"})]),
                Turn([text("cannot")]),
            ],
            "MAIN-BADCRON": [
                Turn(
                    [
                        tool_use("CronCreate", {"cron": "61 * * * *", "prompt": "x"}),
                        tool_use("CronCreate", {"cron": "@every 0.01s", "prompt": "x"}),
                    ]
                ),
                Turn([text("bad")]),
            ],
        }
    )
    with MessagesServer(router) as server:
        session = session_for(server, tmp_path / "a", cron.make_tools())
        # a host that cannot run prompts
        session.context.options = replace(session.context.options, run_prompt=None)
        await session.run("MAIN-NORUN")
        other = session_for(server, tmp_path / "b", cron.make_tools())
        other.context.options = replace(other.context.options, run_prompt=lambda prompt: None)
        await other.run("MAIN-BADCRON")
    assert server.errors == []
    [norun] = last_results(router.seen["MAIN-NORUN"][1])
    assert norun.get("is_error") and "no `run_prompt` hook" in result_text(norun)
    minute, fast = last_results(router.seen["MAIN-BADCRON"][1])
    assert minute.get("is_error") and "minute field '61' is outside 0-59" in result_text(minute)
    assert fast.get("is_error") and "at least 1 s" in result_text(fast)


async def test_scheduler_skips_overlapping_firings_and_one_shots_end() -> None:
    cron_jobs = CronScheduler()
    release = asyncio.Event()
    calls: list[str] = []

    async def slow(prompt: str) -> None:
        calls.append(prompt)
        await release.wait()

    job = cron_jobs.add(parse_schedule("@every 0.1s", min_interval=0.05), "slow", slow)
    once = cron_jobs.add(
        parse_schedule("@every 0.1s", min_interval=0.05), "once", calls.append, recurring=False
    )
    await asyncio.sleep(0.55)
    assert calls.count("slow") == 1 and job.skipped >= 2
    assert calls.count("once") == 1 and cron_jobs.get(once.id) is None
    release.set()
    cron_jobs.clear()
    assert cron_jobs.jobs() == []


@pytest.mark.parametrize(
    ("expression", "after", "expected"),
    [
        ("*/15 * * * *", datetime(2026, 12, 31, 23, 59, 30), datetime(2027, 1, 1, 0, 0)),
        ("0 9 * * 1-5", datetime(2027, 1, 1, 9, 0), datetime(2027, 1, 4, 9, 0)),
        ("30 4 1,15 * 5", datetime(2027, 1, 2, 0, 0), datetime(2027, 1, 8, 4, 30)),
        ("0 0 29 2 *", datetime(2027, 3, 1), datetime(2028, 2, 29, 0, 0)),
        ("@daily", datetime(2027, 5, 5, 12, 0), datetime(2027, 5, 6, 0, 0)),
        ("0 12 * * 7", datetime(2027, 1, 1), datetime(2027, 1, 3, 12, 0)),
    ],
)
def test_cron_expressions(expression: str, after: datetime, expected: datetime) -> None:
    assert parse_schedule(expression).next_after(after) == expected


@pytest.mark.parametrize("bad", ["* * * *", "a * * * *", "0 24 * * *", "*/0 * * * *", "@every x"])
def test_bad_cron_expressions(bad: str) -> None:
    with pytest.raises(ScheduleError):
        parse_schedule(bad)
