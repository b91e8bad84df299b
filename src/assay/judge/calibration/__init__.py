"""The embedded judge's default calibration: what its "yes" means before anyone labels anything.

A small judge's P(yes) is not a probability of being right: on ExpertQA's expert-labelled claims the
embedded judge gave supported claims P(yes) between 0.2 and 0.6 while three in four were supported.
A Platt map (logistic regression on logit P) fitted on those public dev claims, with cross-validated
figures, ships in ``embedded_default.json`` beside this file (``benchmarks/default_calibration.py``
writes it). It is applied only where it was measured: the same model file (sha256) and the same
question (the prompt's sha256) — DeCE's "is this statement supported by the reference?" element
question in its direct form. Any other judge or prompt gets no calibrated value (``p_calibrated``
None), never a map measured on something else.

Calibration cannot add what the judge lacks: it fixes the level of the probabilities, not how well
they tell supported from unsupported claims. So a calibrated verdict is *shown* in three states —
supported ✓, not supported ✗, or uncertain ? — with the ✓ and ✗ bands chosen on held-out folds so
that a shown mark agreed with the experts at least 80% of the time; the band figures ship with the
map. Scores (precision, recall, F-beta) count probabilities, calibrated where the map applies.
A team's own alignment file (``assay align``) replaces the default on display; ``--calibration
none`` shows the raw reading.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

SHIPPED = "embedded_default.json"
UNSURE = "?"


@dataclass(frozen=True)
class Calibration:
    """A fitted map with the judge and prompts it was measured on, and its shown bands."""

    slope: float
    intercept: float
    yes_from: float | None
    no_to: float | None
    model_sha256: str
    prompts: dict[str, str]
    name: str
    provenance: dict[str, Any]

    def fits(self, identity: dict[str, Any], prompt_sha256: str) -> bool:
        return identity.get("model_sha256") == self.model_sha256 and prompt_sha256 in self.prompts.values()

    def __call__(self, p: float) -> float:
        q = min(max(float(p), 1e-6), 1 - 1e-6)
        z = self.slope * math.log(q / (1 - q)) + self.intercept
        return 1.0 / (1.0 + math.exp(-z))

    def mark(self, p_calibrated: float) -> str:
        """✓, ✗ or ? for a calibrated probability, by the bands chosen on held-out folds."""
        if self.yes_from is not None and p_calibrated >= self.yes_from:
            return "✓"
        if self.no_to is not None and p_calibrated <= self.no_to:
            return "✗"
        return UNSURE


def _finite(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{SHIPPED}: {what} must be a finite number, got {value!r}")
    return float(value)


@lru_cache(maxsize=1)
def default() -> Calibration | None:
    """The shipped map, or None where the package carries none."""
    try:
        text = resources.files("assay.judge.calibration").joinpath(SHIPPED).read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return None
    data = json.loads(text)
    mapping, bands, prov = data["map"], data["bands"], data["provenance"]
    if mapping.get("kind") != "platt":
        raise ValueError(f"{SHIPPED}: only a Platt map is shipped, got {mapping.get('kind')!r}")
    return Calibration(slope=_finite(mapping["slope"], "map.slope"), intercept=_finite(mapping["intercept"],
                                                                                        "map.intercept"),
                       yes_from=None if bands.get("yes_from") is None else _finite(bands["yes_from"], "yes_from"),
                       no_to=None if bands.get("no_to") is None else _finite(bands["no_to"], "no_to"),
                       model_sha256=str(prov["model_sha256"]), prompts=dict(prov["prompts"]),
                       name=f"assay default ({prov['claims']} ExpertQA claims)", provenance=prov)


def shipped_sha256() -> str | None:
    """The shipped map file's sha256 (part of a calibrated run's manifest), or None without one."""
    import hashlib

    try:
        data = resources.files("assay.judge.calibration").joinpath(SHIPPED).read_bytes()
    except (FileNotFoundError, OSError):
        return None
    return hashlib.sha256(data).hexdigest()


def raw_mark(p: float) -> str:
    """A raw probability's mark: ✓ from 0.5 (no bands were measured for it)."""
    return "✓" if p >= 0.5 else "✗"
