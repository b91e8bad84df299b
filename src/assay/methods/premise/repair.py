"""PReMISE repair (PReMISE, arXiv:2605.30803 §3.3, App. C). Preference-rank selection (``--mode pref``).

**Preference-rank selection** (§3.3): every criterion scores the preference pairs with the
pairwise judge (F.4, the same calls as the audit's, so a store that audited the rubric answers
them from its cache), on the pairs whose request it applies to (F.11). A criterion is kept when
the preferred answer scores higher (oriented score > 5) on at least ``eta`` of those pairs; the
rest are dropped, never rewritten. The kept ones are re-ordered by that share (ties keep the
input order), so the result is a strict subset and re-ordering of the input. A criterion that
applies to no pair, or whose every score stayed unparseable, has no evidence and is dropped with
that reason. The paper does not say what counts as "applicable" beyond its gate; we use the
F.11 applicability judge, which also reads a criterion's own ``gate`` when it has one.

The reliability-constrained refinement (Algorithm 2, ``--mode vfr``) is in
:mod:`assay.methods.premise.refine`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from assay.judge.runner import JudgeClient
from assay.methods.premise.audit import Audit
from assay.methods.premise.files import PreferencePair, RubricSet


class PrefRepairConfig(BaseModel):
    eta: float = Field(default=0.6, ge=0.0, le=1.0)


async def preference_rank_selection(rubric: RubricSet, pairs: list[PreferencePair], client: JudgeClient,
                                    auditor: Audit, config: PrefRepairConfig | None = None
                                    ) -> tuple[RubricSet, list[dict[str, Any]]]:
    """Return the repaired rubric and one decision per input criterion (kept or dropped, why, the
    share and the counts it rests on)."""
    cfg = config or PrefRepairConfig()
    judge = auditor.jurors(client)[0]
    decisions: list[dict[str, Any]] = []
    for position, criterion in enumerate(rubric.criteria):
        applicable = unparsed = wins = ties = 0
        for pair in pairs:
            applies = await auditor.applies(criterion, pair.prompt, judge)
            if not applies:
                unparsed += applies is None
                continue
            got = await auditor.pair_score(criterion, pair, judge)
            if got is None:
                unparsed += 1
                continue
            applicable += 1
            wins += got["oriented"] > 5
            ties += got["oriented"] == 5
        share = wins / applicable if applicable else None
        keep = share is not None and share >= cfg.eta
        reason = ("no applicable pair with a score" if share is None else
                  f"preferred answer higher on {wins}/{applicable} ≥ η {cfg.eta}" if keep else
                  f"preferred answer higher on {wins}/{applicable} < η {cfg.eta}")
        decisions.append({"id": criterion.id, "position": position, "applicable_pairs": applicable, "wins": wins,
                          "ties": ties, "unparsed": unparsed, "share": share, "kept": keep, "reason": reason})
    kept = sorted((d for d in decisions if d["kept"]), key=lambda d: (-d["share"], d["position"]))
    by_id = {c.id: c for c in rubric.criteria}
    criteria = []
    for d in kept:
        criterion = by_id[d["id"]].model_copy(deep=True)
        criterion.extra = {**criterion.extra, "pref_share": round(d["share"], 4), "pref_pairs": d["applicable_pairs"]}
        criteria.append(criterion)
    provenance = {**rubric.provenance, "repair": {"mode": "pref", "eta": cfg.eta, "pairs": len(pairs),
                                                  "kept": len(criteria), "of": len(rubric.criteria)}}
    return RubricSet(criteria=criteria, source=f"{rubric.source} + pref repair", provenance=provenance), decisions
