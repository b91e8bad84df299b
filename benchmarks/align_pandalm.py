"""DICE's decision at a fitted tie threshold vs PandaLM's annotators, on held-out folds (issue 38).

DICE with direct verdicts over both orders (``swap``) on N pairs of ``pandalm_testset_dev.json``
(seeded subset, the store of ``meta_pandalm.py``, so its cached calls are re-used). Each pair's
forced choice P(A) / (P(A) + P(B)) is read from the run; ``assay.analysis.align.fit_tie_threshold`` picks
the distance from 0.5 below which a pair is a tie, to agree most with the annotators' majority
(A / B / tie), cross-validated with GroupKFold (each pair its own group). Reported with bootstrap
CIs: 3-way agreement of the judge's own verdict, of the forced choice (never a tie), of the
fitted threshold (held-out folds), and the forced choice's agreement on the pairs the annotators
did not call a tie. Writes ``results/align_pandalm.json``.
Usage: python benchmarks/align_pandalm.py [--pairs 100] [--no-swap] [--folds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

import numpy as np

from assay.analysis.align import decide, fit_tie_threshold
from assay.analysis.meta import ameta, majority
from assay.data.datasets.adapters import read_pandalm
from assay.judge.runner import RunnerConfig
from assay.store import Store

HERE = Path(__file__).parent
DATA = HERE.parents[1] / "shared" / "data" / "pandalm_testset_dev.json"
WINNER = {-1.0: "A", 0.0: "tie", 1.0: "B"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--no-swap", action="store_true")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--store", type=Path, default=HERE / "results" / "meta_pandalm.db")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "align_pandalm.json")
    args = parser.parse_args()
    from assay import get_backend

    metaset = read_pandalm(args.data).subset(args.pairs, args.seed)
    judge = get_backend("llamacpp/default", n_ctx=4096, logits_all=True)
    options = {"dice": {"swap": not args.no_swap, "verdicts": "direct"}}
    start = time.perf_counter()
    result = asyncio.run(ameta(metaset, ["dice"], judge, store=args.store, seed=args.seed, resamples=0,
                               runner=RunnerConfig(progress=True), method_options=options))
    wall = time.perf_counter() - start
    rows = Store(args.store, create=False).results(result["runs"]["dice"]["run_id"])
    by_id = {u.id: u for u in metaset.units}
    fc, labels, raw, groups = [], [], [], []
    for row in rows:
        value = row.details.get("forced_choice_a")
        unit = by_id.get(str(row.items[0]["id"]))
        human = majority(list(unit.human.get("preference") or [])) if unit is not None else None
        if value is None or human is None:
            continue
        fc.append(float(value))
        labels.append(WINNER[human])
        raw.append(row.details.get("verdict"))
        groups.append(str(row.items[0]["id"]))
    fitted = fit_tie_threshold(fc, labels, raw, groups, folds=args.folds, resamples=args.resamples, seed=args.seed)
    decided = [i for i, lab in enumerate(labels) if lab != "tie"]
    hits = np.array([float(decide(fc[i], 0.0) == labels[i]) for i in decided])
    out = {"judge": "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (llama.cpp, CPU, logits_all)", "pairs": len(metaset.units),
           "scored": len(fc), "swap": not args.no_swap, "seed": args.seed, "folds": args.folds,
           "tie_threshold": fitted,
           "forced_choice_on_non_tie_pairs": {"n": len(decided), "accuracy": float(hits.mean()) if len(hits) else None},
           "wall_s": wall}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1, allow_nan=False))

    def show(part: dict) -> str:
        ci = part["accuracy_ci"]
        return f"{part['accuracy']:.3f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")

    print(f"{len(fc)} pairs, annotators' majority {fitted['labels']}; threshold {fitted['threshold']:.3f}")
    print(f"3-way agreement: judge's verdict {show(fitted['judge_verdict'])}, forced choice "
          f"{show(fitted['forced_choice'])}, fitted threshold (held-out folds) {show(fitted['after_cv'])}")
    if len(hits):
        print(f"forced choice on the {len(decided)} non-tie pairs: {hits.mean():.3f}")
    print(f"wrote {args.out} in {wall:.0f} s")


if __name__ == "__main__":
    main()
