"""The ``geval`` baseline: G-Eval-style precision and recall 1–5, weighted by the judge's
probabilities over the digits when it gives logprobs; reported mapped to [0, 1]."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from assay.analysis.stats import f_beta
from assay.core.method import CallEstimate, ItemResult
from assay.core.registry import register_method
from assay.core.types import Completion, Item, Unscored
from assay.judge.prompts import fence
from assay.judge.runner import JudgeClient
from assay.judge.structured import generate_structured
from assay.judge.verdicts import field_label_probs
from assay.methods.baselines.base import BaselineConfig, BaselineMethod, estimated_tokens


class GEvalConfig(BaselineConfig):
    weighting: Literal["auto", "logprobs", "none"] = "auto"
    """"auto": probability-weighted when the backend returns logprobs, else the generated digit."""
    beta: float = Field(default=2.0, gt=0)


class GEvalOutput(BaseModel):
    precision: Literal[1, 2, 3, 4, 5]
    recall: Literal[1, 2, 3, 4, 5]
    reason: str


def weighted_digit(completion: Completion, field: str) -> tuple[float, dict[str, float]] | None:
    """G-Eval weighting: the expected score over the digits 1–5 at the position where
    ``field``'s value was generated, from that token's top logprobs (renormalised over 1–5;
    :func:`assay.judge.verdicts.field_label_probs`). None when the completion has no logprobs there."""
    found = field_label_probs(completion, field, ("1", "2", "3", "4", "5"))
    if not found:
        return None
    dist = {d: p for d, p in found[0].p.items() if p > 0}
    return sum(int(d) * p for d, p in dist.items()), dist


@register_method
class GEval(BaselineMethod):
    """Baseline: G-Eval-style precision and recall 1–5 (logprob-weighted when available)."""

    name: ClassVar[str] = "geval"
    metrics: ClassVar[tuple[str, ...]] = ("precision", "recall", "f_beta")
    config_model: ClassVar[type[BaseModel] | None] = GEvalConfig
    cli_main: ClassVar[tuple[str, ...] | None] = ('domain', 'weighting', 'beta')
    primary_metric: ClassVar[str | None] = "f_beta"
    prompt_names: ClassVar[tuple[str, ...]] = ("geval",)
    answer_fence: ClassVar[str] = "sealed-sha256-12"
    config: GEvalConfig

    def __init__(self, config: GEvalConfig | None = None) -> None:
        super().__init__(config or GEvalConfig())

    def render(self, item: Item) -> list[Any]:
        return self.prompts["geval"].render(expert=str(self.domain["expert"]), query=item.query.strip(),
                                            reference=self._gold(item),
                                            answer=fence("answer", item.response, sealed=True))

    @staticmethod
    def schema() -> dict[str, Any]:
        return {"type": "object", "additionalProperties": False, "required": ["precision", "recall", "reason"],
                "properties": {"precision": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
                               "recall": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
                               "reason": {"type": "string", "minLength": 1, "maxLength": 200}}}

    async def evaluate(self, item: Item, client: JudgeClient) -> ItemResult:
        weighting = self.config.weighting
        use_logprobs = weighting == "logprobs" or (weighting == "auto" and client.backend.capabilities.logprobs)
        extra = {"logprobs": True, "top_logprobs": 5} if use_logprobs else {}
        out = await generate_structured(client, self.render(item), GEvalOutput,
                                        self._config(96, self.schema(), **extra),
                                        max_reasks=self.config.max_reasks, metric="f_beta")
        if out.value is None:
            assert out.unscored is not None
            return ItemResult(scores={"precision": None, "recall": None, "f_beta": None},
                              unscored=[out.unscored.model_copy(update={"metric": m})
                                        for m in ("precision", "recall", "f_beta")], call_keys=out.keys)
        details: dict[str, Any] = {"reason": out.value.reason, "weighting": "generated digit"}
        raw = {"precision": float(out.value.precision), "recall": float(out.value.recall)}
        if use_logprobs:
            for axis in ("precision", "recall"):
                weighted = weighted_digit(out.completion, axis) if out.completion is not None else None
                if weighted is None:  # asked for logprobs and got none: fail closed, do not fall back
                    reason = f"the backend returned no logprobs at the {axis} score"
                    return ItemResult(scores={"precision": None, "recall": None, "f_beta": None},
                                      unscored=[Unscored(reason=reason, raw_output=out.completion.text
                                                         if out.completion else None, metric=m)
                                                for m in ("precision", "recall", "f_beta")], call_keys=out.keys)
                raw[axis], details[f"{axis}_distribution"] = weighted
            details["weighting"] = "logprobs"
        details["precision_1to5"], details["recall_1to5"] = raw["precision"], raw["recall"]
        precision, recall = (raw["precision"] - 1) / 4, (raw["recall"] - 1) / 4
        return ItemResult(scores={"precision": precision, "recall": recall,
                                  "f_beta": f_beta(precision, recall, self.config.beta)},
                          details=details, call_keys=out.keys)

    def estimate(self, items: list[Item]) -> CallEstimate:
        return sum((CallEstimate(calls=1, prompt_tokens=estimated_tokens(self.render(i)), completion_tokens=60)
                    for i in items), CallEstimate())

