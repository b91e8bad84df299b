"""How the embedded judge does as PReMISE's repair assistant L and predictor P (Algorithm 2,
App. C.1–C.2), apart from the search: for each criterion of ``premise_refine.py``'s rubric, its
failure packet from that benchmark's calibration pairs, L asked for each of the seven Table 8
operators alone, and P for every pair of operators among ``--pairs-of``. Records whether each
reply parsed, the SB-PLR violations (App. C.1) of each revision, P's predicted VFR, and the time.
With the 1.5B model as attacker the adversarial protocol found no verified exploit on the held-out
pairs (``premise_refine.json``: VFR 0 for both criteria), so Algorithm 2 had nothing to lower and
never called L; this probe measures the step it would have run.
Store ``results/premise_refine.db`` (shared, not in git); writes ``results/premise_repair_probe.json``.
Usage: python benchmarks/premise_repair_probe.py [--pairs-of do_not_reward,cap,fp_anchor]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

from assay import JudgeSession, get_backend
from assay.judge.runner import RunnerConfig
from assay.methods.premise.audit import Audit, AuditConfig
from assay.methods.premise.files import RubricSet, load_rubric, read_preference_pairs
from assay.methods.premise.refine import OPERATORS, RefineConfig, Refiner, echoes_instructions, sb_plr, split_pairs
from assay.store import Store

HERE = Path(__file__).parent


def main() -> None:
    sys.path.insert(0, str(HERE.parent))
    from benchmarks.premise_refine import DATA, HAND  # the same rubric and pairs as the search benchmark

    parser = argparse.ArgumentParser()
    parser.add_argument("--skip", type=int, default=20)
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--attacks", type=int, default=3)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--max-chars", type=int, default=800)
    parser.add_argument("--attack-tokens", type=int, default=200)
    parser.add_argument("--pairs-of", default="do_not_reward,cap,fp_anchor")
    parser.add_argument("--store", type=Path, default=HERE / "results" / "premise_refine.db")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "premise_repair_probe.json")
    args = parser.parse_args()
    pairs, _ = read_preference_pairs(DATA)
    pairs = [p.model_copy(update={"chosen": p.chosen[: args.max_chars], "rejected": p.rejected[: args.max_chars]})
             for p in pairs][args.skip: args.skip + args.pairs]
    rubric = RubricSet(criteria=[*load_rubric(HERE / "results" / "premise_haluquestqa.rubric.yaml").criteria, HAND])
    refiner = Refiner(Audit(AuditConfig(attacks=args.attacks, runs=args.runs, paraphrases=0,
                                        attack_tokens=args.attack_tokens)), RefineConfig())
    judge = get_backend("llamacpp/default", n_ctx=4096)
    store = Store(args.store)
    calibration_pairs, held = split_pairs(pairs, 0.5, 0)
    out: dict[str, Any] = {"judge": "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (llama.cpp, CPU)", "criteria": []}

    async def run() -> None:
        async with JudgeSession("bench-premise-repair-probe", judge, store=store, runner=RunnerConfig(progress=False),
                                manifest={"args": {k: str(v) for k, v in sorted(vars(args).items())}}) as session:
            client = session.client
            for criterion in rubric.criteria:
                before = await refiner.scorecard(criterion, held, client, attacker=None, verifier=None)
                calibration = await refiner.scorecard(criterion, calibration_pairs, client, attacker=None,
                                                      verifier=None)
                packet = refiner.packet(calibration, calibration_pairs)
                data = refiner.data_texts(calibration_pairs, calibration)
                entry: dict[str, Any] = {"id": criterion.id, "packet": packet, "L": [], "P": []}

                def budget(draft: Any, data: list[str] = data, original: str = criterion.description) -> list[str]:
                    return sb_plr(draft, data_texts=data, allowed=original) + echoes_instructions(draft, original)

                singletons = []
                for op in OPERATORS:
                    start = time.perf_counter()
                    draft, _, failed = await refiner.propose(criterion, refiner.public(before), packet, (op,), client,
                                                             budget=budget)
                    row: dict[str, Any] = {"operators": [op], "s": round(time.perf_counter() - start, 1)}
                    if draft is None:
                        row["unparsed"] = failed
                    else:
                        row.update(text=draft.render(), violations=budget(draft))
                    entry["L"].append(row)
                    singletons.append({"operators": [op], "violations": row.get("violations") or ["unparsed"],
                                       "text": row.get("text", "")})
                    print(criterion.id, op, row.get("violations", row.get("unparsed")), f"{row['s']} s")
                for subset in itertools.combinations(args.pairs_of.split(","), 2):
                    start = time.perf_counter()
                    draft, predicted, failed = await refiner.propose(criterion, refiner.public(before), packet, subset,
                                                                     client, singletons=singletons, budget=budget)
                    row = {"operators": list(subset), "s": round(time.perf_counter() - start, 1),
                           "predicted_vfr": predicted}
                    if draft is None:
                        row["unparsed"] = failed
                    else:
                        row.update(text=draft.render(), violations=budget(draft))
                    entry["P"].append(row)
                    print(criterion.id, "+".join(subset), predicted, row.get("violations", row.get("unparsed")))
                out["criteria"].append(entry)

    start = time.perf_counter()
    asyncio.run(run())
    out["wall_s"] = time.perf_counter() - start
    rows = [r for c in out["criteria"] for r in c["L"] + c["P"]]
    out["summary"] = {"calls": len(rows), "parsed": sum("unparsed" not in r for r in rows),
                      "within_budget": sum(r.get("violations") == [] for r in rows),
                      "violations": sorted({v.split(" ")[0] for r in rows for v in r.get("violations", [])})}
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out["summary"]), f"{out['wall_s']:.0f} s")


if __name__ == "__main__":
    main()
