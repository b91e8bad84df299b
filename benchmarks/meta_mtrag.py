"""Case-aware judge vs human ratings on MT-RAG (issue: case-aware judge, item 7).

Runs the case-aware judge with the embedded model (Qwen2.5-Coder-1.5B Q4_K_M) on N rated
responses of ``mtrag_human_eval_dev.json`` (a seeded subset; each response is one evaluated
turn with its history and passages) and reports Spearman (with bootstrap CIs) for the pairings
of the issue: hallucination vs faithfulness, helpfulness vs appropriateness and completeness,
S_final vs win-rate; every metric × label pairing is in the JSON. Human values are the mean of
the three raters. Resumable: judge calls go to benchmarks/results/meta_mtrag.db.

Usage: python benchmarks/meta_mtrag.py [--turns 30] [--data PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from assay import get_backend
from assay.analysis.meta import ameta, write_meta
from assay.data.datasets.adapters import read_mtrag
from assay.judge.runner import RunnerConfig

HERE = Path(__file__).parent
DATA = HERE.parents[1] / "shared" / "data" / "mtrag_human_eval_dev.json"
FOCUS = [("caseaware.hallucination_score", "faithfulness"), ("caseaware.answer_helpfulness_score", "appropriateness"),
         ("caseaware.answer_helpfulness_score", "completeness"), ("caseaware.s_final", "win_rate"),
         ("caseaware.s_final", "faithfulness"), ("caseaware.s_final", "completeness")]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--store", type=Path, default=HERE / "results" / "meta_mtrag.db")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "meta_mtrag.json")
    args = parser.parse_args()
    metaset = read_mtrag(args.data).subset(args.turns, args.seed)
    args.store.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    result = asyncio.run(ameta(metaset, ["caseaware"], get_backend("llamacpp/default", n_ctx=8192), store=args.store,
                               seed=args.seed, resamples=1000, runner=RunnerConfig(progress=True))).to_dict()
    result["wall_s"] = time.perf_counter() - start
    result["judge_model"] = "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (llama.cpp, CPU)"
    rows = {(r["method"], r["human_label"]): r for r in result["rows"]}
    result["focus"] = [rows[key] for key in FOCUS]
    write_meta(result, args.out)
    print("| judge metric | human label | Spearman ρ [95% CI] | p | n | unscored |")
    print("|---|---|---|---|---|---|")
    for row in result["focus"]:
        rho = "–" if row["spearman"] is None else f"{row['spearman']:.2f}"
        ci = f" [{row['spearman_ci'][0]:.2f}, {row['spearman_ci'][1]:.2f}]" if row["spearman_ci"] else ""
        p = "–" if row["spearman_p"] is None else f"{row['spearman_p']:.3g}"
        print(f"| {row['method']} | {row['human_label']} | {rho}{ci} | {p} | {row['n']} | {row['unscored']} |")
    print(f"\n`{result['signature']['line']}`\nwrote {args.out} in {result['wall_s']:.0f} s")


if __name__ == "__main__":
    main()
