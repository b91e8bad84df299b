"""PReMISE on HaluQuestQA preference pairs with the embedded judge (issue 15, item 6).

Discovers a rubric (K criteria) from the first ``--discover`` pairs of
``haluquestqa_preferences_dev.tsv``, then audits it: rubric-conditioned vs no-rubric preference
accuracy (F.10) on ``--fit`` disjoint pairs of the same file, and structural adequacy (F.9) of
the first ``--structure`` criteria. Times each stage. Every judge call is kept in
``results/premise_haluquestqa.db`` (not in git), so a re-run is free and a killed run resumes.
Writes ``results/premise_haluquestqa.json``.
Usage: python benchmarks/premise_haluquestqa.py [--discover 12] [--fit 20] [--votes 1] [--k 8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

from assay import JudgeSession, get_backend
from assay.judge.runner import RunnerConfig
from assay.methods.premise.audit import Audit, AuditConfig
from assay.methods.premise.discover import Discovery, DiscoveryConfig
from assay.methods.premise.files import RubricSet, read_preference_pairs, save_rubric
from assay.store import Store

HERE = Path(__file__).parent
DATA = HERE.parents[1] / "shared" / "data" / "haluquestqa_preferences_dev.tsv"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--discover", type=int, default=12)
    parser.add_argument("--fit", type=int, default=20)
    parser.add_argument("--structure", type=int, default=3, help="criteria whose structure is audited")
    parser.add_argument("--votes", type=int, default=1)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--cluster-size", type=int, default=6)
    parser.add_argument("--matcher", default="embeddings")
    parser.add_argument("--max-chars", type=int, default=1200, help="answers cut to this many characters")
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: all cores)")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--store", type=Path, default=HERE / "results" / "premise_haluquestqa.db")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "premise_haluquestqa.json")
    args = parser.parse_args()
    pairs, _ = read_preference_pairs(args.data)
    pairs = [p.model_copy(update={"chosen": p.chosen[: args.max_chars], "rejected": p.rejected[: args.max_chars]})
             for p in pairs]
    train, test = pairs[: args.discover], pairs[args.discover: args.discover + args.fit]
    judge = get_backend("llamacpp/default", n_ctx=4096, n_threads=args.threads)
    store = Store(args.store)
    timings: dict[str, float] = {}
    out: dict[str, Any] = {"judge": "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (llama.cpp, CPU)", "data": str(args.data),
                           "discover_pairs": len(train), "fit_pairs": len(test), "votes": args.votes, "k": args.k,
                           "max_chars": args.max_chars}

    async def run() -> RubricSet:
        async with JudgeSession("bench-premise-haluquestqa", judge, store=store, runner=RunnerConfig(progress=False),
                                manifest={"args": {k: str(v) for k, v in sorted(vars(args).items())}}) as session:
            client = session.client
            start = time.perf_counter()
            config = DiscoveryConfig(k=args.k, cluster_size=args.cluster_size, matcher=args.matcher)
            rubric, trace = await Discovery(config).run(train, client, store)
            timings["discover_s"] = time.perf_counter() - start
            out["discovery_calls"] = client.stats.calls
            out["trace"] = trace
            out["rubric"] = [c.model_dump() for c in rubric.criteria]
            if not rubric.criteria:
                return rubric
            auditor = Audit(AuditConfig(votes=args.votes))
            start = time.perf_counter()
            fit = await auditor.fit(rubric, test, client)
            timings["fit_s"] = time.perf_counter() - start
            out["fit"] = {k: v for k, v in fit.items() if k != "rows"}
            out["fit_rows"] = fit["rows"]
            start = time.perf_counter()
            sample = RubricSet(criteria=rubric.criteria[: args.structure])
            out["structure"] = await auditor.structure(sample, client)
            timings["structure_s"] = time.perf_counter() - start
            out["judge_calls"] = client.stats.calls
            return rubric

    rubric = asyncio.run(run())
    out["timings"] = timings
    args.out.write_text(json.dumps(out, indent=1, default=str) + "\n")
    if rubric.criteria:
        save_rubric(rubric, args.out.with_suffix(".rubric.yaml"))
    print(json.dumps({k: out.get(k) for k in ("timings", "fit", "judge_calls")}, indent=1, default=str))
    sizes = [level["pool"] for level in out["trace"]["levels"]]
    print("pool per level:", sizes, "stopped:", out["trace"].get("stopped"))
    for c in rubric.criteria:
        print(f"- [{c.support}] {c.id}: {c.description[:100]}")
    if "structure" in out:
        print("structure:", [(c["id"], c["structure"]) for c in out["structure"]["criteria"]])


if __name__ == "__main__":
    main()
