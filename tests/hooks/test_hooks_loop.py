"""UserPromptSubmit and Stop hooks in the loop, and hook failures shown to the user.

Shell hooks are real processes configured in a real `.toolhost/settings.json`; the session is
the real `Session` on the real `anthropic` client against the loopback Messages API, whose
`server.errors == []` proves every conversation sent stayed valid.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from jupyter_toolhost import Session, build_tool
from jupyter_toolhost.agent.events import LoopEvent, Notice, TurnEnd
from jupyter_toolhost.core.context import ToolUseContext
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.hooks.hooks import HookInput, HookOutput, Hooks
from jupyter_toolhost.hooks.turn_hooks import MAX_STOP_CONTINUATIONS
from jupyter_toolhost.jupyter.views.answer import ANSWER_METADATA
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use
from jupyter_toolhost.testing.prompt_cache import without_cache_marks

MODEL = "claude-sonnet-4-5"


@pytest.fixture(autouse=True)
def _no_user_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the settings file a test writes counts (not the machine's ~/.toolhost)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("JUPYTER_TOOLHOST_PERMISSION_MODE", raising=False)


class Events:
    def __init__(self) -> None:
        self.all: list[LoopEvent] = []

    def __call__(self, event: LoopEvent) -> None:
        self.all.append(event)

    def notices(self) -> list[str]:
        return [e.text for e in self.all if isinstance(e, Notice) and e.kind == "hook"]


class EchoInput(BaseModel):
    text: str


def echo_tool(ran: list[str]) -> Tool[EchoInput]:
    def echo(input: EchoInput, context: ToolUseContext) -> str:
        ran.append(input.text)
        return f"echo: {input.text}"

    return build_tool(
        name="Echo",
        input_model=EchoInput,
        call=echo,
        description="Echo the text back.",
        read_only=True,
        concurrency_safe=True,
    )


def hook_script(tmp_path: Path, name: str, body: str) -> str:
    """A hook command: a Python script that gets the hook's JSON as `data`, and logs it."""
    log = tmp_path / f"{name}.log"
    path = tmp_path / f"{name}.py"
    path.write_text(
        "import json, sys, time\n"
        "data = json.load(sys.stdin)\n"
        f"with open({str(log)!r}, 'a') as f:\n"
        "    f.write(json.dumps(data) + '\\n')\n" + body
    )
    return f"{sys.executable} {path}"


def seen_by(tmp_path: Path, name: str) -> list[dict[str, Any]]:
    log = tmp_path / f"{name}.log"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def write_settings(tmp_path: Path, hooks: dict[str, list[tuple[str, str, float]]]) -> None:
    """`.toolhost/settings.json` with hooks: event -> [(matcher, command, timeout)]."""
    config = {
        event: [
            {"matcher": matcher, "hooks": [{"type": "command", "command": cmd, "timeout": t}]}
            for matcher, cmd, t in entries
        ]
        for event, entries in hooks.items()
    }
    folder = tmp_path / ".toolhost"
    folder.mkdir(exist_ok=True)
    (folder / "settings.json").write_text(json.dumps({"hooks": config}))


def make_session(server: MessagesServer, tmp_path: Path, **options: Any) -> Session:
    model = AnthropicModel(base_url=server.base_url, api_key="test-key")
    options.setdefault("tools", [])
    return Session(
        model=model,
        model_id=MODEL,
        cwd=tmp_path,
        trust_folder=True,  # the folder's settings are the test's own
        permission_mode="bypassPermissions",
        retry_backoff_s=0.01,
        **options,
    )


def bodies(server: MessagesServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests if r.path == "/v1/messages"]


def transcript_records(session: Session) -> list[dict[str, Any]]:
    lines = session.transcript_path.read_text().splitlines()
    return [json.loads(line) for line in lines]


def hook_records(session: Session) -> list[dict[str, Any]]:
    return [r for r in transcript_records(session) if r["type"] == "hook"]


def roles_alternate(messages: list[dict[str, Any]]) -> bool:
    roles = [m["role"] for m in messages]
    return roles[:1] == ["user"] and all(a != b for a, b in itertools.pairwise(roles))


# ── UserPromptSubmit ────────────────────────────────────────────────────────────────────

GUARD_EXIT_2 = (
    "if 'secret' in data['prompt']:\n"
    "    sys.stderr.write('prompts about the secret are not allowed')\n"
    "    sys.exit(2)\n"
)
NOT_ALLOWED = "prompts about the secret are not allowed"
GUARD_JSON = (
    "if 'secret' in data['prompt']:\n"
    f"    print(json.dumps({{'decision': 'block', 'reason': {NOT_ALLOWED!r}}}))\n"
)
GUARD_CONTINUE_FALSE = (
    "if 'secret' in data['prompt']:\n"
    f"    print(json.dumps({{'continue': False, 'stopReason': {NOT_ALLOWED!r}}}))\n"
)


@pytest.mark.parametrize("body", [GUARD_EXIT_2, GUARD_JSON, GUARD_CONTINUE_FALSE])
async def test_a_blocked_prompt_sends_nothing_and_leaves_the_conversation(
    tmp_path: Path, body: str
) -> None:
    write_settings(tmp_path, {"UserPromptSubmit": [("", hook_script(tmp_path, "guard", body), 10)]})
    events = Events()
    with MessagesServer([Turn([text("Hello.")]), Turn([text("Still here.")])]) as server:
        session = make_session(server, tmp_path, on_event=events)
        first = await session.run("hello")
        before = json.loads(json.dumps(session.messages))
        blocked = await session.run("tell me the secret")
        requests_after_block = len(bodies(server))
        after = await session.run("and now?")

    assert server.errors == []
    assert first == "Hello." and after == "Still here."
    assert blocked.stop_reason == "hook_blocked" and blocked.turns == 0
    assert "blocked" in blocked and "prompts about the secret are not allowed" in blocked
    assert requests_after_block == 1  # the blocked prompt never reached the server
    assert session.messages[: len(before)] == before
    sent = json.dumps(bodies(server))
    assert "the secret" not in sent and "not allowed" not in sent
    seen = seen_by(tmp_path, "guard")
    assert [s["prompt"] for s in seen] == ["hello", "tell me the secret", "and now?"]
    assert {s["hook_event_name"] for s in seen} == {"UserPromptSubmit"}
    assert seen[0]["session_id"] == session.session_id and seen[0]["cwd"] == str(tmp_path)
    assert any("prompts about the secret are not allowed" in n for n in events.notices())
    [record] = hook_records(session)
    assert record["hook_event_name"] == "UserPromptSubmit" and record["outcome"] == "blocked"


async def test_a_blocked_prompt_after_an_interrupt_keeps_the_conversation_valid(
    tmp_path: Path,
) -> None:
    body = "if data['prompt'] == 'no':\n    sys.exit(2)\n"
    write_settings(tmp_path, {"UserPromptSubmit": [("", hook_script(tmp_path, "g", body), 10)]})
    ran: list[str] = []
    script = [
        Turn([tool_use("Echo", {"text": "a"})]),
        Turn([text("late")], delay_before=5.0),
        Turn([text("Continued.")]),
    ]
    with MessagesServer(script) as server:
        first_turn_done = asyncio.Event()

        def on_event(event: LoopEvent) -> None:
            if isinstance(event, TurnEnd):
                first_turn_done.set()

        session = make_session(server, tmp_path, tools=[echo_tool(ran)], on_event=on_event)
        task = asyncio.ensure_future(session.run("start"))
        await first_turn_done.wait()
        await asyncio.sleep(0.2)  # the second request waits 5 s on the server: cancel in it
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert len(bodies(server)) == 2 and session.messages[-1]["role"] == "user"
        before = json.loads(json.dumps(session.messages))
        blocked = await session.run("no")
        assert blocked.stop_reason == "hook_blocked"
        assert session.messages == before  # still ends on the tool_result user message
        answer = await session.run("go on")

    assert server.errors == [] and answer == "Continued."
    assert roles_alternate(session.messages)


@pytest.mark.parametrize(
    "body",
    [
        "print('The build is green as of today.')\n",
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'UserPromptSubmit',"
        " 'additionalContext': 'The build is green as of today.'}}))\n",
    ],
    ids=["plain-stdout", "additionalContext"],
)
async def test_prompt_hooks_add_context_after_the_prompt(tmp_path: Path, body: str) -> None:
    write_settings(tmp_path, {"UserPromptSubmit": [("", hook_script(tmp_path, "ctx", body), 10)]})
    with MessagesServer([Turn([text("Noted.")])]) as server:
        session = make_session(server, tmp_path)
        assert await session.run("Is the build green?") == "Noted."

    assert server.errors == []
    [request] = bodies(server)
    assert without_cache_marks(request["messages"][-1]["content"]) == [
        {"type": "text", "text": "Is the build green?"},
        {"type": "text", "text": "The build is green as of today."},
    ]


# ── Stop ────────────────────────────────────────────────────────────────────────────────

ONCE = (
    "if not data['stop_hook_active']:\n"
    "    sys.stderr.write('Run the tests before you stop.')\n"
    "    sys.exit(2)\n"
)


async def test_a_stop_hook_forces_one_continuation_then_lets_the_model_stop(
    tmp_path: Path,
) -> None:
    write_settings(tmp_path, {"Stop": [("", hook_script(tmp_path, "stop", ONCE), 10)]})
    events = Events()
    with MessagesServer([Turn([text("Done.")]), Turn([text("Tests pass. Done.")])]) as server:
        session = make_session(server, tmp_path, on_event=events)
        result = await session.run("Fix the bug.")

    assert server.errors == []
    assert result == "Tests pass. Done." and result.stop_reason == "end_turn"
    assert result.turns == 2
    first, second = bodies(server)
    assert second["messages"][-2]["content"] == [{"type": "text", "text": "Done."}]
    last = second["messages"][-1]
    assert last["role"] == "user" and "Run the tests before you stop." in json.dumps(last)
    assert "Run the tests" not in json.dumps(first)
    assert [s["stop_hook_active"] for s in seen_by(tmp_path, "stop")] == [False, True]
    assert roles_alternate(session.messages) and session.messages[-1]["role"] == "assistant"
    assert any("Run the tests before you stop." in n for n in events.notices())


async def test_stop_hooks_run_only_when_the_model_ends_its_turn_without_tools(
    tmp_path: Path,
) -> None:
    write_settings(tmp_path, {"Stop": [("", hook_script(tmp_path, "stop", ""), 10)]})
    ran: list[str] = []
    script = [
        Turn([tool_use("Echo", {"text": "one"})]),
        Turn([text("cut")], stop_reason="max_tokens"),
    ]
    with MessagesServer(script) as server:
        session = make_session(server, tmp_path, tools=[echo_tool(ran)])
        result = await session.run("go")
    assert server.errors == [] and result.stop_reason == "max_tokens" and ran == ["one"]
    assert seen_by(tmp_path, "stop") == []


async def test_a_stop_hook_that_always_blocks_is_bounded(tmp_path: Path) -> None:
    body = "print(json.dumps({'decision': 'block', 'reason': 'keep going'}))\n"
    write_settings(tmp_path, {"Stop": [("", hook_script(tmp_path, "nag", body), 10)]})
    events = Events()
    script = [Turn([text(f"answer {i}")]) for i in range(MAX_STOP_CONTINUATIONS + 3)]
    with MessagesServer(script) as server:
        session = make_session(server, tmp_path, on_event=events)
        result = await session.run("go")

    assert server.errors == []
    assert len(bodies(server)) == MAX_STOP_CONTINUATIONS + 1
    assert result == f"answer {MAX_STOP_CONTINUATIONS}" and result.stop_reason == "end_turn"
    actives = [s["stop_hook_active"] for s in seen_by(tmp_path, "nag")]
    assert actives == [False] + [True] * MAX_STOP_CONTINUATIONS
    assert any(f"{MAX_STOP_CONTINUATIONS} times in a row" in n for n in events.notices())
    assert roles_alternate(session.messages) and session.messages[-1]["role"] == "assistant"


async def test_stop_continuations_respect_max_turns(tmp_path: Path) -> None:
    body = "sys.stderr.write('again'); sys.exit(2)\n"
    write_settings(tmp_path, {"Stop": [("", hook_script(tmp_path, "nag", body), 10)]})
    script = [Turn([text(f"answer {i}")]) for i in range(5)]
    with MessagesServer(script) as server:
        session = make_session(server, tmp_path, max_turns=2)
        result = await session.run("go")
        assert result.stop_reason == "max_turns" and len(bodies(server)) == 2
        # The conversation ends on the hook's feedback; the next prompt joins it.
        assert session.messages[-1]["role"] == "user"
        session.settings.max_turns = 1
        await session.run("one more")
    assert server.errors == [] and roles_alternate(session.messages)


async def test_continue_false_in_a_stop_hook_ends_the_run(tmp_path: Path) -> None:
    body = (
        "print(json.dumps({'continue': False, 'stopReason': 'budget reached',"
        " 'decision': 'block', 'reason': 'ignored'}))\n"
    )
    write_settings(tmp_path, {"Stop": [("", hook_script(tmp_path, "halt", body), 10)]})
    events = Events()
    with MessagesServer([Turn([text("Done.")]), Turn([text("never")])]) as server:
        session = make_session(server, tmp_path, on_event=events)
        result = await session.run("go")
    assert server.errors == [] and len(bodies(server)) == 1
    assert result == "Done." and result.stop_reason == "hook_stopped"
    assert any("budget reached" in n for n in events.notices())


# ── failures are shown, never sent ─────────────────────────────────────────────────────


async def test_failing_hooks_are_shown_and_recorded_but_never_sent(tmp_path: Path) -> None:
    crash = "sys.stderr.write('linter crashed: E999'); sys.exit(1)\n"
    bad_json = "print('{not json')\n"
    slow = "time.sleep(30)\n"
    write_settings(
        tmp_path,
        {
            "UserPromptSubmit": [("", hook_script(tmp_path, "bad", bad_json), 10)],
            "PreToolUse": [("Echo", hook_script(tmp_path, "crash", crash), 10)],
            "PostToolUse": [("Echo", hook_script(tmp_path, "slow", slow), 0.5)],
            "Stop": [("", hook_script(tmp_path, "stopcrash", crash), 10)],
        },
    )
    ran: list[str] = []
    events = Events()
    script = [
        Turn([tool_use("Echo", {"text": "a"}), tool_use("Echo", {"text": "b"})]),
        Turn([text("Both echoed.")]),
    ]
    with MessagesServer(script) as server:
        session = make_session(server, tmp_path, tools=[echo_tool(ran)], on_event=events)
        result = await session.run("Echo a and b.")

    assert server.errors == [] and result == "Both echoed." and sorted(ran) == ["a", "b"]
    notices = events.notices()
    assert sum("invalid JSON" in n for n in notices) == 1
    assert sum("linter crashed: E999" in n and "PreToolUse" in n for n in notices) == 2
    assert sum("timed out after 0.5s" in n and "PostToolUse" in n for n in notices) == 2
    assert sum("linter crashed: E999" in n and "Stop" in n for n in notices) == 1
    records = hook_records(session)
    assert [r["text"] for r in records] == notices
    assert {r["outcome"] for r in records} == {"error"}
    assert {r["hook_event_name"] for r in records} == {
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "Stop",
    }
    sent = json.dumps(bodies(server))
    for secret in ("linter crashed", "invalid JSON", "timed out", "not json"):
        assert secret not in sent
    # Every tool_use got exactly one tool_result, the real one.
    second = bodies(server)[1]["messages"][-1]["content"]
    results = [b for b in second if b["type"] == "tool_result"]
    assert [(r["tool_use_id"], r["content"]) for r in results] == [
        ("toolu_01", "echo: a"),
        ("toolu_02", "echo: b"),
    ]
    assert len(second) == 2
    # The transcript with hook records still loads back into the same conversation.
    resumed = Session.resume(
        session.session_id, model=AnthropicModel(api_key="x"), cwd=tmp_path, tools=[]
    )
    assert resumed.messages == session.messages


async def test_a_sync_python_hook_times_out_without_blocking_the_loop(tmp_path: Path) -> None:
    slept: list[float] = []

    def sleepy(hook_input: HookInput) -> HookOutput:
        time.sleep(5)
        slept.append(time.monotonic())
        return HookOutput(permission_decision="deny")

    def raising(hook_input: HookInput) -> None:
        raise RuntimeError("the policy server is down")

    hooks = Hooks()
    hooks.add("PreToolUse", sleepy, matcher="Echo", timeout=0.5)
    hooks.add("PreToolUse", raising, matcher="Echo", source="policy.py")
    ran: list[str] = []
    events = Events()
    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.02)

    script = [Turn([tool_use("Echo", {"text": "a"})]), Turn([text("ok")])]
    with MessagesServer(script) as server:
        session = make_session(
            server, tmp_path, tools=[echo_tool(ran)], hooks=hooks, on_event=events
        )
        beat = asyncio.ensure_future(ticker())
        began = time.monotonic()
        result = await session.run("go")
        took = time.monotonic() - began
        beat.cancel()

    assert server.errors == [] and result == "ok"
    assert ran == ["a"]  # the timed-out hook's deny never came: the call proceeded
    assert 0.5 <= took < 2.5, took
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert len(ticks) > 10 and max(gaps) < 0.3, max(gaps)  # the event loop kept running
    notices = events.notices()
    assert any("timed out after 0.5s" in n for n in notices), notices
    assert any("policy.py failed: RuntimeError: the policy server is down" in n for n in notices)
    assert slept == []  # it still sleeps in its thread, unheard
    assert len(hook_records(session)) == 2


async def test_async_and_callable_object_hooks_still_run_on_the_loop(tmp_path: Path) -> None:
    seen: list[str] = []

    class Policy:
        async def __call__(self, hook_input: HookInput) -> HookOutput:
            seen.append(f"object {hook_input.prompt}")
            return HookOutput(additional_context=("from the object",))

    async def add_date(hook_input: HookInput) -> HookOutput:
        await asyncio.sleep(0)
        seen.append(f"async {hook_input.prompt}")
        return HookOutput(additional_context=("from the coroutine",))

    hooks = Hooks()
    with MessagesServer([Turn([text("ok")])]) as server:
        session = make_session(server, tmp_path, hooks=hooks, load_settings=False)
        # Hooks added after the session was made (to the very object it was given) count.
        hooks.add("UserPromptSubmit", Policy())
        hooks.add("UserPromptSubmit", add_date)
        hooks.add("UserPromptSubmit", lambda h: HookOutput(additional_context=("from a lambda",)))
        await session.run("hi")
    assert seen == ["object hi", "async hi"]
    assert [b["text"] for b in bodies(server)[0]["messages"][-1]["content"]] == [
        "hi",
        "from the object",
        "from the coroutine",
        "from a lambda",
    ]


# ── where the user sees them ───────────────────────────────────────────────────────────


async def test_hook_notices_reach_the_notebook_cell(tmp_path: Path) -> None:
    from jupyter_toolhost.jupyter.agent import run_session
    from jupyter_toolhost.jupyter.views.live import LiveView

    crash = "sys.stderr.write('linter crashed: E999'); sys.exit(1)\n"
    write_settings(tmp_path, {"UserPromptSubmit": [("", hook_script(tmp_path, "c", crash), 10)]})
    shown: list[Any] = []
    written: list[str] = []

    class Handle:  # what IPython's display(..., display_id=True) returns
        def update(self, obj: Any) -> None:
            shown.append(obj)

    def display(obj: Any, **kwargs: Any) -> Handle | None:
        shown.append(obj)
        return Handle() if kwargs.get("display_id") else None

    view = LiveView(describe=lambda name, raw: (name, ""), display=display, write=written.append)
    with MessagesServer([Turn([text("Hi.")])]) as server:
        session = make_session(server, tmp_path)
        await run_session(session, "hello", view=view, max_turns=None)
    view.finish()  # as the kernel's host does when the cell ends
    plain = [obj.data["text/plain"] for obj in shown if "text/plain" in obj.data]
    assert any("linter crashed: E999" in p for p in plain), plain
    answers = [obj.data["text/plain"] for obj in shown if obj.metadata == ANSWER_METADATA]
    assert answers[-1] == "Hi.", (answers, written)


def test_hook_notices_reach_the_terminal(tmp_path: Path) -> None:
    crash = "sys.stderr.write('linter crashed: E999'); sys.exit(1)\n"
    guard = "if 'secret' in data['prompt']:\n    sys.stderr.write('no secrets'); sys.exit(2)\n"
    write_settings(
        tmp_path,
        {
            "UserPromptSubmit": [
                ("", hook_script(tmp_path, "c", crash), 10),
                ("", hook_script(tmp_path, "g", guard), 10),
            ]
        },
    )
    with MessagesServer([Turn([text("Hi.")])]) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        env.update(
            ANTHROPIC_BASE_URL=server.base_url,
            ANTHROPIC_API_KEY="test-key",
            HOME=str(tmp_path / "home"),
        )

        def cli(prompt: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "jupyter_toolhost",
                    "--model",
                    MODEL,
                    "--trust-folder",
                    prompt,
                ],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
                stdin=subprocess.DEVNULL,
            )

        done = cli("hello")
        blocked = cli("the secret")
    assert done.returncode == 0, done.stderr
    assert "[hook] UserPromptSubmit hook" in done.stderr and "linter crashed: E999" in done.stderr
    assert done.stdout.strip() == "Hi."
    assert blocked.returncode == 0, blocked.stderr
    assert "[hook] The prompt was blocked by a UserPromptSubmit hook: no secrets" in blocked.stderr
    assert "[hook_blocked] 0 turns" in blocked.stderr
    assert server.errors == [] and len(bodies(server)) == 1
