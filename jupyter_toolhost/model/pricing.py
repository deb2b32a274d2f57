"""Estimated cost of token usage, from a small table of list prices (USD per million tokens).

Prices are the public list prices for standard (non-batch) use; cache writes cost 1.25x the
input price (5-minute cache) or 2x (1-hour cache), and cache reads 0.1x. An unknown model
has no estimate (None), never a guess. Extended thinking is billed as output: its tokens are
already part of `output_tokens` (`Usage.thinking_tokens` only says how many), so they are
never added twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import Usage


@dataclass(frozen=True, slots=True)
class Price:
    """Dollars per million input and output tokens."""

    input: float
    output: float


PRICES: dict[str, Price] = {
    "claude-opus-4-5": Price(5.0, 25.0),
    "claude-opus-4-1": Price(15.0, 75.0),
    "claude-opus-4": Price(15.0, 75.0),
    "claude-sonnet-4-5": Price(3.0, 15.0),
    "claude-sonnet-4": Price(3.0, 15.0),
    "claude-3-7-sonnet": Price(3.0, 15.0),
    "claude-haiku-4-5": Price(1.0, 5.0),
    "claude-3-5-haiku": Price(0.8, 4.0),
    "claude-3-haiku": Price(0.25, 1.25),
}
CACHE_WRITE_FACTOR = 1.25
CACHE_WRITE_1H_FACTOR = 2.0
CACHE_READ_FACTOR = 0.1


def _weighed_writes(usage: Usage) -> float:
    """Cache writes in input tokens: 5-minute ones × 1.25, 1-hour ones × 2."""
    long = usage.cache_creation_1h_input_tokens
    short = usage.cache_creation_input_tokens - long
    return short * CACHE_WRITE_FACTOR + long * CACHE_WRITE_1H_FACTOR


def price_of(model: str) -> Price | None:
    """The price of a model id, matching dated ids (`claude-sonnet-4-5-20250929`) too."""
    best = None
    for name, price in PRICES.items():
        if (model == name or model.startswith(name + "-")) and (
            best is None or len(name) > len(best[0])
        ):
            best = (name, price)
    return best[1] if best else None


def estimate_cost(model: str, usage: Usage) -> float | None:
    """Estimated dollars for `usage` on `model`, or None when the model is not in the table."""
    price = price_of(model)
    if price is None:
        return None
    per_token_in = price.input / 1_000_000
    return (
        usage.input_tokens * per_token_in
        + _weighed_writes(usage) * per_token_in
        + usage.cache_read_input_tokens * per_token_in * CACHE_READ_FACTOR
        + usage.output_tokens * price.output / 1_000_000
    )


def billed_equivalent(usage: Usage) -> float:
    """The input tokens of `usage` weighed by their price, in plain input tokens:
    uncached × 1, 5-minute cache writes × 1.25, 1-hour cache writes × 2, cache reads × 0.1
    (what a session's input costs, whatever the model's price)."""
    return (
        usage.input_tokens
        + _weighed_writes(usage)
        + usage.cache_read_input_tokens * CACHE_READ_FACTOR
    )


def add_cost(total: float | None, model: str, usage: Usage) -> float | None:
    """`total` plus the estimated cost of `usage`; None once any part is unknown."""
    cost = estimate_cost(model, usage)
    return None if total is None or cost is None else total + cost
