"""Calibration of DeCE's direct P(yes) against ExpertQA's claim labels, on held-out folds (issue 38).

The claims, prompt and judge calls are those of ``calibration_expertqa.py`` (the same store, so
its cached calls are re-used): DeCE's element-verification question in its direct form, the claim
as the statement and its cited evidence as the reference; positive = support ``Complete``.
``assay.analysis.align.fit_calibration`` compares isotonic and Platt scaling by out-of-fold log loss with
GroupKFold by question (a question's claims, over all its answers, are never split between a
training and a test fold). Reported, before and after (out-of-fold only), with bootstrap CIs over
questions: ECE (10 bins), Brier, AUROC, log loss, mean P against the base rate, reliability bins.
Writes ``results/align_expertqa.json``.
Usage: python benchmarks/align_expertqa.py [--claims 400] [--chars 1200] [--folds 5]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from assay.analysis.align import calibrate, fit_calibration, fit_calibrator, probability_report

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))
from benchmarks.calibration_expertqa import DATA, scored_sample  # noqa: E402  (the same claims and calls)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--claims", type=int, default=400)
    parser.add_argument("--chars", type=int, default=1200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--store", type=Path, default=HERE / "results" / "calibration_expertqa.db")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "align_expertqa.json")
    args = parser.parse_args()
    sample, scored, wall = scored_sample(args.data, args.chars, args.claims, args.seed, args.store)
    p = [s for s, _ in scored]
    y = [int(c["support"] == "Complete") for _, c in scored]
    groups = [c["id"].split("|", 1)[0] for _, c in scored]  # the question
    fitted = fit_calibration(p, y, groups, folds=args.folds, resamples=args.resamples, seed=args.seed)
    transfer = by_field(p, y, groups, [c["field"] for _, c in scored], fitted["chosen"], args)
    split = halves(p, y, groups, fitted["chosen"], args)
    out = {"judge": "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (llama.cpp, CPU)", "question": "DeCE element_direct",
           "claims": len(sample), "unscored": len(sample) - len(scored), "questions": len(set(groups)),
           "seed": args.seed, "chars": args.chars, "folds": args.folds, "calibration": fitted,
           "transfer_by_field": transfer, "halves": split, "wall_s": wall}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1, allow_nan=False))

    def show(name: str, part: dict) -> str:
        ci = part.get(f"{name}_ci")
        value = part[name]
        return "—" if value is None else f"{value:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")

    b, a = fitted["before"], fitted["after_cv"]
    print(f"n {b['n']} claims over {len(set(groups))} questions, base rate {b['base_rate']:.2f}; chosen "
          f"{fitted['chosen']} (CV log loss {fitted['cv_log_loss']})")
    for name in ("ece", "brier", "auroc", "log_loss"):
        print(f"{name}: raw {show(name, b)} → calibrated (held-out) {show(name, a)}")
    print(f"mean P: {b['mean_p']:.2f} → {a['mean_p']:.2f}; wrote {args.out} in {wall:.0f} s")
    for k, half in enumerate(split):
        print(f"half {k + 1}: one map fitted on {half['fitted_on']} claims, applied to the other {half['held_out']}: "
              + ", ".join(f"{name} {show(name, half['before'])} → {show(name, half['after'])}"
                          for name in ("ece", "auroc")))
    t = transfer["after"]
    print(f"transfer: fitted without the claim's field ({transfer['fields']} fields, {transfer['folds']} folds): "
          + ", ".join(f"{name} {show(name, t)}" for name in ("ece", "brier", "auroc")))


def halves(p: list[float], y: list[int], questions: list[str], kind: str, args: argparse.Namespace) -> list[dict]:
    """As a user applies an alignment: ONE map fitted on half of the questions, applied to the
    other half's claims, before and after on that half (and the other way round). Pooled
    out-of-fold figures mix five maps, each shifting its own fold, which costs AUROC that one map
    (strictly increasing for Platt) cannot lose."""
    import numpy as np
    from sklearn.model_selection import GroupKFold

    pa, ya = np.asarray(p, dtype=float), np.asarray(y, dtype=float)
    out = []
    for train, test in GroupKFold(n_splits=2).split(pa, groups=questions):
        held = [questions[i] for i in test]
        mapped = calibrate(fit_calibrator(kind, pa[train], ya[train]), pa[test])
        out.append({"fitted_on": len(train), "held_out": len(test),
                    "before": probability_report(pa[test], ya[test], held, args.resamples, args.seed),
                    "after": probability_report(mapped, ya[test], held, args.resamples, args.seed)})
    return out


def by_field(p: list[float], y: list[int], questions: list[str], fields: list[str], kind: str,
             args: argparse.Namespace) -> dict:
    """Transfer to unseen fields: the chosen calibrator fitted on the claims of the other fields
    (GroupKFold by ExpertQA's field, e.g. Law, Healthcare / Medicine), scored on the held-out
    field's claims; CIs still resample questions."""
    import numpy as np
    from sklearn.model_selection import GroupKFold

    pa, ya = np.asarray(p, dtype=float), np.asarray(y, dtype=float)
    folds = min(args.folds, len(set(fields)))
    pred = np.empty_like(pa)
    for train, test in GroupKFold(n_splits=folds).split(pa, groups=fields):
        pred[test] = calibrate(fit_calibrator(kind, pa[train], ya[train]), pa[test])
    return {"kind": kind, "fields": len(set(fields)), "folds": folds,
            "after": probability_report(pred, ya, questions, args.resamples, args.seed)}


if __name__ == "__main__":
    main()
