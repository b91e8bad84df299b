"""Baseline judges the DeCE paper compares against (§3.2, Table 2), on the same backends:

* ``pointwise``: one 0–4 grade against the gold answer with the App. C.1 rubric, the six
  reasoning stages of App. C.2 and its issue labels (App. C.3 template). Metric ``pointwise``
  on the paper's 0–4 GPA scale.
* ``geval``: G-Eval-style precision and recall, each 1–5. With a backend that returns
  logprobs, each axis is the probability-weighted mean over the digits 1–5 at the position
  of its score (G-Eval's weighting); otherwise the generated digit. Reported mapped to [0, 1]
  as (s − 1) / 4 so that ``f_beta`` (F2, like DeCE) is defined; the 1–5 values are in the
  details.
* ``claims``: RAGChecker-style claim-level precision and recall. Claims are extracted from the
  answer and from the gold answer; the answer's claims are checked against the gold answer
  (precision = entailed / answer claims) and the gold answer's claims against the answer
  (recall = entailed / gold claims); F1 as RAGChecker reports. With ``verdicts="soft"`` (issue
  17) each checking call asks for logprobs and a claim counts its probability of "entailment"
  (renormalised over the three labels at the verdict's value, :func:`assay.judge.verdicts.field_label_probs`)
  instead of 0/1; the greedy metrics of the same calls stay in the details as ``precision_hard`` /
  ``recall_hard`` / ``f1_hard``, every claim keeps its three probabilities, and a completion
  without logprobs at every verdict makes the metric Unscored (never hard).

Readings we chose: the whole reference (Required + Helpful Information) is the gold text for
every baseline, as for DeCE verification; an answer or reference without extractable claims
leaves that metric Unscored, never 0.
"""

from __future__ import annotations

from assay.methods.baselines.base import BaselineConfig
from assay.methods.baselines.claims import LABELS, CheckingOutput, Claims, ClaimsConfig, ClaimsOutput, ClaimVerdict
from assay.methods.baselines.geval import GEval, GEvalConfig, GEvalOutput, weighted_digit
from assay.methods.baselines.pointwise import GRADES, ISSUE_LABELS, Pointwise, PointwiseConfig, PointwiseOutput

__all__ = ["GRADES", "ISSUE_LABELS", "LABELS", "BaselineConfig", "CheckingOutput", "ClaimVerdict", "Claims",
           "ClaimsConfig", "ClaimsOutput", "GEval", "GEvalConfig", "GEvalOutput", "Pointwise", "PointwiseConfig",
           "PointwiseOutput", "weighted_digit"]
