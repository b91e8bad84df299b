"""Swiss vs round-robin on synthetic systems (DICE §3.3): does a Swiss tournament with
⌈log2 N⌉ + 1 rounds rank N systems as the full round-robin does, with far fewer matches?

N systems with strengths evenly spread over ``spread`` Elo points; a noisy judge: on each of Q
questions of a match, A's DICE score is 1 with probability E_A (the Elo expectation of the true
strengths), else 0, and with probability ``noise`` a coin flip instead. Swiss uses assay's own
pairing and update (:mod:`assay.methods.tournament`); the round-robin ranks by total score over
all pairs with the same judge draws. Kendall τ of each against the other and against the truth,
averaged over seeds. Writes benchmarks/results/swiss_sim.json.
Usage: python benchmarks/swiss_sim.py [--seeds 20] [--questions 20]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
from pathlib import Path

from scipy.stats import kendalltau

from assay.analysis.stats import bradley_terry
from assay.methods.tournament import elo_after, swiss_pairs

RESULTS = Path(__file__).parent / "results" / "swiss_sim.json"


def simulate(n: int, seed: int, questions: int, noise: float, spread: float, k: float) -> dict:
    rng = random.Random(seed)
    systems = [f"s{i:02d}" for i in range(n)]
    strength = {s: spread * i / (n - 1) for i, s in enumerate(systems)}
    cache: dict[tuple[str, str], float] = {}

    def play(a: str, b: str) -> float:
        key = (min(a, b), max(a, b))
        if key not in cache:  # one draw per pair, shared by both tournaments (cached judgments)
            expected = 1 / (1 + 10 ** ((strength[key[1]] - strength[key[0]]) / 400))
            wins = 0.0
            for _ in range(questions):
                wins += rng.random() < 0.5 if rng.random() < noise else rng.random() < expected
            cache[key] = wins / questions
        return cache[key] if a == key[0] else 1 - cache[key]

    rounds = math.ceil(math.log2(n)) + 1
    played: list[tuple[int, str, str, float, int]] = []
    met: set[frozenset[str]] = set()
    for r in range(rounds):
        ratings = elo_after(systems, played, k=k, upset_weight=0.0, initial=1500.0)
        for a, b in swiss_pairs(ratings, met):
            met.add(frozenset((a, b)))
            played.append((r, a, b, play(a, b), questions))
    swiss = elo_after(systems, played, k=k, upset_weight=0.0, initial=1500.0)
    bt = bradley_terry([(a, b, score) for _, a, b, score, _ in played], resamples=0).ratings
    total = dict.fromkeys(systems, 0.0)
    for i, a in enumerate(systems):
        for b in systems[i + 1:]:
            score = play(a, b)
            total[a] += score
            total[b] += 1 - score
    truth = [strength[s] for s in systems]
    return {"swiss_matches": len(played), "round_robin_matches": n * (n - 1) // 2,
            "tau_swiss_vs_round_robin": kendalltau([swiss[s] for s in systems], [total[s] for s in systems]).statistic,
            "tau_swiss_vs_truth": kendalltau([swiss[s] for s in systems], truth).statistic,
            "tau_swiss_bt_vs_round_robin": kendalltau([bt[s] for s in systems], [total[s] for s in systems]).statistic,
            "tau_swiss_bt_vs_truth": kendalltau([bt[s] for s in systems], truth).statistic,
            "tau_round_robin_vs_truth": kendalltau([total[s] for s in systems], truth).statistic}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--noise", type=float, default=0.2)
    parser.add_argument("--spread", type=float, default=800.0)
    parser.add_argument("--k", type=float, default=32.0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    rows = []
    for n in (8, 32):
        runs = [simulate(n, seed, args.questions, args.noise, args.spread, args.k) for seed in range(args.seeds)]
        budget = (n // 2) * (math.ceil(math.log2(n)) + 1)
        row = {"systems": n, "seeds": args.seeds, "matches_budget": budget,
               "swiss_matches": statistics.fmean(r["swiss_matches"] for r in runs),
               "round_robin_matches": runs[0]["round_robin_matches"]}
        for key in ("tau_swiss_vs_round_robin", "tau_swiss_vs_truth", "tau_swiss_bt_vs_round_robin",
                    "tau_swiss_bt_vs_truth", "tau_round_robin_vs_truth"):
            row[key] = statistics.fmean(r[key] for r in runs)
        row["matches_saved"] = 1 - row["swiss_matches"] / row["round_robin_matches"]
        rows.append(row)
        print(json.dumps(row))
    result = {"benchmark": "swiss_sim", "questions_per_match": args.questions, "noise": args.noise,
              "spread_elo": args.spread, "k": args.k, "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
