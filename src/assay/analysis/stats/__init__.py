"""Statistics used across assay, as thin, checked wrappers over scipy, scikit-learn
and krippendorff: what they compute we do not re-write, we only make the inputs explicit, drop
nothing silently, and record the seed and number of resamples of every resampling.

Degenerate inputs (fewer than 3 pairs, a constant series) give ``None`` with a ``note`` rather
than NaN or a crash, so a meta-evaluation table can say why a cell is empty.

By room: :mod:`.correlation` (with human labels), :mod:`.agreement` (between raters),
:mod:`.paired` (paired tests), :mod:`.calibration`, :mod:`.ratings` (Elo, Bradley–Terry) and
:mod:`.resampling` (bootstrap distributions, percentile intervals); F-beta and the signature
line of a report are here. Every name is importable from ``assay.analysis.stats``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from assay.analysis.stats.agreement import cohen_kappa, krippendorff_alpha
from assay.analysis.stats.calibration import brier, ece
from assay.analysis.stats.correlation import (
    Correlation,
    CorrelationDifference,
    CorrelationResult,
    correlation,
    correlation_difference,
)
from assay.analysis.stats.paired import PairedTest, paired_bootstrap, paired_t, wilcoxon
from assay.analysis.stats.ratings import BradleyTerryResult, Match, bradley_terry, elo_expected, elo_ratings, elo_update

__all__ = ["BradleyTerryResult", "Correlation", "CorrelationDifference", "CorrelationResult", "Match", "PairedTest",
           "Signature", "bradley_terry", "brier", "cohen_kappa", "correlation", "correlation_difference", "ece",
           "elo_expected", "elo_ratings", "elo_update", "f_beta", "krippendorff_alpha", "paired_bootstrap", "paired_t",
           "wilcoxon"]


def f_beta(precision: float, recall: float, beta: float = 2.0) -> float:
    """F-beta of a precision and a recall (beta > 1 weighs recall more; DeCE reports F2).

    Both zero gives 0.0: an answer with no supported element and no satisfied criterion.
    """
    if beta <= 0 or math.isnan(beta):
        raise ValueError(f"beta must be positive, got {beta}")
    for name, value in (("precision", precision), ("recall", recall)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must lie in [0, 1], got {value}")
    b2 = beta * beta
    denominator = b2 * precision + recall
    if denominator == 0:
        return 0.0
    return (1 + b2) * precision * recall / denominator


@dataclass(frozen=True)
class Signature:
    """What a statistical report rests on, printed as one line under every table."""

    method: str
    judge: str
    n: int
    resamples: int
    seed: int
    prompt_sha256: str | None = None
    version: str = field(default="")

    def line(self) -> str:
        from assay._version import __version__

        prompt = (self.prompt_sha256 or "-")[:12]
        return (f"method={self.method}|prompt={prompt}|judge={self.judge}|n={self.n}|"
                f"resamples={self.resamples}|seed={self.seed}|assay={self.version or __version__}")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["line"] = self.line()
        return data
