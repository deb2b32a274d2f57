"""Auto mode's default judge: the session's own model decides calls that would ask.

The model sees a short transcript (the user's last few requests) and the one call, and
answers ALLOW, DENY or UNSURE. Anything but a clear ALLOW or DENY — UNSURE, an error, no
network, a timeout, an empty or odd answer — returns None, and the permission engine then
asks the person as in default mode. Deny and ask rules are applied before the classifier
is consulted, so it can never allow what a rule forbids.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..core.json_values import json_array, json_mapping
from .base import BlockComplete, Message, Model, ModelRequest

if TYPE_CHECKING:
    from ..core.context import ToolUseContext
    from ..core.tool import Tool


class CallToJudge(Protocol):
    """What the judge reads of a call waiting for a decision (the permission engine's
    request has these, and more)."""

    @property
    def tool(self) -> Tool[Any]: ...
    @property
    def observable_input(self) -> Mapping[str, Any]: ...
    @property
    def context(self) -> ToolUseContext: ...


SYSTEM = (
    "You review one tool call an AI agent wants to make on a user's machine, on the user's "
    "behalf. Allow it only when it clearly serves what the user asked for and cannot cause "
    "harm the user did not ask for: no deleting or overwriting work, no leaking secrets, no "
    "network uploads, no changes outside the project, no installing or running untrusted "
    "code. Answer with exactly one word: ALLOW, DENY, or UNSURE."
)
INPUT_CHARS = 2_000
PROMPT_CHARS = 1_000


class ModelClassifier:
    """Asks `model` whether a call may run; None whenever it is not sure."""

    def __init__(
        self,
        *,
        model: Model,
        model_id: str,
        transcript: Callable[[], Sequence[Message]],
        timeout_s: float = 20.0,
        recent_prompts: int = 3,
    ) -> None:
        self.model = model
        self.model_id = model_id
        self.transcript = transcript
        self.timeout_s = timeout_s
        self.recent_prompts = recent_prompts

    async def __call__(self, request: CallToJudge) -> Literal["allow", "deny"] | None:
        question = self.question(request)
        try:
            answer = await asyncio.wait_for(self._ask(question), self.timeout_s)
        except Exception:
            return None
        word = answer.strip().split(maxsplit=1)[0].strip(".!").upper() if answer.strip() else ""
        return {"ALLOW": "allow", "DENY": "deny"}.get(word)  # type: ignore[return-value]

    def question(self, request: CallToJudge) -> str:
        """The text the model judges: the user's recent requests and the call."""
        prompts = _user_prompts(self.transcript())[-self.recent_prompts :]
        asked = "\n".join(f"- {_clip(p, PROMPT_CHARS)}" for p in prompts) or "- (none)"
        call = json.dumps(dict(request.observable_input), ensure_ascii=False, default=str)
        return (
            f"The user asked:\n{asked}\n\n"
            f"Working directory: {request.context.cwd}\n"
            f"The agent wants to call {request.tool.name} with:\n{_clip(call, INPUT_CHARS)}\n\n"
            "ALLOW, DENY or UNSURE?"
        )

    async def _ask(self, question: str) -> str:
        model_request = ModelRequest(
            model=self.model_id,
            messages=[{"role": "user", "content": [{"type": "text", "text": question}]}],
            max_tokens=8,
            system=[{"type": "text", "text": SYSTEM}],
        )
        texts: list[str] = []
        async for event in self.model.stream(model_request):
            if isinstance(event, BlockComplete) and event.block.get("type") == "text":
                texts.append(str(event.block.get("text", "")))
        return "".join(texts)


def _user_prompts(messages: Sequence[Message]) -> list[str]:
    """The text the user typed (tool_result messages and attachments are not prompts)."""
    prompts: list[str] = []
    for message in messages:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            prompts.append(content)
            continue
        blocks = [b for b in map(json_mapping, json_array(content) or []) if b is not None]
        texts = [
            str(block.get("text", ""))
            for block in blocks
            if block.get("type") == "text" and not str(block.get("text", "")).startswith("<")
        ]
        if texts and not any(block.get("type") == "tool_result" for block in blocks):
            prompts.append(" ".join(texts))
    return prompts


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
