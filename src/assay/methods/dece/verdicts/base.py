"""The interface of DeCE's verdict modes: a mode judges one half's statements against the judged
text and says what each verdict counts and what the half scores."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from assay.core.types import Item, Unscored
from assay.judge.runner import JudgeClient
from assay.methods.dece.halves import Half


class Host(Protocol):
    """What a mode needs of the method: its options and its prompts."""

    config: Any

    def render_verdicts(self, half: Half, item: Item, statements: list[str]) -> list[Any]: ...

    def render_direct(self, half: Half, sentences: list[str], statement: str) -> list[Any]: ...


@dataclass
class Judged:
    """What a mode decided over one half's statements."""

    entries: list[tuple[Any, dict[str, Any]]]
    """Per statement judged, in order: what its verdict counts (the half's label) and the
    record's other fields. Shorter than the statements when a call failed."""
    score: float | None
    """The half's score; None when ``problem`` says why not."""
    hard: float | None = None
    """A probabilistic mode's score of its greedy labels (recorded as ``<metric>_hard``)."""
    problem: Unscored | None = None
    keys: list[str] = field(default_factory=list)


class VerdictMode(ABC):
    """One way of reaching the verdicts (``DeCEConfig.verdicts``)."""

    name: ClassVar[str]
    probabilistic: ClassVar[bool] = False
    """Records carry the judge's probability (``p_judge``) and what counts (``soft``)."""

    def empty_fields(self) -> dict[str, Any]:
        """The fields of a verdict no judge was asked for (a criterion against an empty answer),
        beyond those of a hard verdict: the same fields as an asked one."""
        return {}

    @abstractmethod
    async def judge(self, host: Host, half: Half, item: Item, client: JudgeClient,
                    statements: list[str]) -> Judged:
        """The verdicts on ``statements`` (at least one) against the half's judged text."""
