"""Issue 17's validity table on ExpertQA: the claims baseline (RAGChecker-style bidirectional
entailment against the expert's revised answer) with hard and soft verdicts, beside ROUGE-L.

One soft run (``claims@soft``): each checking call returns the greedy verdicts and the logprobs at
each verdict, so the hard metrics are the greedy labels of the same calls
(``claims@soft.f1_hard`` etc.) and hard and soft differ only in how a verdict counts. A seeded
subset of ExpertQA answers (``expertqa_rand_test.jsonl``; answers with an expert label), the
embedded judge with logprobs. For every metric: Pearson r with the expert's share of correct
claims, of supported claims, and usefulness, and the paired Δr (unit bootstrap, 1,000
resamples) versus the hard F1 and versus ROUGE-L; judge calls and tokens per answer.

Store ``results/validity_expertqa.db`` (not in git; resumable). Writes
``results/validity_expertqa.json``. Usage: python benchmarks/validity_expertqa.py [--answers 20]
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
from assay.data.datasets.adapters import read_expertqa
from assay.judge.runner import RunnerConfig
from assay.store import Store

HERE = Path(__file__).parent
DATA = HERE.parents[1] / "shared" / "data" / "expertqa_rand_test.jsonl"
METHODS = ["rougeL", "claims@soft"]
HARD_OF_SOFT = {"claims@soft": ("precision_hard", "recall_hard", "f1_hard")}
VERSUS = ("claims@soft.f1_hard", "rougeL")


def _usage(store: Store, run_id: str, items: int) -> dict[str, Any]:
    keys = sorted({k for r in store.results(run_id) for k in r.call_keys})
    stats = store.call_stats(keys)
    per_item = {k: v / items for k, v in stats.items()
                if k in ("calls", "prompt_tokens", "completion_tokens", "latency_s", "cached_prompt_tokens")}
    return {**per_item, "prefix_reuse": stats.get("prefix_reuse")}  # share of prompt tokens llama.cpp reused


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--answers", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--store", type=Path, default=HERE / "results" / "validity_expertqa.db")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "validity_expertqa.json")
    args = parser.parse_args()
    full = read_expertqa(args.data)
    full.units = [u for u in full.units if u.human]
    metaset = full.subset(args.answers, args.seed)
    judge = get_backend("llamacpp/default", n_ctx=4096, logits_all=True)
    store = Store(args.store)
    options = {"claims@soft": {"verdicts": "soft"}}
    start = time.perf_counter()
    results = {versus: asyncio.run(ameta(metaset, METHODS, judge, store=store, seed=args.seed, resamples=1000,
                                         runner=RunnerConfig(progress=True), method_options=options,
                                         versus=versus, detail_metrics=HARD_OF_SOFT))
               for versus in VERSUS}
    wall = time.perf_counter() - start
    first = results[VERSUS[0]]
    table = []
    for row in first["rows"]:
        entry = {"metric": row["method"], "label": row["human_label"], "r": row["pearson"],
                 "r_ci": row.get("pearson_ci"), "n": row["n"], "unscored": row["unscored"]}
        for versus, result in results.items():
            for c in result["comparisons"]:
                if c["method"] == row["method"] and c["human_label"] == row["human_label"]:
                    entry[f"delta_vs_{versus}"] = -c["delta"]  # the metric's r minus versus' r
                    entry[f"delta_ci_vs_{versus}"] = [-c["delta_ci"][1], -c["delta_ci"][0]] if c["delta_ci"] else None
        table.append(entry)
    runs = {m: {**r, "per_item": _usage(store, r["run_id"], len(metaset.items))} for m, r in first["runs"].items()}
    out = {"answers": len(metaset.units), "seed": args.seed,
           "judge": "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (llama.cpp, CPU), logprobs on",
           "hard": "greedy labels of the soft run's calls (claims@soft.*_hard)", "runs": runs, "table": table,
           "wall_s": wall, "human_agreement": first["human_agreement"],
           "comparisons": {v: r["comparisons"] for v, r in results.items()}}
    args.out.write_text(json.dumps(out, indent=1, default=str))

    def fmt(e: dict[str, Any], versus: str) -> str:
        d, ci = e.get(f"delta_vs_{versus}"), e.get(f"delta_ci_vs_{versus}")
        return "—" if d is None else f"{d:+.2f}" + (f" [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "")

    print("| metric | label | r [95% CI] | Δr vs hard F1 | Δr vs ROUGE-L |\n|---|---|---|---|---|")
    for e in table:
        r = "—" if e["r"] is None else f"{e['r']:.2f}" + (f" [{e['r_ci'][0]:.2f}, {e['r_ci'][1]:.2f}]"
                                                          if e["r_ci"] else "")
        print(f"| {e['metric']} | {e['label']} | {r} | {fmt(e, VERSUS[0])} | {fmt(e, VERSUS[1])} |")
    print(f"wrote {args.out} in {wall:.0f} s")


if __name__ == "__main__":
    main()
