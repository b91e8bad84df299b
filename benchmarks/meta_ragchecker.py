"""Agreement with human labels on RAGChecker's meta-evaluation pairs (issue: meta-evaluation).

DeCE vs pointwise vs G-Eval vs claims (RAGChecker-style) vs ROUGE-L vs BLEU on N pairs of
``ragchecker_human_labeled_dev.json`` with the embedded judge (Qwen2.5-Coder-1.5B Q4_K_M).
For each method's score, the difference model2 − model1 is correlated with each annotator's
correctness / completeness / overall label (RAGChecker's meta_eval.py protocol).

The judge calls go to a store beside the results (``benchmarks/results/meta_ragchecker.db``),
so the benchmark resumes where it stopped and a larger ``--pairs`` (nested subsets of one seed)
re-uses every call already made. G-Eval runs on a second model instance that returns logprobs.

Writes benchmarks/results/meta_ragchecker.json and prints the markdown table.
Usage: python benchmarks/meta_ragchecker.py [--pairs 40] [--data PATH] [--methods dece,pointwise,...]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from assay import get_backend
from assay.analysis.meta import ameta, markdown_table, write_meta
from assay.data.datasets.adapters import read_ragchecker
from assay.judge.runner import RunnerConfig

HERE = Path(__file__).parent
DATA = HERE.parents[1] / "shared" / "data" / "ragchecker_human_labeled_dev.json"
ALL = "rougeL,bleu,pointwise,geval,claims,dece"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--methods", default=ALL)
    parser.add_argument("--store", type=Path, default=HERE / "results" / "meta_ragchecker.db")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "meta_ragchecker.json")
    args = parser.parse_args()
    metaset = read_ragchecker(args.data).subset(args.pairs, args.seed)
    methods = args.methods.split(",")
    judge = get_backend("llamacpp/default", n_ctx=4096)
    judge_for = {}
    if "geval" in methods:
        judge_for["geval"] = get_backend("llamacpp/default", n_ctx=3072, logits_all=True)
    args.store.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    result = asyncio.run(ameta(metaset, methods, judge, store=args.store, seed=args.seed, resamples=1000,
                               runner=RunnerConfig(progress=True), judge_for=judge_for))
    result["wall_s"] = time.perf_counter() - start
    result["judge_model"] = "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (llama.cpp, CPU)"
    write_meta(result, args.out)
    print(markdown_table(result))
    print(f"wrote {args.out} in {result['wall_s']:.0f} s")


if __name__ == "__main__":
    main()
