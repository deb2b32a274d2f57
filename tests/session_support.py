"""Shared helpers of session-level tests: a wired session, a routing script, an approver.

Not a test module (it holds no tests): the tools' tests (`tests/tools/`) import it, and so do
a few others that need a whole session against the loopback server.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from jupyter_toolhost import Session, build_tool
from jupyter_toolhost.agent.subagent_loop import LoopRunner
from jupyter_toolhost.core.context import ToolUseContext
from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.core.types import PermissionAsk
from jupyter_toolhost.model.anthropic_model import AnthropicModel
from jupyter_toolhost.permissions.api import ApprovalDecision, ApprovalRequest
from jupyter_toolhost.testing import MessagesServer, Turn

MODEL = "claude-sonnet-4-5"
AGENT_ID = re.compile(r"agent_\d+_[0-9a-f]{4}")


def session_for(
    server: MessagesServer, tmp_path: Path, tools: list[Tool[Any]], **options: Any
) -> Session:
    """A session on the loopback server, wired the way the tools of this area need."""
    model = AnthropicModel(base_url=server.base_url, api_key="test-key")
    # Calls run unless a test brings an approver to see what is asked.
    options.setdefault(
        "permission_mode", "default" if "approver" in options else "bypassPermissions"
    )
    session = Session(
        tools=tools, model=model, model_id=MODEL, cwd=tmp_path, retry_backoff_s=0.01, **options
    )
    runner = session.context.options.subagent_runner
    assert isinstance(runner, LoopRunner) and runner.loop is session._loop
    return session


def first_user_text(body: dict[str, Any]) -> str:
    content = body["messages"][0]["content"]
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")


def last_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks of the request's last message."""
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return []
    return [b for b in content if b.get("type") == "tool_result"]


def result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if b.get("type") == "text")


Step = Turn | Callable[[dict[str, Any]], Turn]


class Router:
    """A server script that answers each conversation from its own list of steps.

    A conversation is recognised by a marker in its first user message; its steps are
    consumed in order (a step may be a function of the request). Requests are recorded per
    conversation in `seen`.
    """

    def __init__(self, routes: dict[str, list[Step]]) -> None:
        self.routes = {key: list(steps) for key, steps in routes.items()}
        self.seen: dict[str, list[dict[str, Any]]] = {key: [] for key in routes}

    def __call__(self, body: dict[str, Any]) -> Turn:
        first = first_user_text(body)
        for key, steps in self.routes.items():
            if key in first:
                self.seen[key].append(body)
                if not steps:
                    raise AssertionError(f"no step left for {key!r}")
                step = steps.pop(0)
                return step if isinstance(step, Turn) else step(body)
        raise AssertionError(f"no route for a conversation starting {first[:80]!r}")


class ScriptedApprover:
    """Answers approvals from a list and records what it was asked."""

    def __init__(self, *choices: ApprovalDecision) -> None:
        self.choices = list(choices)
        self.asked: list[ApprovalRequest] = []

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        self.asked.append(request)
        return self.choices.pop(0)


def request_bodies(server: MessagesServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests if r.path == "/v1/messages"]


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["name"] for t in body.get("tools", [])]


def offered_names(body: dict[str, Any]) -> list[str]:
    """Tools the request offers: defined in `tools`, or announced as deferred (found through
    ToolSearch) in the deferred-tools attachment of its messages."""
    announced: list[str] = []
    for message in body["messages"]:
        content = message["content"]
        for block in content if isinstance(content, list) else []:
            text = block.get("text", "") if block.get("type") == "text" else ""
            if "deferred tools are available" in text:
                announced += [line for line in text.splitlines()[2:-1] if line.strip()]
    return [*tool_names(body), *announced]


class DeployInput(BaseModel):
    target: str


def deploy_tool() -> Tool[DeployInput]:
    def check(input: DeployInput, context: ToolUseContext) -> PermissionAsk:
        return PermissionAsk(f"Deploy to {input.target}?")

    return build_tool(
        name="Deploy",
        input_model=DeployInput,
        call=lambda input, context: f"deployed to {input.target}",
        description="Deploy.",
        check_permissions=check,
    )
