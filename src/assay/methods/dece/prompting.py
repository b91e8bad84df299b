"""DeCE's prompts: which ones a configuration uses (their hashes go into the run id), and how
each is rendered from an item (I/O-free)."""

from __future__ import annotations

from typing import Any

from assay.core.types import Item
from assay.judge.direct import lettered
from assay.judge.prompts import Prompt, fence, load_prompt, numbered
from assay.judge.text import numbered_text
from assay.methods.dece.halves import PRECISION, RECALL, Half

PROMPTS = ("prompts/criteria_extraction", "prompts/criteria_satisfaction", "prompts/element_extraction",
           "prompts/element_verification")
# reasoning=False: the two verdict prompts in brief form (no written reason per verdict)
BRIEF_PROMPTS = ("prompts/criteria_satisfaction_brief", "prompts/element_verification_brief")


def load_prompts(reasoning: bool, verdicts: str) -> dict[str, Prompt]:
    """The prompts keyed by role (the brief forms stand in for the verdict prompts when
    ``reasoning`` is off; direct verdicts use the one-question forms instead)."""
    names = PROMPTS if reasoning else (PROMPTS[0], BRIEF_PROMPTS[0], PROMPTS[2], BRIEF_PROMPTS[1])
    prompts = {role.split("/")[1]: load_prompt(name, package=__package__)
               for role, name in zip(PROMPTS, names, strict=True)}
    if verdicts == "direct":
        del prompts["criteria_satisfaction"], prompts["element_verification"]
        prompts.update(criterion_direct=load_prompt("prompts/criterion_direct", package=__package__),
                       element_direct=load_prompt("prompts/element_direct", package=__package__))
    return prompts


class DeCEPrompts:
    """Rendering of DeCE's prompts from ``self.prompts`` and the domain pack ``self.domain``."""

    prompts: dict[str, Prompt]
    domain: dict[str, Any]

    def _expert(self) -> str:
        return str(self.domain["expert"])

    def _categories(self, key: str) -> str:
        values = self.domain.get(key) or self.domain["criteria_categories"]
        return "\n".join(f"   - {v}" for v in values)

    def render_criteria_extraction(self, item: Item) -> list[Any]:
        assert item.reference is not None
        reference = fence("reference", item.reference.full_text())
        return self.prompts["criteria_extraction"].render(
            expert=self._expert(), categories=self._categories("criteria_categories"),
            query=item.query.strip(), reference=reference)

    def render_element_extraction(self, item: Item) -> list[Any]:
        return self.prompts["element_extraction"].render(
            expert=self._expert(), categories=self._categories("element_categories"),
            query=item.query.strip(), answer=fence("answer", item.response))

    def render_verdicts(self, half: Half, item: Item, statements: list[str]) -> list[Any]:
        """All of a half's verdicts in one call: the statements numbered, the judged text as
        numbered sentences to cite."""
        return self.prompts[half.verdict_prompt].render(
            expert=self._expert(), rules=numbered(self.domain[half.rules]),
            **{half.plural: numbered(statements),
               half.source: fence(half.source, numbered_text(half.judged_text(item)))})

    def render_satisfaction(self, item: Item, criteria: list[str]) -> list[Any]:
        return self.render_verdicts(RECALL, item, criteria)

    def render_verification(self, item: Item, elements: list[str]) -> list[Any]:
        return self.render_verdicts(PRECISION, item, elements)

    def render_direct(self, half: Half, sentences: list[str], statement: str) -> list[Any]:
        """One statement's question, the judged text first (as lettered sentences), so the calls
        of one answer share their prefix."""
        return self.prompts[half.direct_prompt].render(
            expert=self._expert(), rules=numbered(self.domain[half.rules]),
            **{half.source: fence(half.source, lettered(sentences)), half.direct_field: statement})
