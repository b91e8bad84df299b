"""A DICE tournament over the PandaLM systems with the embedded judge, ranked against the humans.

PandaLM's test set compares five 7B models (bloom-7b, cerebras-gpt-6.7B, llama-7b, opt-7b,
pythia-6.9b) on 82 distinct instructions; 66 of them have an answer from all five. This
benchmark takes a seeded sample of those questions (``--questions``, default 8), gives every
system its answer (the first one in the file, when a system was recorded with two different
answers to one question), and plays:

1. a Swiss tournament (⌈log2 5⌉ + 1 = 4 rounds, 2 matches a round, one system sits out), then
2. the round-robin (10 matches) in the same store, which re-uses every Swiss match's calls,

with Qwen2.5-Coder-1.5B loaded with logits_all (probabilities from logprobs), once with DICE's
stage II as the only decider (hierarchy="advise") and once with the default hierarchy="enforce"
(the second costs no call: every match is judged in the first round-robin). The humans'
ranking is a Bradley–Terry fit over the annotators' majority preference on all 499 labelled
pairs (and, for reference, on the pairs of the sampled questions only). Reported: both
rankings, Kendall τ Swiss vs round-robin, each vs the humans, judge calls and wall time.

Writes benchmarks/results/tournament_pandalm.json; calls go to
benchmarks/results/tournament_pandalm.db (not in git; resumable). Usage:
python benchmarks/tournament_pandalm.py [--questions 8] [--seed 0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from pathlib import Path
from typing import Any

from assay import JudgeBackend, aevaluate, get_backend
from assay.analysis.meta import majority
from assay.analysis.stats import bradley_terry, correlation
from assay.core.types import Item
from assay.data.datasets.adapters import read_pandalm
from assay.judge.runner import RunnerConfig
from assay.methods.tournament import Tournament, TournamentConfig
from assay.methods.tournament.cli import tournament_ranking
from assay.store import Store

HERE = Path(__file__).parent
DATA = HERE.parents[1] / "shared" / "data" / "pandalm_testset_dev.json"


def answer_sets(path: Path) -> tuple[dict[str, dict[str, Item]], list[tuple[str, str, float, str]]]:
    """question → system → answer item, and the human-labelled comparisons (first system, second
    system, first's score from the majority preference, question)."""
    metaset = read_pandalm(path)
    by_key = {i.key: i for i in metaset.items}
    answers: dict[str, dict[str, Item]] = {}
    human: list[tuple[str, str, float, str]] = []
    for unit in metaset.units:
        first, second = (by_key[k] for k in unit.keys)
        question = first.query
        for item in (first, second):
            answers.setdefault(question, {}).setdefault(str(item.system), item)
        verdict = majority(list(unit.human.get("preference") or []))
        if verdict is not None:
            human.append((str(first.system), str(second.system), {-1.0: 1.0, 0.0: 0.5, 1.0: 0.0}[verdict], question))
    return answers, human


def tau(order: list[str], other: list[str]) -> float | None:
    rank = {s: i for i, s in enumerate(other)}
    return correlation([rank[s] for s in order], list(range(len(order))), "kendall", resamples=0).r


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--store", type=Path, default=HERE / "results" / "tournament_pandalm.db")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "tournament_pandalm.json")
    parser.add_argument("--max-analysis-chars", type=int, default=240)
    args = parser.parse_args()
    answers, human = answer_sets(args.data)
    systems = sorted({s for table in answers.values() for s in table})
    complete = sorted(q for q, table in answers.items() if len(table) == len(systems))
    chosen = sorted(random.Random(args.seed).sample(complete, args.questions))
    items = [Item(id=f"q{n}", query=q, response=answers[q][s].response, system=s)
             for n, q in enumerate(chosen) for s in systems]
    judge = get_backend("llamacpp/default", n_ctx=4096, logits_all=True)
    store = Store(args.store)
    out: dict[str, Any] = {"benchmark": "tournament_pandalm",
                           "judge": "llamacpp/default (Qwen2.5-Coder-1.5B Q4_K_M, logits_all)",
                           "systems": systems, "questions": len(chosen), "seed": args.seed}
    for hierarchy in ("advise", "enforce"):  # the second reuses every call of the first
        out[hierarchy] = play(items, systems, judge, store, hierarchy, args.max_analysis_chars)
    human_all = bradley_terry([(a, b, s) for a, b, s, _ in human], resamples=1000, seed=0)
    human_sub = bradley_terry([(a, b, s) for a, b, s, q in human if q in set(chosen)], resamples=1000, seed=0)
    orders = {"humans_all_pairs": sorted(systems, key=lambda s: -human_all.ratings[s]),
              "humans_sampled_questions": sorted(systems, key=lambda s: -human_sub.ratings.get(s, float("-inf")))}
    out["humans"] = {"all_pairs": {"pairs": len(human), "ranking": orders["humans_all_pairs"],
                                   "bt": human_all.ratings, "ci": human_all.ci},
                     "sampled_questions": {"pairs": sum(q in set(chosen) for *_, q in human),
                                           "ranking": orders["humans_sampled_questions"], "bt": human_sub.ratings}}
    out["humans_sampled_vs_all_tau"] = tau(orders["humans_sampled_questions"], orders["humans_all_pairs"])
    for hierarchy in ("advise", "enforce"):
        played = out[hierarchy]
        rankings = {mode: [r["system"] for r in played[mode]["ranking"]] for mode in ("swiss", "round-robin")}
        played["kendall_tau"] = {
            "swiss_vs_round_robin": tau(rankings["swiss"], rankings["round-robin"]),
            "swiss_vs_humans": tau(rankings["swiss"], orders["humans_all_pairs"]),
            "round_robin_vs_humans": tau(rankings["round-robin"], orders["humans_all_pairs"]),
            "swiss_elo_vs_humans": tau(played["swiss"]["elo_order"], orders["humans_all_pairs"])}
        print(hierarchy, json.dumps({"swiss": rankings["swiss"], "round_robin": rankings["round-robin"],
                                     "humans": orders["humans_all_pairs"], "kendall_tau": played["kendall_tau"],
                                     "calls": {m: played[m]["judge_calls"] for m in ("swiss", "round-robin")}},
                                    indent=1))
    args.out.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {args.out}")


def play(items: list[Item], systems: list[str], judge: JudgeBackend, store: Store, hierarchy: str,
         max_analysis_chars: int) -> dict[str, Any]:
    """Swiss, then round-robin, with one hierarchy setting: rankings, matches, calls, wall time."""
    out: dict[str, Any] = {}
    for mode in ("swiss", "round-robin"):
        config = TournamentConfig(mode=mode, max_analysis_chars=max_analysis_chars, hierarchy=hierarchy)
        method = Tournament(config)
        started = time.perf_counter()
        result = asyncio.run(aevaluate(items, method, judge, store=store, resume=True,
                                       runner=RunnerConfig(progress=True)))
        wall = time.perf_counter() - started
        ranking = tournament_ranking(store, result.run_id, method, items)
        calls = result.summary()["judge_calls"]
        out[mode] = {"ranking": ranking["ranking"], "matches": len(ranking["matches"]),
                     "comparisons": ranking["comparisons"], "judge_calls": calls, "wall_s": round(wall, 1),
                     "elo_order": sorted(systems, key=lambda s: -next(r["elo"] for r in ranking["ranking"]
                                                                       if r["system"] == s))}
    return out


if __name__ == "__main__":
    main()
