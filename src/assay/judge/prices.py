"""What judge calls cost as the providers bill them.

Hosted providers keep the start of a prompt they have just read and bill it, when it comes again,
at a fraction of the input price: OpenAI on its own for prompts of 1,024 tokens or more (in
128-token steps of the longest start it has seen recently), Anthropic where the request marks a
start with ``cache_control`` (assay marks none). The backends read those tokens into
:attr:`assay.core.types.Usage.cached_prompt_tokens`; a run's cost is then
(prompt − cached) · in + cached · cached-in + completion · out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from assay.core.errors import ConfigError
from assay.core.method import OPENAI_CACHE_MIN, OPENAI_CACHE_STEP, openai_cached

__all__ = ["OPENAI_CACHE_MIN", "OPENAI_CACHE_STEP", "PRICES_PER_MILLION", "Price", "caches_like_openai",
           "given_price", "list_price", "openai_cached"]

PRICES_PER_MILLION: dict[str, tuple[float, float, float]] = {
    # USD per 1M prompt / cached prompt / completion tokens, the providers' list prices (checked
    # 2025); anything else is priced only from --price-in / --price-cached / --price-out
    "openai/gpt-4o-mini": (0.15, 0.075, 0.60), "openai/gpt-4o": (2.50, 1.25, 10.00),
    "openai/gpt-4.1-mini": (0.40, 0.10, 1.60), "openai/gpt-4.1": (2.00, 0.50, 8.00),
    "openai/gpt-4.1-nano": (0.10, 0.025, 0.40),
    # Anthropic (through LiteLLM): cache reads at 0.1x the input price
    "anthropic/claude-3-5-sonnet-20240620": (3.00, 0.30, 15.00),
    "anthropic/claude-3-5-sonnet-20241022": (3.00, 0.30, 15.00),
    "anthropic/claude-3-7-sonnet-20250219": (3.00, 0.30, 15.00),
    "anthropic/claude-sonnet-4-20250514": (3.00, 0.30, 15.00),
    "anthropic/claude-sonnet-4-5-20250929": (3.00, 0.30, 15.00),
    "anthropic/claude-3-5-haiku-20241022": (0.80, 0.08, 4.00),
    "anthropic/claude-haiku-4-5-20251001": (1.00, 0.10, 5.00),
}

@dataclass(frozen=True)
class Price:
    """USD per 1M prompt, cached prompt and completion tokens."""

    prompt: float
    cached: float
    completion: float

    def __post_init__(self) -> None:
        for name in ("prompt", "cached", "completion"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise ValueError(f"a price per 1M {name} tokens must be a finite number >= 0, not {value!r}")

    def cost(self, prompt_tokens: int, completion_tokens: int, cached_prompt_tokens: int = 0) -> float:
        """USD for these tokens: the cached part of the prompt at the cached price, the rest at the
        prompt price. Cached tokens are part of the prompt tokens (as OpenAI and LiteLLM count them)."""
        if min(prompt_tokens, completion_tokens, cached_prompt_tokens) < 0:
            raise ValueError(f"token counts must be >= 0 (prompt {prompt_tokens}, cached {cached_prompt_tokens}, "
                             f"completion {completion_tokens})")
        if cached_prompt_tokens > prompt_tokens:
            raise ValueError(f"{cached_prompt_tokens} cached prompt tokens are more than the {prompt_tokens} "
                             "prompt tokens they are part of")
        return ((prompt_tokens - cached_prompt_tokens) * self.prompt + cached_prompt_tokens * self.cached
                + completion_tokens * self.completion) / 1_000_000

    def shown(self) -> str:
        return f"${self.prompt:g}/1M in, ${self.cached:g}/1M cached in, ${self.completion:g}/1M out"


def list_price(judge: str) -> Price | None:
    """The list price of a judge named as ``--judge`` names it (``openai/gpt-4o-mini``,
    ``litellm/anthropic/claude-sonnet-4-5-20250929``), or None: unknown, or served from another
    address (``openai/NAME@URL``), whose price is not the provider's."""
    if "@" in judge:
        return None
    known = PRICES_PER_MILLION.get(judge.removeprefix("litellm/"))
    return Price(*known) if known is not None else None


def given_price(price_in: float | None, price_cached: float | None, price_out: float | None) -> Price | None:
    """The price of ``--price-in`` / ``--price-cached`` / ``--price-out``, or None when none is given.
    An unset cached price is the prompt price (no discount), an unset one of the others 0; a cached
    price above the prompt price is refused (ConfigError)."""
    if price_in is None and price_cached is None and price_out is None:
        return None
    prompt = price_in if price_in is not None else 0.0
    if price_cached is not None and price_cached > prompt:
        raise ConfigError(f"--price-cached {price_cached:g} is above --price-in {prompt:g}: a provider bills the "
                          "prompt tokens it read from its cache at most at the input price")
    return Price(prompt, price_cached if price_cached is not None else prompt,
                 price_out if price_out is not None else 0.0)


def caches_like_openai(judge: str) -> bool:
    """Whether the judge is OpenAI's own (its prompt cache works without being asked for)."""
    return "@" not in judge and judge.removeprefix("litellm/").startswith("openai/")
