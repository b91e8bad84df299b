"""Aligned score vs the annotators' preference on RAGChecker dev pairs, on held-out folds (issue 38).

For N pairs of ``ragchecker_human_labeled_dev.json`` (seeded subset, as ``meta_ragchecker.py``), the
runs of DeCE with direct verdicts (embedded judge), ROUGE-L and MiniLM cosine (``semantic``) are
read from the store; for each pair, the second answer's inputs minus the first's are fitted to the
mean of the annotators' label (``overall``, and ``correctness`` / ``completeness``) with
``assay.analysis.align.fit_aligned_score`` (non-negative ridge, cross-validated with GroupKFold by query:
a query's pairs are never split). Reported per label: the out-of-fold Pearson r of the aligned
score, and each single input's r on the same pairs, all with bootstrap CIs over queries; three
alignments: DeCE + both signals, DeCE alone, the two signals alone (judge-free).

``--judge-free`` runs only ROUGE-L and MiniLM (no model needed). The judge's calls are cached in
``--store`` (default ``results/meta_ragchecker.db``, shared with meta_ragchecker.py and
validity_ragchecker.py, not in git). Writes ``results/align_ragchecker.json``.
Usage: python benchmarks/align_ragchecker.py [--pairs 40] [--judge-free] [--folds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from assay.analysis.align import correlation_report, fit_aligned_score
from assay.analysis.meta import ameta
from assay.data.datasets.adapters import read_ragchecker
from assay.judge.runner import RunnerConfig
from assay.store import Store

HERE = Path(__file__).parent
DATA = HERE.parents[1] / "shared" / "data" / "ragchecker_human_labeled_dev.json"
SIGNALS = ["rougeL", "semantic"]
DECE = ["dece@direct.precision", "dece@direct.recall", "dece@direct.f_beta"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--judge-free", action="store_true", help="ROUGE-L and MiniLM only (no model)")
    parser.add_argument("--store", type=Path, default=HERE / "results" / "meta_ragchecker.db")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "align_ragchecker.json")
    args = parser.parse_args()
    metaset = read_ragchecker(args.data).subset(args.pairs, args.seed)
    methods = [*SIGNALS, *([] if args.judge_free else ["dece@direct"])]
    judge: Any = "none/none"
    if not args.judge_free:
        from assay import get_backend
        judge = get_backend("llamacpp/default", n_ctx=4096)
    store = Store(args.store)
    start = time.perf_counter()
    result = asyncio.run(ameta(metaset, methods, judge, store=store, seed=args.seed, resamples=0,
                               runner=RunnerConfig(progress=True),
                               method_options={"dece@direct": {"verdicts": "direct"}}))
    wall = time.perf_counter() - start
    scores: dict[str, dict[str, float | None]] = {}  # item key -> input name -> value
    for method, run in result["runs"].items():
        for row in store.results(run["run_id"]):
            for metric, value in row.scores.items():
                name = method if metric == method else f"{method}.{metric}"
                scores.setdefault(row.key, {})[name] = value
    inputs = [*(DECE if not args.judge_free else []), *SIGNALS]
    query_of = {item.key: item.query for item in metaset.items}
    domain_of = {item.key: str((item.metadata or {}).get("dataset")) for item in metaset.items}
    out: dict[str, Any] = {"pairs": len(metaset.units), "seed": args.seed, "folds": args.folds,
                           "judge": "none (judge-free)" if args.judge_free else
                           "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (llama.cpp, CPU)",
                           "runs": result["runs"], "wall_s": wall, "labels": {}}
    for label in metaset.labels:
        xs, ys, groups, domains = [], [], [], []
        for unit in metaset.units:
            human = unit.human.get(label) or []
            first, second = (scores.get(k, {}) for k in unit.keys)
            values = [(first.get(n), second.get(n)) for n in inputs]
            if not human or any(a is None or b is None for a, b in values):
                continue
            xs.append([float(b) - float(a) for a, b in values])  # type: ignore[arg-type]
            ys.append(statistics.fmean(human))
            groups.append(query_of[unit.keys[0]])
            domains.append(domain_of[unit.keys[0]])
        x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
        entry: dict[str, Any] = {"n": len(ys), "queries": len(set(groups)),
                                 "data": {"inputs": inputs, "x": xs, "y": ys, "queries": groups, "domains": domains},
                                 "single": {n: correlation_report(x[:, j], y, groups, args.resamples, args.seed)
                                            for j, n in enumerate(inputs)}}
        variants = {"all": inputs, "signals only": SIGNALS}
        if not args.judge_free:
            variants["dece only"] = DECE
        for variant, names in variants.items():
            cols = [inputs.index(n) for n in names]
            fitted = fit_aligned_score(names, x[:, cols], y, groups, pairwise=True, folds=args.folds,
                                       resamples=args.resamples, seed=args.seed)
            entry[variant] = {"after_cv": fitted["after_cv"], "standardised_shares": fitted["standardised_shares"],
                              "combine": fitted["combine"], "ridge_after_cv": fitted["other_combiners_after_cv"]}
        # Transfer to an unseen domain: folds by RAGChecker's source dataset (clapnq, novelqa, the
        # robustqa domains), so each pair is predicted by a fit that saw none of its domain; the CI
        # still resamples queries.
        by_domain = fit_aligned_score(inputs, x, y, domains, pairwise=True, folds=args.folds, resamples=0,
                                      seed=args.seed)
        entry["all, fitted without the pair's domain"] = {
            "after_cv": correlation_report(np.asarray(by_domain["out_of_fold"]["predicted"]), y, groups,
                                           args.resamples, args.seed),
            "domains": len(set(domains))}
        out["labels"][label] = entry
        best = max(entry["single"].items(), key=lambda kv: -2 if kv[1]["pearson"] is None else kv[1]["pearson"])
        def show(r: dict[str, Any]) -> str:
            ci = r["pearson_ci"]
            return "—" if r["pearson"] is None else f"{r['pearson']:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci
                                                                               else "")
        print(f"{label} (n {len(ys)}): " + "; ".join(f"aligned {v} {show(entry[v]['after_cv'])}"
                                                      for v in variants)
              + f"; best single {best[0]} {show(best[1])}; rougeL {show(entry['single']['rougeL'])}")
        shares = entry["all"]["standardised_shares"]
        print(f"  weights (all, standardised): {', '.join(f'{k} {v:.2f}' for k, v in shares.items())}"
              f"; ridge instead of equal weights: {entry['all']['ridge_after_cv']['ridge']:.2f}")
        transfer = entry["all, fitted without the pair's domain"]["after_cv"]
        print(f"  fitted without the pair's domain: {show(transfer)}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1, default=str, allow_nan=False))
    print(f"wrote {args.out} in {wall:.0f} s (judge runs)")


if __name__ == "__main__":
    main()
