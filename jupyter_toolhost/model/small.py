"""The small, fast model a session uses for side questions (WebFetch's `prompt`).

It talks through the session's own client: an `AnthropicModel`, or a `CassetteModel`, whose
cassette then records and replays these requests in order with the others, marked with the
purpose `small_model` so that replay never serves one kind of request the other's answer.
The id comes from the option, then `JUPYTER_TOOLHOST_SMALL_MODEL`, then
`DEFAULT_SMALL_MODEL`; an empty id or `none` turns the small model off.
"""

from __future__ import annotations

import os

from .base import BlockComplete, Model, ModelRequest

DEFAULT_SMALL_MODEL = "claude-haiku-4-5"
SMALL_MODEL_ENV = "JUPYTER_TOOLHOST_SMALL_MODEL"
PURPOSE = "small_model"
"""How a cassette marks the small model's requests."""
SYSTEM = (
    "You answer a question about one web page, from the page's content only. Be concise; "
    "quote exactly where the question asks for exact text. If the page does not say, answer "
    "that it does not."
)
_OFF = ("", "none")


def small_model_name(option: str | None = None) -> str | None:
    """The small model's id: the option, then the environment, then the default; None
    when it is turned off (an empty id or `none`)."""
    chosen = option if option is not None else os.environ.get(SMALL_MODEL_ENV) or None
    if chosen is None:
        return DEFAULT_SMALL_MODEL
    return None if chosen.strip().lower() in _OFF else chosen.strip()


class SmallModel:
    """`await small(prompt)` is the small model's text answer to one user prompt."""

    def __init__(self, *, model: Model, model_id: str, max_tokens: int = 2048) -> None:
        self.model = model
        self.model_id = model_id
        self.max_tokens = max_tokens

    async def __call__(self, prompt: str) -> str:
        request = ModelRequest(
            model=self.model_id,
            messages=[{"role": "user", "content": [{"type": "text", "text": prompt}]}],
            max_tokens=self.max_tokens,
            system=[{"type": "text", "text": SYSTEM}],
        )
        texts: list[str] = []
        async for event in self.model.stream(request):
            if isinstance(event, BlockComplete) and event.block.get("type") == "text":
                texts.append(str(event.block.get("text", "")))
        return "".join(texts).strip()


def small_model_for(model: Model, model_id: str | None) -> SmallModel | None:
    """The small model on the client of a session's `model`, for clients that speak the
    Messages API (the Anthropic client, or a cassette of it); None for anything else or
    when `model_id` is None (turned off)."""
    from .anthropic_model import AnthropicModel
    from .cassette import CassetteModel

    if model_id is None:
        return None
    if isinstance(model, CassetteModel):
        return SmallModel(model=model.for_purpose(PURPOSE), model_id=model_id)
    if isinstance(model, AnthropicModel):
        return SmallModel(model=model, model_id=model_id)
    return None
