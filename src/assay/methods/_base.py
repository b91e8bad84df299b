"""What every evaluation method provides to the engine."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from assay.runner import JudgeClient
from assay.types import Item, Unscored


class ItemResult(BaseModel):
    """One item's scores, the unscored metrics with their reasons, and the evidence."""

    scores: dict[str, float | None]
    unscored: list[Unscored] = Field(default_factory=list)
    details: dict[str, Any] = Field(default_factory=dict)
    call_keys: list[str] = Field(default_factory=list)

    @property
    def status(self) -> str:
        values = list(self.scores.values())
        if values and all(v is None for v in values):
            return "unscored"
        if any(v is None for v in values):
            return "partial"
        return "scored"


class CallEstimate(BaseModel):
    """A dry-run estimate for one item (tokens are approximate: ~4 characters per token)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: CallEstimate) -> CallEstimate:
        return CallEstimate(calls=self.calls + other.calls,
                            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
                            completion_tokens=self.completion_tokens + other.completion_tokens)


class Method(ABC):
    """An evaluation method: I/O-free rendering and parsing plus one coroutine per item."""

    name: ClassVar[str]
    metrics: ClassVar[tuple[str, ...]]
    needs_judge: ClassVar[bool] = True
    """False for methods that make no judge call (lexical baselines)."""

    @abstractmethod
    def manifest(self) -> dict[str, Any]:
        """Options and prompt hashes; stored in the run manifest and part of the run id."""

    @abstractmethod
    def check_item(self, item: Item) -> str | None:
        """Why the item cannot be evaluated by this method (naming the field), or None."""

    @abstractmethod
    async def evaluate(self, item: Item, client: JudgeClient) -> ItemResult:
        """Score one item."""

    @abstractmethod
    def estimate(self, items: list[Item]) -> CallEstimate:
        """Dry-run estimate of judge calls and tokens for these items."""

    def order_key(self, item: Item) -> Any:
        """Items are evaluated in this order (results still come back in input order), so
        that consecutive calls share prompt prefixes."""
        return item.id
