"""DeCE's two halves, written once: recall judges the question's criteria against the answer,
precision judges the answer's elements against the whole reference. A :class:`Half` names what
differs between them (the statements, the judged text, the prompts, the fields of a record)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assay.core.types import Item
from assay.judge.text import split_sentences
from assay.methods.dece.schemas import SatisfactionOutput, VerificationOutput


@dataclass(frozen=True)
class Half:
    metric: str
    """The score it gives: recall or precision."""
    kind: str
    """What one statement is (criterion, element): its field in a record and a verdict's index field."""
    plural: str
    """The details' list of the statements' records (criteria, elements)."""
    label: str
    """The field of a record that holds what the verdict counts (satisfied, supported)."""
    what: str
    """The verdict call, as named in the reason of its failure."""
    source: str
    """The judged text (answer, reference): its slot in the prompts and its name in a downgrade."""
    verdict_prompt: str
    direct_prompt: str
    direct_field: str
    """The statement's slot in the one-question prompt."""
    rules: str
    """The domain pack's rules of the verdict."""
    output: type[SatisfactionOutput] | type[VerificationOutput]

    @property
    def hard_key(self) -> str:
        """Where a probabilistic mode records the score of its greedy labels."""
        return f"{self.metric}_hard"

    def judged_text(self, item: Item) -> str:
        if self.source == "answer":
            return item.response
        assert item.reference is not None
        return item.reference.full_text()

    def sentences(self, item: Item) -> list[str]:
        return split_sentences(self.judged_text(item))

    def blank(self, n: int, statement: str, edited: bool | None) -> dict[str, Any]:
        """A statement's record before any verdict: every field present, none decided
        (``edited``, for criteria only: an expert edited it in the criteria file)."""
        return {"n": n, self.kind: statement, **({} if edited is None else {"edited": edited}), self.label: None,
                "judge_score": None, "evidence": None, "quote": None, "quote_found": None, "figures_missing": None,
                "downgraded": None, "reasoning": None}


RECALL = Half(metric="recall", kind="criterion", plural="criteria", label="satisfied", what="criterion satisfaction",
              source="answer", verdict_prompt="criteria_satisfaction", direct_prompt="criterion_direct",
              direct_field="criterion", rules="satisfaction_rules", output=SatisfactionOutput)
PRECISION = Half(metric="precision", kind="element", plural="elements", label="supported",
                 what="element verification", source="reference", verdict_prompt="element_verification",
                 direct_prompt="element_direct", direct_field="statement", rules="verification_rules",
                 output=VerificationOutput)
