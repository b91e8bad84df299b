"""PReMISE reliability-constrained refinement (Algorithm 2) with the embedded judge (issue 15,
item 4): the rubric discovered by ``premise_haluquestqa.py`` plus a hand-written criterion, refined
on HaluQuestQA preference pairs disjoint from the discovery pairs. The judge is also the attacker,
verifier, repair assistant and predictor (the paper uses four different, much larger models).
Every judge call is kept in ``results/premise_refine.db`` (not in git): a re-run is free and a
killed run resumes. Writes ``results/premise_refine.json``: per criterion the before metrics,
every candidate (operators, text, budget violations, measured metrics, status) and the choice;
and the wall time. Usage:
  python benchmarks/premise_refine.py [--pairs 6] [--attacks 3] [--runs 2] [--depth 1] [--delta 0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import time
from pathlib import Path
from typing import Any

from assay import JudgeSession, get_backend
from assay.judge.runner import RunnerConfig
from assay.methods.premise.audit import Audit, AuditConfig
from assay.methods.premise.files import Criterion, RubricSet, load_rubric, read_preference_pairs
from assay.methods.premise.refine import OPERATORS, RefineConfig, Refiner
from assay.store import Store

HERE = Path(__file__).parent
DATA = HERE.parents[1] / "shared" / "data" / "haluquestqa_preferences_dev.tsv"
HAND = Criterion(id="supports_claims", description="Every factual claim in the answer is supported by a reason, "
                                                   "a mechanism or a source the reader can check.")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip", type=int, default=20, help="pairs before these (the discovery's) are not used")
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--attacks", type=int, default=3)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--depth", type=int, default=1)
    parser.add_argument("--beam", type=int, default=3)
    parser.add_argument("--delta", type=float, default=0.0)
    parser.add_argument("--operators", default=",".join(OPERATORS))
    parser.add_argument("--max-chars", type=int, default=800, help="answers cut to this many characters")
    parser.add_argument("--attack-tokens", type=int, default=200)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--rubric", type=Path, default=HERE / "results" / "premise_haluquestqa.rubric.yaml")
    parser.add_argument("--store", type=Path, default=HERE / "results" / "premise_refine.db")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "premise_refine.json")
    args = parser.parse_args()
    pairs, _ = read_preference_pairs(DATA)
    pairs = [p.model_copy(update={"chosen": p.chosen[: args.max_chars], "rejected": p.rejected[: args.max_chars]})
             for p in pairs][args.skip: args.skip + args.pairs]
    rubric = RubricSet(criteria=[*load_rubric(args.rubric).criteria, HAND], source="discovered + hand-written")
    judge = get_backend("llamacpp/default", n_ctx=4096, n_threads=args.threads)
    store = Store(args.store)
    config = RefineConfig(operators=tuple(args.operators.split(",")), depth=args.depth, beam=args.beam,
                          delta=args.delta)
    refiner = Refiner(Audit(AuditConfig(attacks=args.attacks, runs=args.runs, paraphrases=0,
                                        attack_tokens=args.attack_tokens)), config)
    out: dict[str, Any] = {"judge": "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (llama.cpp, CPU), also attacker, verifier, "
                                    "repair assistant and predictor",
                           "data": str(DATA), "pairs": [p.id for p in pairs], "max_chars": args.max_chars,
                           "attacks": args.attacks, "runs": args.runs, "attack_tokens": args.attack_tokens,
                           "config": {**config.model_dump(mode="json"),
                                      "delta": "inf" if math.isinf(args.delta) else args.delta}}

    async def run() -> list[dict[str, Any]]:
        async with JudgeSession("bench-premise-refine", judge, store=store, runner=RunnerConfig(progress=False),
                                manifest={"args": {k: str(v) for k, v in sorted(vars(args).items())}}) as session:
            client = session.client
            results = []
            for criterion in rubric.criteria:
                start = time.perf_counter()
                before = client.stats.calls
                r = await refiner.refine_criterion(criterion, pairs, client)
                r["wall_s"] = time.perf_counter() - start
                r["judge_calls_made"] = client.stats.calls - before
                results.append(r)
                print(f"{criterion.id}: before {r['before']} → "
                      f"{r['chosen']['operators'] if r['chosen'] else None} ({r['reason']}); {r['wall_s']:.0f} s")
                for c in r["candidates"]:
                    print(f"  {'+'.join(c['operators'])}: {c['status']} {c.get('reason') or c.get('violations') or ''} "
                          f"{c.get('metrics', {}).get('vfr')}")
            return results

    start = time.perf_counter()
    out["criteria"] = asyncio.run(run())
    out["wall_s"] = time.perf_counter() - start
    args.out.write_text(json.dumps(out, indent=1, default=str) + "\n")
    print(f"wrote {args.out} ({out['wall_s']:.0f} s)")


if __name__ == "__main__":
    main()
