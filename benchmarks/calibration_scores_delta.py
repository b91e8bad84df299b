"""Does the shipped calibration map help DeCE's scores rank answers? A paired bootstrap over pairs.

Reads two `assay meta ragchecker ... -m dece` results over the same RAGChecker dev pairs and the same
judge calls: one with the map (``--calibration default``, which counted the mapped P(yes) in
precision when it was run, assay 0.2.0) and one with ``calibration=none`` (raw P(yes)). For each
score and human label: Pearson r between an answer pair's score difference (B − A) and the
annotators' mean preference, for both, and the difference r(map) − r(raw) with a 95% percentile
interval from resampling the pairs (the same resample for both, so the interval is paired).

Usage: python benchmarks/calibration_scores_delta.py [--calibrated F] [--raw F] [--out F]
Writes benchmarks/results/calibration_scores_delta.json.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calibrated", type=Path, default=HERE / "results" / "meta_ragchecker_dece_calibrated_20.json")
    parser.add_argument("--raw", type=Path, default=HERE / "results" / "meta_ragchecker_dece_raw_20.json")
    parser.add_argument("--resamples", type=int, default=5000)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "calibration_scores_delta.json")
    args = parser.parse_args()

    def load(path: Path) -> dict[tuple[str, str], dict]:
        return {(i["id"], i["method"]): i for i in json.loads(path.read_text())["items"]}

    cal, raw = load(args.calibrated), load(args.raw)
    rng = np.random.default_rng(0)
    rows = []
    for method in ("dece.precision", "dece.f_beta"):
        ids = sorted(k[0] for k in cal if k[1] == method and (k[0], method) in raw)
        for label in ("overall", "correctness", "completeness"):
            human = np.array([np.mean(cal[(i, method)]["human"][label]) for i in ids])
            d_cal = np.array([cal[(i, method)]["score_b"] - cal[(i, method)]["score_a"] for i in ids])
            d_raw = np.array([raw[(i, method)]["score_b"] - raw[(i, method)]["score_a"] for i in ids])

            def r(x: np.ndarray, y: np.ndarray) -> float:
                return float(np.corrcoef(x, y)[0, 1])

            deltas = []
            for _ in range(args.resamples):
                s = rng.integers(0, len(ids), len(ids))
                if np.std(human[s]) > 0 and np.std(d_cal[s]) > 0 and np.std(d_raw[s]) > 0:
                    deltas.append(r(d_cal[s], human[s]) - r(d_raw[s], human[s]))
            low, high = np.percentile(deltas, [2.5, 97.5])
            rows.append({"score": method, "label": label, "pairs": len(ids), "r_map": r(d_cal, human),
                         "r_raw": r(d_raw, human), "delta": r(d_cal, human) - r(d_raw, human),
                         "delta_ci": [float(low), float(high)], "resamples_used": len(deltas)})
            print(f"{method:15} {label:12} pairs {len(ids)}  r map {rows[-1]['r_map']:.3f}  raw {rows[-1]['r_raw']:.3f}"
                  f"  delta {rows[-1]['delta']:+.3f} [{low:+.3f}, {high:+.3f}]")
    args.out.write_text(json.dumps({"benchmark": "calibration_scores_delta", "calibrated": args.calibrated.name,
                                    "raw": args.raw.name, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
