"""The judge backend interface."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from pydantic import BaseModel

from assay.core.types import Completion, GenerateConfig, Message

COUPLED = "x-assay-coupled"
"""A root-object keyword of ours, sent only to the embedded judge (other backends never see it):
``[{"key": "<enum property>", "value": "<number property>", "ranges": {"<enum value>": [low,
high], ...}, "decimals": 2}, ...]`` — the number that follows ``key`` must lie in the range of the
value written for ``key``. The case-aware judge's band and score: a weak judge wrote "severe"
and then 0.85, and the turn was asked again, then failed closed. Methods send it to a backend
whose capabilities say ``grammar``; a backend that says so must build its grammar with
:func:`assay.judge.backends._fastgrammar.json_schema_grammar` (the embedded judge does), which
keeps this keyword and ``maxLength``."""


class Capabilities(BaseModel):
    """What a backend can do; methods and the structured-output layer read these flags."""

    json_schema: bool = False
    """Constrained decoding to a JSON schema."""
    grammar: bool = False
    """Constrained decoding to a GBNF grammar (its JSON schemas may carry :data:`COUPLED`)."""
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


def label_probs_from_top(top: dict[str, float], labels: list[str]) -> dict[str, float] | None:
    """Each label's probability from a next token's top logprobs: the mass of the tokens the
    label can start with (case and leading-space variants), renormalised over the labels; None
    when no label is among them."""
    import math

    def variants(label: str) -> set[str]:
        return {label, label.capitalize(), label.upper(), " " + label, " " + label.capitalize()}

    mass = {label: sum(math.exp(lp) for token, lp in top.items() if token in variants(label)) for label in labels}
    covered = sum(mass.values())
    return {label: m / covered for label, m in mass.items()} if covered > 0 else None


def label_completion(completion: Completion, labels: list[str], name: str, missing: str) -> Completion:
    """A one-token completion read as a label call: each label's probability from the top
    logprobs of its first generated token. ``missing``: the message when there are no logprobs."""
    from assay.core.errors import BackendError, TransientBackendError

    if not completion.logprobs:
        raise BackendError(missing)
    top = dict(completion.logprobs[0].top)
    top.setdefault(completion.logprobs[0].token, completion.logprobs[0].logprob)
    probs = label_probs_from_top(top, labels)
    if probs is None:
        raise TransientBackendError(f"{name}: none of the labels {labels} among the top next tokens")
    return completion.model_copy(update={"text": max(probs, key=lambda k: probs[k]), "label_probs": probs,
                                         "finish_reason": "label"})

