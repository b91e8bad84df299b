"""LeMAJ's options and the shapes of the judge's answer: the tags' severity, the source and
stringency rules, :class:`LeMAJConfig`, and the Pydantic models of one tagging (§3.2)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SEVERITY = {"incorrect": 3, "irrelevant": 2, "missing": 1, "correct": 0}
"""The rule-based jury's order (App. E.4: red, grey, orange, green — our reading: incorrect,
irrelevant, missing, correct)."""
SOURCE_RULES = {
    "document": ("the document (or the gold answer, when one is given) states it, with the same figures, dates, "
                 "parties and conditions; knowledge from outside the document does not count.",
                 "is in the document (cite the paragraphs it comes from)"),
    "knowledge": ("it is right by the gold answer, when one is given, and by what is well established in the field "
                  "(no document is given; leave \"paragraphs\" empty); a claim you cannot stand behind does not "
                  "count.",
                  "a complete expert answer would give (leave \"paragraphs\" empty)"),
}
STRINGENCY = {
    "lenient": "Be generous: only clearly off-topic assertions are irrelevant.",
    "standard": "Judge relevance as an experienced lawyer answering this client would.",
    "strict": "Be strict: anything the question did not ask for is irrelevant, however true.",
}


class LeMAJConfig(BaseModel):
    """LeMAJ options."""

    model_config = ConfigDict(use_attribute_docstrings=True)
    domain: str = "legal"
    """Domain pack (the expert named in the prompt): legal, general, medical, financial."""
    beta: float = Field(default=1.0, gt=0, allow_inf_nan=False)
    """Relevance = F_beta of precision and recall; beta > 1 weighs omissions more (1: the paper's F1)."""
    stringency: Literal["lenient", "standard", "strict"] = "standard"
    """How strictly relevance is judged (a knob of the prompt)."""
    max_document_chars: int = Field(default=6000, ge=500)
    """Document characters shown to the judge (the embedded judge reads 8,192 tokens by default: n_ctx)."""
    without_document: Literal["refuse", "knowledge"] = "refuse"
    """An item with no document (nor contexts): refuse it, or judge against the gold answer, if any, and
    established knowledge of the field (for open-domain sets; the row says which source was used)."""
    long_documents: Literal["retrieve", "refuse"] = "retrieve"
    """A longer document: show the paragraphs most relevant to the question and answer, or refuse the item."""
    paragraph_chars: int = Field(default=700, ge=100)
    """Longest paragraph shown as one numbered unit (longer ones are cut at sentence ends)."""
    samples: int = Field(default=1, ge=1, le=15)
    """Jurors: >1 samples the judge that many times and aggregates per data point."""
    sample_temperature: float = Field(default=0.7, gt=0, le=2)
    """Temperature of the jurors' samples."""
    aggregate: Literal["majority", "rule", "majority+rule"] = "majority+rule"
    """How the jurors' tags of one data point are combined (majority+rule did best in the paper)."""
    matcher: Literal["embeddings", "lexical"] = "embeddings"
    """How LDPs of different jurors are matched: sentence embeddings, or TF-IDF cosine."""
    match_threshold: float | None = Field(default=None, ge=0, le=1)
    """Similarity at or above which two LDPs are the same (default 0.6 embeddings, 0.3 lexical)."""
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_reason_chars: int = Field(default=160, ge=20)
    max_quote_chars: int = Field(default=300, ge=20)
    """Longest quote of the answer or the document a data point may carry, in characters."""
    max_missing: int = Field(default=5, ge=0, le=20)
    """Most points the answer missed that one call may list."""
    seed: int = 0
    max_reasks: int = Field(default=2, ge=0)
    evidence_check: Literal["require", "flag"] = "require"
    """A point the judge called supported that states a figure its source passage lacks (the
    paragraphs it cites and the shown paragraph closest to it; the gold answer when given):
    "require" counts it incorrect, "flag" only records it."""
    verdicts: Literal["hard", "soft", "direct"] = "hard"
    """"soft": read the judge's probability of "supported" and "relevant" for each point from its
    logprobs and score the expected metrics (the tags stay the greedy ones); needs a backend
    with logprobs (llamacpp with logits_all=true, openai). "direct": the points are still listed
    by the tagging call, then each point's two checks are asked on their own (the document first,
    so the calls share their prefix), each label read from one forward pass; the tag follows from
    those answers (unsupported first), and the figure and name checks apply as with hard verdicts."""
    top_logprobs: int = Field(default=5, ge=2, le=20)


class _Point(BaseModel):
    quote: str
    reason: str
    paragraphs: list[int] = Field(default_factory=list)
    supported: Literal["yes", "no"]
    relevant: Literal["yes", "no"]

    @property
    def tag(self) -> str:
        """§3.2's order of checks: an unsupported point is incorrect whatever its relevance."""
        if self.supported == "no":
            return "incorrect"
        return "correct" if self.relevant == "yes" else "irrelevant"


class _Sentence(BaseModel):
    sentence: int
    points: list[_Point]


class _Missing(BaseModel):
    text: str
    paragraphs: list[int] = Field(default_factory=list)


class Tagging(BaseModel):
    sentences: list[_Sentence]
    missing: list[_Missing] = Field(default_factory=list)


# --- text geometry ---------------------------------------------------------------------------------
