"""The ``pointwise`` baseline: one 0–4 grade against the gold answer with the DeCE paper's rubric,
its reasoning stages and issue labels (hard, soft or direct verdicts)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from assay.core.method import CallEstimate, ItemResult
from assay.core.registry import register_method
from assay.core.types import Item, Unscored
from assay.judge.direct import ask
from assay.judge.prompts import fence, load_prompt
from assay.judge.runner import JudgeClient
from assay.judge.structured import generate_structured
from assay.judge.verdicts import field_label_probs
from assay.methods.baselines.base import BaselineConfig, BaselineMethod, estimated_tokens

ISSUE_LABELS = ("Incorrect", "Misattribution", "Missing information", "Citation needed", "Irrelevant",
                "Wrong jurisdiction", "Repetitive")
"""The issue labels of DeCE App. C.2, phase 5."""


class PointwiseConfig(BaselineConfig):
    """Pointwise baseline options."""

    reference_free: bool = False
    """Grade each answer against the question alone (no gold answer; a reference, if given, is
    not shown). For sets without references, e.g. PandaLM's pairs, where the scores of a pair
    give a verdict."""
    verdicts: Literal["hard", "soft", "direct"] = "hard"
    """"soft": the grade is the expected grade over 0–4 under the judge's probabilities at its
    score (read from the logprobs, as G-Eval weighs 1–5); the greedy grade stays in
    ``pointwise_hard``. "direct": the grade alone is asked for, with no written reasoning, and its
    probabilities read from one forward pass (a judge that gives label probabilities); the
    expected grade is the score, the most probable one ``pointwise_hard``."""
    top_logprobs: int = Field(default=5, ge=2, le=20)
    """Candidates read at the score (soft verdicts)."""


GRADES = ("0", "1", "2", "3", "4")


class PointwiseOutput(BaseModel):
    reasoning: str
    issues: list[Literal[ISSUE_LABELS]]  # type: ignore[valid-type]
    score: Literal[0, 1, 2, 3, 4]
    justification: str


@register_method
class Pointwise(BaselineMethod):
    """Baseline: pointwise 0–4 grade against the reference (the DeCE paper's rubric)."""

    name: ClassVar[str] = "pointwise"
    metrics: ClassVar[tuple[str, ...]] = ("pointwise",)
    metric_ranges: ClassVar[dict[str, tuple[float, float]]] = {"pointwise": (0.0, 4.0)}
    config_model: ClassVar[type[BaseModel] | None] = PointwiseConfig
    cli_main: ClassVar[tuple[str, ...] | None] = ('domain', 'reference_free', 'verdicts')
    primary_metric: ClassVar[str | None] = "pointwise"
    prompt_names: ClassVar[tuple[str, ...]] = ("pointwise",)
    answer_fence: ClassVar[str] = "sealed-sha256-12"
    added_options: ClassVar[dict[str, Any]] = {"reference_free": False, "verdicts": "hard", "top_logprobs": 5}
    config: PointwiseConfig

    def __init__(self, config: PointwiseConfig | None = None) -> None:
        super().__init__(config or PointwiseConfig())
        direct = "_direct" if self.config.verdicts == "direct" else ""
        if self.config.reference_free:
            self.prompts = {"pointwise_noref": load_prompt(f"prompts/pointwise_noref{direct}", package=__package__)}
        elif direct:
            self.prompts = {"pointwise": load_prompt("prompts/pointwise_direct", package=__package__)}

    def check_item(self, item: Item) -> str | None:
        return None if self.config.reference_free else super().check_item(item)

    def render(self, item: Item) -> list[Any]:
        labels = {} if self.config.verdicts == "direct" else {"issue_labels": ", ".join(ISSUE_LABELS)}
        if self.config.reference_free:
            return self.prompts["pointwise_noref"].render(
                expert=str(self.domain["expert"]), query=item.query.strip(),
                answer=fence("answer", item.response, sealed=True), **labels)
        return self.prompts["pointwise"].render(
            expert=str(self.domain["expert"]), query=item.query.strip(),
            reference=self._gold(item), answer=fence("answer", item.response, sealed=True), **labels)

    def schema(self) -> dict[str, Any]:
        return {"type": "object", "additionalProperties": False,
                "required": ["reasoning", "issues", "score", "justification"],
                "properties": {"reasoning": {"type": "string", "minLength": 1,
                                             "maxLength": self.config.max_reasoning_chars},
                               "issues": {"type": "array", "maxItems": len(ISSUE_LABELS),
                                          "items": {"type": "string", "enum": list(ISSUE_LABELS)}},
                               "score": {"type": "integer", "enum": [0, 1, 2, 3, 4]},
                               "justification": {"type": "string", "minLength": 1, "maxLength": 160}}}

    async def _evaluate_direct(self, item: Item, client: JudgeClient) -> ItemResult:
        probs, key, problem = await ask(client, self.render(item), GRADES, metric="pointwise")
        keys = [key] if key else []
        if probs is None:
            assert problem is not None
            return ItemResult(scores={"pointwise": None}, unscored=[problem], call_keys=keys)
        best = max(probs, key=lambda g: probs[g])
        return ItemResult(scores={"pointwise": sum(int(g) * p for g, p in probs.items())}, call_keys=keys,
                          details={"verdicts": "direct", "pointwise_hard": float(best), "score_distribution": probs})

    async def evaluate(self, item: Item, client: JudgeClient) -> ItemResult:
        if self.config.verdicts == "direct":
            return await self._evaluate_direct(item, client)
        soft = self.config.verdicts == "soft"
        extra = {"logprobs": True, "top_logprobs": self.config.top_logprobs} if soft else {}
        out = await generate_structured(client, self.render(item), PointwiseOutput,
                                        self._config(64 + (self.config.max_reasoning_chars + 160) // 3 + 40,
                                                     self.schema(), **extra),
                                        max_reasks=self.config.max_reasks, metric="pointwise")
        if out.value is None:
            assert out.unscored is not None
            return ItemResult(scores={"pointwise": None}, unscored=[out.unscored], call_keys=out.keys)
        v = out.value
        details: dict[str, Any] = {"issues": list(dict.fromkeys(v.issues)), "reasoning": v.reasoning,
                                   "justification": v.justification}
        score = float(v.score)
        if soft:
            found = field_label_probs(out.completion, "score", GRADES) if out.completion is not None else None
            if not found or len(found) != 1 or found[0].greedy != str(v.score):
                reason = "soft verdicts need the judge's logprobs at its score"
                return ItemResult(scores={"pointwise": None}, details=details, call_keys=out.keys,
                                  unscored=[Unscored(reason=reason, metric="pointwise", raw_output=out.completion.text
                                                     if out.completion is not None else None)])
            details["pointwise_hard"], details["score_distribution"] = score, dict(found[0].p)
            details["verdicts"] = "soft"
            score = sum(int(g) * p for g, p in found[0].p.items())
        return ItemResult(scores={"pointwise": score}, call_keys=out.keys, details=details)

    def estimate(self, items: list[Item]) -> CallEstimate:
        generated = 0 if self.config.verdicts == "direct" else 180
        return sum((CallEstimate(calls=1, prompt_tokens=estimated_tokens(self.render(i)), completion_tokens=generated)
                    for i in items), CallEstimate())
