"""Issue 17, item 2: is DeCE's self-consistency worth its calls? DeCE with soft verdicts and one
extraction sample (the paper's method) vs k samples per extraction (``extraction_samples=k``,
statements kept when a strict majority of samples share them, matched by sentence embeddings),
on the first ``--pairs`` of the seeded RAGChecker dev subset (nested in the 40 of
``validity_ragchecker.py``, same store, so the one-sample run is served from its cache).

For each: Pearson r of score(model2) − score(model1) with each annotator's correctness /
completeness / overall label, the paired Δr (k samples minus one) with a unit-bootstrap CI,
judge calls and tokens per answer, and how many criteria / elements were kept with how many
votes. Embedded judge with logprobs. ``--form brief`` (the default) asks for the verdicts
without a written reason, as the cheap configuration of the cost table and the 40-pair validity
run (whose calls it re-uses); ``--form reasons`` with a reason each.
Writes ``results/self_consistency.json``.
Usage: python benchmarks/self_consistency.py [--pairs 10] [--k 3] [--form brief|reasons] [--data PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from assay import get_backend
from assay.analysis.meta import ameta, compare_metrics
from assay.data.datasets.adapters import read_ragchecker
from assay.judge.runner import RunnerConfig
from assay.store import Store

HERE = Path(__file__).parent
DATA = HERE.parents[1] / "shared" / "data" / "ragchecker_human_labeled_dev.json"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, default=DATA, help="another copy of the RAGChecker human-labelled set")
    parser.add_argument("--store", type=Path, default=HERE / "results" / "meta_ragchecker.db")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "self_consistency.json")
    parser.add_argument("--form", choices=["brief", "reasons"], default="brief")
    args = parser.parse_args()
    # the 40-pair subset's first --pairs units: nested in validity_ragchecker.py's run
    full = read_ragchecker(args.data).subset(40, args.seed)
    metaset = full.subset(args.pairs, args.seed)
    judge = get_backend("llamacpp/default", n_ctx=4096, logits_all=True)
    sampled = f"dece@k{args.k}"
    base: dict[str, Any] = {"verdicts": "soft", **({"reasoning": False} if args.form == "brief" else {})}
    options = {"dece@soft": base, sampled: {**base, "extraction_samples": args.k}}
    store = Store(args.store)
    start = time.perf_counter()
    result = asyncio.run(ameta(metaset, ["dece@soft", sampled], judge, store=store, seed=args.seed, resamples=1000,
                               runner=RunnerConfig(progress=True), method_options=options,
                               versus="dece@soft.f_beta"))
    wall = time.perf_counter() - start
    runs: dict[str, Any] = {}
    records_by_method = {method: store.results(run["run_id"]) for method, run in result["runs"].items()}
    scores_by_method = {method: {r.key: r.scores for r in records} for method, records in records_by_method.items()}
    for method, run in result["runs"].items():
        records = records_by_method[method]
        keys = sorted({k for r in records for k in r.call_keys})
        stats = store.call_stats(keys)
        n = len(metaset.items)
        runs[method] = {**run, "calls_per_answer": stats["calls"] / n,
                        "prompt_tokens_per_answer": stats["prompt_tokens"] / n,
                        "completion_tokens_per_answer": stats["completion_tokens"] / n,
                        # judge time of the stored calls (the same whether this invocation made them or
                        # re-read them from the store)
                        "judge_s_per_answer": stats["latency_s"] / n,
                        "prefix_reuse": stats.get("prefix_reuse"),  # share of prompt tokens llama.cpp did not recompute
                        "criteria_per_answer": sum(len(r.details.get("criteria", [])) for r in records) / n,
                        "elements_per_answer": sum(len(r.details.get("elements", [])) for r in records) / n,
                        "element_votes": dict(Counter(v for r in records for v in r.details.get("element_votes", [])))}
    # how far k samples move each answer's score from the one-sample score (the calls differ
    # only in the extraction samples; verification is greedy in both)
    one, many = scores_by_method.get("dece@soft", {}), scores_by_method.get(sampled, {})
    shared = sorted(k for k in set(one) & set(many)
                    if one[k].get("f_beta") is not None and many[k].get("f_beta") is not None)
    moves = [abs(float(many[k]["f_beta"]) - float(one[k]["f_beta"])) for k in shared]
    movement = {"answers": len(shared), "mean_abs_delta_f": sum(moves) / len(moves) if moves else None,
                "max_abs_delta_f": max(moves) if moves else None,
                "moved_over_0.1": sum(m > 0.1 for m in moves)}
    # the paired Δr of each half on its own (k samples minus one): precision, recall, F
    per_component = []
    for metric in ("precision", "recall", "f_beta"):
        per_metric = {f"{m}.{metric}": (scores, metric) for m, scores in scores_by_method.items()}
        for c in compare_metrics(metaset, per_metric, f"{sampled}.{metric}", resamples=1000, seed=args.seed):
            per_component.append({"metric": metric, "label": c["human_label"], "r_k": c["r_versus"],
                                  "r_1": c["r_method"], "delta": c["delta"], "ci": c["delta_ci"], "n": c["n"]})
    rows = [{"metric": r["method"], "label": r["human_label"], "r": r["pearson"], "r_ci": r.get("pearson_ci"),
             "n": r["n"]} for r in result["rows"]]
    out = {"pairs": args.pairs, "k": args.k, "seed": args.seed, "form": args.form,
           "judge": "Qwen2.5-Coder-1.5B-Instruct Q4_K_M, logprobs",
           "runs": runs, "rows": rows, "wall_s": wall, "f_movement": movement, "delta_by_component": per_component,
           # compare_metrics gives versus − other; here: r with k samples minus r with one
           "delta_k_minus_1": [{"metric": c["method"], "label": c["human_label"], "delta": -c["delta"],
                                "ci": [-c["delta_ci"][1], -c["delta_ci"][0]] if c["delta_ci"] else None}
                               for c in result["comparisons"]]}
    args.out.write_text(json.dumps(out, indent=1, default=str))
    for r in rows:
        print(r)
    for c in out["delta_k_minus_1"]:
        print(c)
    print(json.dumps(runs, indent=1, default=str))
    print(f"wrote {args.out} in {wall:.0f} s")


if __name__ == "__main__":
    main()
