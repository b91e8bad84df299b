"""The judge backend interface (SPEC §2.1)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from pydantic import BaseModel

from assay.types import Completion, GenerateConfig, Message


class Capabilities(BaseModel):
    """What a backend can do; methods and the structured-output layer read these flags."""

    json_schema: bool = False
    """Constrained decoding to a JSON schema."""
    grammar: bool = False
    """Constrained decoding to a GBNF grammar."""
    logprobs: bool = False
    """Top log-probabilities of generated tokens."""
    seed: bool = False
    """A seed makes sampling reproducible."""
    label_probs: bool = False
    """Label-probability calls (``GenerateConfig.labels``): the next token's distribution over a
    label set from one forward pass (``--verdicts direct``)."""
    max_context: int | None = None
    """Context window in tokens, when known."""


class JudgeBackend(ABC):
    """A judge model. One abstract coroutine; everything else has a default.

    ``name`` is ``provider/model`` as the user wrote it. ``identity()`` is what makes two
    backends interchangeable for the cache: provider, model and anything else that changes
    the output for the same messages and parameters.
    """

    name: str
    capabilities: Capabilities = Capabilities()
    max_concurrency: int = 4

    @abstractmethod
    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        """Run one call. Raise TransientBackendError / RateLimited for retryable failures."""

    def identity(self) -> dict[str, Any]:
        """Fields that identify this judge in cache keys and run manifests."""
        return {"backend": self.name}

    async def aclose(self) -> None:
        """Release connections or model memory."""
        return None
