"""DICE verdicts vs PandaLM's human preferences (three annotators, ties) with the embedded judge.

For N pairs of ``pandalm_testset_dev.json`` (a seeded subset), DICE judges response1 (A) against
response2 (B) on Qwen2.5-Coder-1.5B loaded with logits_all, so the label probabilities come from
real logprobs. Reported: accuracy against the annotators' majority, Cohen's kappa, confusion
matrix, accuracy of hard vs soft decisions, ECE/Brier of the confidence, the correlation of
score(B) − score(A) with each annotator's preference (DICE with its default hierarchy="enforce",
and — from the same calls — with hierarchy="advise", the paper's stage II alone), the accuracy
of the greedy single-order verdict (the discrete judge DICE is compared with), and the
thresholded-scalar baseline of DICE §4.2: the reference-free pointwise 0–4 grade of each answer,
Tie when the two grades differ by less than Δ = 0.15 of the range (``--no-pointwise`` skips it).
Position bias: the share of verdicts for the first-shown answer (response1), against the share
of pairs the annotators' majority gives to response1; with ``--swap`` also the share of each
order's verdicts that went to whichever answer was shown first.

The calls go to ``benchmarks/results/meta_pandalm.db`` (not in git; resumable, nested subsets).
Writes benchmarks/results/meta_pandalm.json. Usage:
python benchmarks/meta_pandalm.py [--pairs 60] [--swap] [--verdicts analysis|direct] [--seed 0] [--out F]
Also reported: the forced-choice reading (P(A) against P(B)) on the pairs whose annotators'
majority is not a tie — its accuracy, and the calibration of P(A) (ECE over 10 confidence bins,
Brier score).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path
from typing import Any

from assay import get_backend
from assay.analysis.meta import ameta, majority
from assay.data.datasets.adapters import read_pandalm
from assay.judge.runner import RunnerConfig
from assay.store import Store

HERE = Path(__file__).parent
DATA = HERE.parents[1] / "shared" / "data" / "pandalm_testset_dev.json"


def _plain(value: Any) -> Any:
    """The meta-evaluation's typed parts (runs, rows) as JSON: their pydantic dump."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--swap", action="store_true")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--store", type=Path, default=HERE / "results" / "meta_pandalm.db")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "meta_pandalm.json")
    parser.add_argument("--max-analysis-chars", type=int, default=240)
    parser.add_argument("--no-pointwise", action="store_true")
    parser.add_argument("--verdicts", choices=["analysis", "direct"], default="analysis",
                        help="direct: DICE's decision read from one forward pass, no written analysis")
    parser.add_argument("--focus", choices=["rag", "instruction"], default="rag",
                        help="DICE's focus (instruction: the decision that puts following the instruction first)")
    parser.add_argument("--judge-reference", action="store_true",
                        help="the judge writes its own answer first and compares both answers with it")
    args = parser.parse_args()
    metaset = read_pandalm(args.data).subset(args.pairs, args.seed)
    judge = get_backend("llamacpp/default", n_ctx=4096, logits_all=True)
    options = {"dice": {"swap": args.swap, "max_analysis_chars": args.max_analysis_chars,
                        **({"verdicts": "direct"} if args.verdicts == "direct" else {}),
                        **({"focus": args.focus} if args.focus != "rag" else {}),
                        **({"judge_reference": True} if args.judge_reference else {})},
               "pointwise": {"reference_free": True}}
    methods = ["dice"] if args.no_pointwise else ["dice", "pointwise"]
    started = time.perf_counter()
    result = asyncio.run(ameta(metaset, methods, judge, store=args.store, seed=args.seed, resamples=1000,
                               runner=RunnerConfig(progress=True), method_options=options))
    wall = time.perf_counter() - started
    # the same calls read with the paper's stage II as the only decider (no call is repeated)
    advise = None if args.verdicts == "direct" else asyncio.run(  # direct verdicts have no hierarchy to advise
        ameta(metaset, ["dice"], judge, store=args.store, seed=args.seed, resamples=1000,
              runner=RunnerConfig(progress=False), method_options={"dice": {**options["dice"], "hierarchy": "advise"}}))
    store = Store(args.store, create=False)
    rows = store.results(result["runs"]["dice"]["run_id"])
    by_id = {u.id: u for u in metaset.units}
    greedy_hits, greedy_n, first_wins = 0, 0, 0
    verdict_first = [r.details["verdict"] == "A" for r in rows if r.details.get("verdict")]
    order_first = [w for r in rows for w in r.details.get("first_position_won") or []]
    human_first = [majority(list(u.human.get("preference") or [])) == -1.0 for u in metaset.units]
    for row in rows:
        unit = by_id[str(row.items[0]["id"])]
        human = majority(list(unit.human.get("preference") or []))
        greedy = row.details.get("orders", [{}])[0].get("greedy")
        if human is None or greedy is None:
            continue
        greedy_n += 1
        greedy_hits += {"A": -1.0, "B": 1.0, "Tie": 0.0}[greedy] == human
        first_wins += greedy == "A"
    # the forced-choice reading (P(A) against P(B), the Tie mass left out) on the pairs the
    # annotators' majority did not call a tie: accuracy, and calibration of P(A) (ECE, 10 bins; Brier)
    forced: list[tuple[float, float]] = []
    for row in rows:
        human = majority(list(by_id[str(row.items[0]["id"])].human.get("preference") or []))
        p_a = row.details.get("forced_choice_a")
        if human in (-1.0, 1.0) and p_a is not None:
            forced.append((float(p_a), 1.0 if human == -1.0 else 0.0))
    forced_choice = {"n": len(forced), "accuracy": None, "ece": None, "brier": None}
    if forced:
        forced_choice["accuracy"] = statistics.fmean(float((p > 0.5) == (y == 1.0)) for p, y in forced if p != 0.5)
        bins: dict[int, list[tuple[float, float]]] = {}
        for p, y in forced:
            confidence, hit = max(p, 1 - p), float((p >= 0.5) == (y == 1.0))
            bins.setdefault(min(int(confidence * 10), 9), []).append((confidence, hit))
        forced_choice["ece"] = sum(len(b) / len(forced) * abs(statistics.fmean(c for c, _ in b)
                                                            - statistics.fmean(h for _, h in b)) for b in bins.values())
        forced_choice["brier"] = statistics.fmean((p - y) ** 2 for p, y in forced)
    calls = store.call_stats(sorted({k for r in rows for k in r.call_keys}))
    ties = [float(r.details["p_tie"]) for r in rows if "p_tie" in r.details]
    p_tie_mean = statistics.fmean(ties) if ties else None
    summary = {"benchmark": "meta_pandalm", "judge": "llamacpp/default (Qwen2.5-Coder-1.5B Q4_K_M, logits_all)",
               "pairs": len(metaset.units), "seed": args.seed, "swap": args.swap,
               "dice": result["verdict_agreement"]["dice"],
               "verdicts": args.verdicts, "focus": args.focus, "judge_reference": args.judge_reference,
               "forced_choice": forced_choice,
               "dice_hierarchy_advise": advise["verdict_agreement"]["dice"] if advise else None,
               "thresholded_scalar": result["verdict_agreement"].get("pointwise (thresholded)"),
               "position": {"verdict_for_response1_share": statistics.fmean(verdict_first) if verdict_first else None,
                            "humans_for_response1_share": statistics.fmean(human_first),
                            "per_order_first_shown_won_share": statistics.fmean(order_first) if order_first else None,
                            "orders_judged": len(order_first)},
               "greedy_single_order": {"n": greedy_n, "accuracy": greedy_hits / greedy_n if greedy_n else None,
                                       "first_position_share": first_wins / greedy_n if greedy_n else None},
               "correlation_rows": result["rows"], "human_agreement": result["human_agreement"],
               "system_ranking": result["system_ranking"], "judge_calls": calls, "runs": result["runs"],
               "wall_s": round(wall, 1),
               "signature": result["signature"], "p_tie_mean": p_tie_mean}
    args.out.write_text(json.dumps(summary, indent=2, ensure_ascii=False, default=_plain) + "\n")
    shown = ("pairs", "dice", "dice_hierarchy_advise", "forced_choice", "thresholded_scalar", "position",
             "greedy_single_order", "judge_calls", "wall_s")
    print(json.dumps({k: summary[k] for k in shown},
                     indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
