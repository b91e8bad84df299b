"""The validity table of issue 17: each method hard vs soft on RAGChecker dev pairs.

DeCE with greedy 0/1 verdicts (``hard``, the default) and with each verdict's probability read
from the judge's logprobs (``dece@soft``, ``verdicts=soft``), beside G-Eval (probability-weighted
1–5) and ROUGE-L, on the same seeded subset of ``ragchecker_human_labeled_dev.json`` as
``meta_ragchecker.py`` (seed 0), with the embedded judge. For every metric: Pearson r of
score(model2) − score(model1) with each annotator's correctness / completeness / overall label,
and the paired Δr versus G-Eval F2 and versus ROUGE-L with unit-bootstrap CIs; judge calls and
tokens per item from each run's call stats.

By default the hard row is read from the soft run's own calls (``dece@soft.f_beta_hard``: the
greedy label of each verification call that also returned logprobs — greedy decoding does not
depend on asking for logprobs), so hard and soft differ only in how a verdict counts, and the
run costs one DeCE pass. ``--separate-hard`` also runs DeCE hard as its own run (two more calls per
answer, without logprobs), as the 20-pair table did.

The store is ``results/meta_ragchecker.db`` (shared with meta_ragchecker.py; not in git): a soft
run re-uses a hard run's cached extraction calls. Writes ``results/validity_ragchecker.json``
(``--out``) and prints the table.
Usage: python benchmarks/validity_ragchecker.py [--pairs 40] [--separate-hard] [--dece soft,brief]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

from assay import get_backend
from assay.analysis.meta import ameta
from assay.data.datasets.adapters import read_ragchecker
from assay.judge.runner import RunnerConfig
from assay.store import Store

HERE = Path(__file__).parent
DATA = HERE.parents[1] / "shared" / "data" / "ragchecker_human_labeled_dev.json"
METHODS = ["rougeL", "geval", "semantic", "dece@soft"]
HARD = ("precision_hard", "recall_hard", "f_beta_hard")
# DeCE variants (``--dece``): soft verdicts with a written reason each, and in the brief form
# (reasoning=False: evidence numbers and score only, issue 17 item 5)
DECE_VARIANTS = {"soft": {"verdicts": "soft"}, "brief": {"verdicts": "soft", "reasoning": False},
                 "direct": {"verdicts": "direct"}}
# direct verdicts read label probabilities from one forward pass: no logprobs of generated tokens needed
NEEDS_LOGPROBS = {"soft", "brief"}


def _usage(store: Store, run_id: str, items: int) -> dict[str, Any]:
    """Judge calls and tokens per item of one run (its results' call keys, cached calls included)."""
    keys = sorted({k for r in store.results(run_id) for k in r.call_keys})
    stats = store.call_stats(keys)
    per_item = {k: v / items for k, v in stats.items()
                if k in ("calls", "prompt_tokens", "completion_tokens", "latency_s", "cached_prompt_tokens")}
    return {**per_item, "prefix_reuse": stats.get("prefix_reuse")}  # share of prompt tokens llama.cpp reused


def _delta(entry: dict[str, Any], versus: str) -> str:
    d, ci = entry.get(f"delta_vs_{versus}"), entry.get(f"delta_ci_vs_{versus}")
    return "—" if d is None else f"{d:+.2f}" + (f" [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--store", type=Path, default=HERE / "results" / "meta_ragchecker.db")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "validity_ragchecker.json")
    parser.add_argument("--separate-hard", action="store_true",
                        help="also run DeCE hard as its own run (verification calls without logprobs)")
    parser.add_argument("--dece", default="soft", help="comma-separated DeCE variants: soft, brief")
    args = parser.parse_args()
    variants = [v.strip() for v in args.dece.split(",") if v.strip()]
    unknown = [v for v in variants if v not in DECE_VARIANTS]
    if unknown or not variants:
        parser.error(f"--dece: unknown variant(s) {unknown}; known: {', '.join(DECE_VARIANTS)}")
    methods = [*METHODS[:3], *(["dece"] if args.separate_hard else []), *(f"dece@{v}" for v in variants)]
    metaset = read_ragchecker(args.data).subset(args.pairs, args.seed)
    judge = get_backend("llamacpp/default", n_ctx=4096)
    with_logprobs = get_backend("llamacpp/default", n_ctx=4096, logits_all=True)
    options = {f"dece@{v}": DECE_VARIANTS[v] for v in variants}
    judge_for = {"geval": with_logprobs, **{f"dece@{v}": with_logprobs for v in variants if v in NEEDS_LOGPROBS}}
    hard_of_soft = {f"dece@{v}": HARD for v in variants}
    store = Store(args.store)
    start = time.perf_counter()
    results = {}
    for versus in ("geval.f_beta", "rougeL", f"dece@{variants[0]}.f_beta_hard"):
        results[versus] = asyncio.run(ameta(metaset, methods, judge, store=store, seed=args.seed, resamples=1000,
                                            runner=RunnerConfig(progress=True), judge_for=judge_for,
                                            method_options=options, versus=versus,
                                            detail_metrics=hard_of_soft))
    wall = time.perf_counter() - start
    first = results["geval.f_beta"]
    table = []
    for row in first["rows"]:
        if row["method"] in ("geval.precision", "geval.recall"):
            continue
        entry = {"metric": row["method"], "label": row["human_label"], "r": row["pearson"],
                 "r_ci": row.get("pearson_ci"), "n": row["n"]}
        for versus, result in results.items():
            for c in result["comparisons"]:
                if c["method"] == row["method"] and c["human_label"] == row["human_label"]:
                    entry[f"delta_vs_{versus}"] = -c["delta"]  # the metric's r minus versus' r
                    entry[f"delta_ci_vs_{versus}"] = [-c["delta_ci"][1], -c["delta_ci"][0]] if c["delta_ci"] else None
        table.append(entry)
    runs = {m: {**r, "per_item": _usage(store, r["run_id"], len(metaset.items))} for m, r in first["runs"].items()}
    out = {"pairs": args.pairs, "seed": args.seed, "dece_variants": {v: DECE_VARIANTS[v] for v in variants},
           "hard": "separate run" if args.separate_hard else "greedy labels of each soft run's calls (dece@*.*_hard)",
           "judge": "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (llama.cpp, CPU)",
           "runs": runs, "table": table, "wall_s": wall, "rows": first["rows"],
           "comparisons": {v: r["comparisons"] for v, r in results.items()}}
    args.out.write_text(json.dumps(out, indent=1, default=str))
    print(f"| metric | label | r | Δr vs G-Eval F2 [95% CI] | Δr vs ROUGE-L [95% CI] | Δr vs {variants[0]} F2 hard |\n"
          "|---|---|---|---|---|---|")
    for e in table:
        r = "—" if e["r"] is None else f"{e['r']:.2f}"
        print(f"| {e['metric']} | {e['label']} | {r} | {_delta(e, 'geval.f_beta')} | {_delta(e, 'rougeL')} | "
              f"{_delta(e, f'dece@{variants[0]}.f_beta_hard')} |")
    print(f"wrote {args.out} in {wall:.0f} s")


if __name__ == "__main__":
    main()
