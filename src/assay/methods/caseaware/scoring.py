"""The case-aware judge's scale: its eight metrics, the severity bands, the weight profiles and
S_final = Σ w_i s_i (Eq. 1), with weights validated to sum to 1."""

from __future__ import annotations

import math
from pathlib import Path

from assay.core.errors import ConfigError

METRICS = ("hallucination", "retrieval_correctness", "context_sufficiency", "answer_helpfulness",
           "answer_type_fit", "identifier_integrity", "case_issue_identification", "case_resolution_alignment")
"""The eight metrics in the order of §5.2 (Table 5 field stems)."""

BANDS: dict[str, tuple[float, float]] = {"severe": (0.00, 0.30), "moderate": (0.31, 0.60),
                                         "minor": (0.61, 0.85), "none": (0.86, 1.00)}
"""App. B.1 severity bands."""

MIDPOINTS = {band: round((lo + hi) / 2, 3) for band, (lo, hi) in BANDS.items()}
"""A band's score when soft verdicts weigh a band the judge did not write."""

_DEFAULT = (0.20, 0.15, 0.10, 0.15, 0.10, 0.10, 0.10, 0.10)


def _retrieval_heavy() -> dict[str, float]:
    fixed = {"retrieval_correctness": 0.20, "context_sufficiency": 0.20}
    rest = {m: w for m, w in zip(METRICS, _DEFAULT, strict=True) if m not in fixed}
    scale = (1.0 - sum(fixed.values())) / sum(rest.values())
    weights = {m: fixed.get(m, rest.get(m, 0.0) * scale) for m in METRICS}
    return weights


PROFILES: dict[str, dict[str, float]] = {
    "default": dict(zip(METRICS, _DEFAULT, strict=True)),
    "uniform": {m: 1 / 8 for m in METRICS},
    "retrieval-heavy": _retrieval_heavy(),
}


def validate_weights(weights: dict[str, float], source: str = "weights") -> dict[str, float]:
    """Exactly the eight metrics, each ≥ 0, summing to 1 (±1e-6)."""
    unknown = sorted(set(weights) - set(METRICS))
    missing = [m for m in METRICS if m not in weights]
    if unknown:
        raise ConfigError(f"{source}: unknown metric(s) {', '.join(unknown)}; the metrics are {', '.join(METRICS)}")
    if missing:
        raise ConfigError(f"{source}: no weight for {', '.join(missing)}")
    for metric, value in weights.items():
        if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
            raise ConfigError(f"{source}: weight of {metric} must be a non-negative number, got {value!r}")
    total = sum(weights.values())
    if abs(total - 1.0) > 1e-6:
        raise ConfigError(f"{source}: weights sum to {total:.6g}, not 1")
    return {m: float(weights[m]) for m in METRICS}


def resolve_weights(spec: str | Path | dict[str, float]) -> tuple[str, dict[str, float]]:
    """A profile name, a TOML file (top-level keys or a ``[weights]`` table), or a mapping."""
    if isinstance(spec, dict):
        return "custom", validate_weights(spec)
    if str(spec) in PROFILES:
        return str(spec), dict(PROFILES[str(spec)])
    path = Path(spec)
    if path.suffix == ".toml" or path.is_file():
        if not path.is_file():
            raise ConfigError(f"weights file not found: {path}")
        from assay.core._load import load_toml

        data = load_toml(path)
        table = data.get("weights", data)
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: field 'weights' must be a table of metric = weight, got "
                              f"{type(table).__name__}")
        return f"file:{path.name}", validate_weights(dict(table), str(path))
    raise ConfigError(f"unknown weight profile {str(spec)!r}; use {', '.join(PROFILES)} or a .toml file")


def band_of(score: float) -> str | None:
    for name, (lo, hi) in BANDS.items():
        if lo - 1e-9 <= score <= hi + 1e-9:
            return name
    return None


def s_final(scores: dict[str, float | None], weights: dict[str, float]) -> float | None:
    """Σ w_i s_i over the eight metrics; None if any metric is unscored."""
    values = [scores.get(m) for m in METRICS]
    if any(v is None for v in values):
        return None
    return float(sum(weights[m] * float(v) for m, v in zip(METRICS, values, strict=True) if v is not None))
