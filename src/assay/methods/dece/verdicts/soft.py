"""Soft verdicts: the hard mode's call with logprobs; each verdict counts the judge's probability
of 1 at its score, or 0 when the evidence checks block a positive verdict."""

from __future__ import annotations

from typing import Any, ClassVar

from assay.core.types import Completion, Unscored
from assay.judge.verdicts import field_label_probs
from assay.methods.dece.halves import Half
from assay.methods.dece.verdicts.base import Judged
from assay.methods.dece.verdicts.hard import Hard


def soften(entries: list[dict[str, Any]], completion: Completion | None, what: str,
           quote_policy: str) -> tuple[float | None, Unscored | None]:
    """Attach ``p_judge`` and ``soft`` to each verdict entry; the mean of ``soft``, or why not."""
    found = field_label_probs(completion, "score", ("0", "1")) if completion is not None else None
    if found is None or [f.greedy for f in found] != [str(e["judge_score"]) for e in entries]:
        return None, Unscored(reason=f"{what}: soft verdicts need the judge's logprobs at every score "
                                     f"(got {0 if found is None else len(found)} of {len(entries)})",
                              raw_output=completion.text if completion is not None else None)
    for entry, probs in zip(entries, found, strict=True):
        blocked = bool(entry["figures_missing"]) or (entry["judge_score"] == 1 and not entry["evidence"])
        entry["p_judge"] = probs.p["1"]
        entry["soft"] = 0.0 if blocked and quote_policy == "require" else probs.p["1"]
    return sum(e["soft"] for e in entries) / len(entries), None


class Soft(Hard):
    name: ClassVar[str] = "soft"
    probabilistic: ClassVar[bool] = True
    logprobs: ClassVar[bool] = True

    def empty_fields(self) -> dict[str, Any]:
        return {"p_judge": None, "soft": 0.0}

    def scored(self, records: list[dict[str, Any]], completion: Completion | None, half: Half,
               quote_policy: str) -> Judged:
        hard = super().scored(records, completion, half, quote_policy)
        score, failed = soften([fields for _, fields in hard.entries], completion, half.what, quote_policy)
        return Judged(hard.entries, score, hard=hard.score,
                      problem=None if failed is None else failed.model_copy(update={"metric": half.metric}))
