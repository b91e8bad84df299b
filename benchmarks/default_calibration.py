"""The embedded judge's default calibration: fitted here, shipped in the package (issue 47).

DeCE's element question in its direct form ("is this statement supported by the reference?") asked
of ExpertQA claims with their cited evidence as the reference — the claims, prompt and judge calls of
``calibration_expertqa.py`` (same store: cached calls are re-used). Positive = the expert marked the
claim completely supported. Then:

1. ``assay.analysis.align.fit_calibration``: isotonic vs Platt by out-of-fold log loss (GroupKFold by
   question, 5 folds), the chosen map refitted on all claims; ECE, Brier, AUROC, log loss with
   bootstrap CIs over questions, before and after (after = out-of-fold only).
2. The three shown states: a calibrated P at or above ``yes_from`` is shown ✓, at or below ``no_to``
   ✗, anything between "uncertain ?". Each threshold is chosen on out-of-fold calibrated
   probabilities as the widest band in which the shown mark agrees with the experts at least 80% of
   the time (at least 10 claims in the band; none if no band reaches it); the share of claims each
   band covers and its agreement are reported.
3. Writes the map with its provenance (data, n, figures, prompt sha256, model sha256, bands) to
   ``src/assay/calibration/embedded_default.json`` (``--write``) and everything, each claim's raw
   and out-of-fold P included, to ``results/default_calibration.json``.

Usage: python benchmarks/default_calibration.py --claims 400 --write
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.model_selection import GroupKFold

from assay.analysis.align import calibrate, fit_calibration, fit_calibrator
from assay.judge.model import MODEL_SHA256
from assay.methods.dece import DeCE, DeCEConfig

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))
from benchmarks.calibration_expertqa import DATA, scored_sample  # noqa: E402  (the same claims and calls)

SHIPPED = HERE.parent / "src" / "assay" / "judge" / "calibration" / "embedded_default.json"
AGREEMENT = 0.80
MIN_BAND = 10


def out_of_fold(kind: str, p: np.ndarray, y: np.ndarray, groups: list[str], folds: int) -> np.ndarray:
    """Each claim's P from a map fitted without its question (the folds of fit_calibration)."""
    pred = np.empty_like(p)
    k = max(2, min(folds, len(set(groups))))
    for train, test in GroupKFold(n_splits=k).split(np.arange(len(groups)), groups=groups):
        pred[test] = calibrate(fit_calibrator(kind, p[train], y[train]), p[test])
    return pred


def bands(q: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """The widest ✓ band [t, 1] and ✗ band [0, t] whose shown mark agrees with the labels >= 80%."""
    yes_from = no_to = None
    for t in sorted(set(np.round(q, 3).tolist())):  # lowest threshold first: the widest band that holds
        inside = q >= t
        if inside.sum() >= MIN_BAND and y[inside].mean() >= AGREEMENT:
            yes_from = t
            break
    for t in sorted(set(np.round(q, 3).tolist()), reverse=True):
        inside = q <= t
        if inside.sum() >= MIN_BAND and (1 - y[inside]).mean() >= AGREEMENT:
            no_to = t
            break

    def band(inside: np.ndarray, positive: bool) -> dict[str, Any]:
        n = int(inside.sum())
        agree = None if n == 0 else float((y[inside] if positive else 1 - y[inside]).mean())
        return {"share": n / len(y), "n": n, "agreement": agree}

    yes_mask = q >= yes_from if yes_from is not None else np.zeros_like(q, dtype=bool)
    no_mask = q <= no_to if no_to is not None else np.zeros_like(q, dtype=bool)
    unsure = ~(yes_mask | no_mask)
    return {"yes_from": yes_from, "no_to": no_to, "rule": f"widest band agreeing >= {AGREEMENT:.0%}, >= {MIN_BAND} "
            "claims, on out-of-fold calibrated P", "supported": band(yes_mask, True),
            "not_supported": band(no_mask, False),
            "uncertain": {"share": float(unsure.mean()), "n": int(unsure.sum()),
                          "positive_share": None if not unsure.any() else float(y[unsure].mean())}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--claims", type=int, default=400)
    parser.add_argument("--chars", type=int, default=1200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--store", type=Path, default=HERE / "results" / "calibration_expertqa.db")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "default_calibration.json")
    parser.add_argument("--write", action="store_true", help=f"write the shipped map ({SHIPPED.name})")
    args = parser.parse_args()
    sample, scored, wall = scored_sample(args.data, args.chars, args.claims, args.seed, args.store)
    p = np.array([s for s, _ in scored])
    y = np.array([int(c["support"] == "Complete") for _, c in scored], dtype=float)
    groups = [c["id"].split("|", 1)[0] for _, c in scored]
    fitted = fit_calibration(p, y, groups, folds=args.folds, resamples=args.resamples, seed=args.seed)
    q = out_of_fold(fitted["chosen"], p, y, groups, args.folds)
    shown = bands(q, y)
    raw_shown = bands(p, y)  # the same rule on the raw P, for comparison
    method = DeCE(DeCEConfig(verdicts="direct"))
    prompt = method.prompts["element_direct"]
    provenance = {
        "judge": "llamacpp/default", "model": "Qwen2.5-Coder-1.5B-Instruct Q4_K_M", "model_sha256": MODEL_SHA256,
        "question": "DeCE element_direct: is this statement supported by the reference?",
        "prompts": {"dece/element_direct": prompt.sha256},
        "data": "ExpertQA (Malaviya et al., arXiv:2309.07852), expert per-claim support labels; public dev split",
        "positive": "support Complete (Incomplete, Partial, Missing negative; N/A and claims without evidence "
                    "left out)",
        "claims": len(scored), "questions": len(set(groups)), "seed": args.seed, "evidence_chars": args.chars,
        "folds": args.folds, "cross_validated": {k: fitted[k] for k in ("before", "after_cv", "cv_log_loss")},
    }
    shipped = {"format": 1, "map": fitted["map"], "bands": {"yes_from": shown["yes_from"], "no_to": shown["no_to"]},
               "band_figures": shown, "provenance": provenance}
    out = {"shipped": shipped, "raw_bands": raw_shown, "wall_s": wall, "unscored": len(sample) - len(scored),
           "claims": [{"id": c["id"], "field": c["field"], "support": c["support"], "p_raw": float(pi),
                       "p_out_of_fold": float(qi)} for (_, c), pi, qi in zip(scored, p, q, strict=True)]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1, allow_nan=False) + "\n")
    if args.write:
        SHIPPED.parent.mkdir(parents=True, exist_ok=True)
        SHIPPED.write_text(json.dumps(shipped, indent=1, allow_nan=False) + "\n")
    b, a = fitted["before"], fitted["after_cv"]
    print(f"{len(scored)} claims over {len(set(groups))} questions, base rate {b['base_rate']:.2f}; {fitted['chosen']}")
    for name in ("ece", "brier", "auroc"):
        print(f"  {name}: {b[name]:.3f} {b[name + '_ci']} -> {a[name]:.3f} {a[name + '_ci']}")
    for key in ("supported", "not_supported", "uncertain"):
        print(f"  {key}: {shown[key]}")
    print(f"  thresholds: ✓ from {shown['yes_from']}, ✗ up to {shown['no_to']} (raw P: {raw_shown['yes_from']}, "
          f"{raw_shown['no_to']}); {wall:.0f} s of judge calls")


if __name__ == "__main__":
    main()
