"""DICE's pairwise strategies on LLMBar dev pairs, natural and adversarial, on the embedded judge
(issue 47): which decision prompt keeps a small judge from preferring polish over following the
instruction.

Strategies, each over both orders with the forced choice, direct verdicts (one label question per
order; DICE's written-analysis mode took minutes a pair on this judge and is not run here):
  rag                    DICE's direct decision (accuracy against reference and passages first)
  instruction            rules that put following the instruction first, no credit for length or
                         polish (LLMBar's "Rules", Zeng et al., arXiv:2310.07641)
  instruction+reference  the same, after the judge writes its own answer to the instruction
                         (LLMBar's self-generated reference)
The first ``--pairs`` pairs of each set (file order, nothing picked), through the public API
(``assay.evaluate``), one store per strategy so that a stopped run resumes. Reported per set and
strategy: agreement with the LLMBar label (a Tie counts as a miss; LLMBar has no ties), the share
of single orders the first-shown answer won, the median forced-choice margin, seconds per pair
(run alone on the machine), calls and tokens. Writes ``results/llmbar_dice.json``.
Usage: python benchmarks/llmbar_dice.py [--pairs 10] [--strategies rag,instruction,...]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import assay
from assay.judge.runner import RunnerConfig

HERE = Path(__file__).parent
DATA = HERE.parents[1] / "shared" / "data" / "llmbar_dev"
SETS = ("natural", "neighbor", "gptinst", "manual")
STRATEGIES: dict[str, dict[str, Any]] = {
    "rag": {},
    "instruction": {"focus": "instruction"},
    "instruction+reference": {"focus": "instruction", "judge_reference": True},
    "rag+reference": {"judge_reference": True},
}


def measure(rows: list[dict[str, Any]], seconds: float, calls: int, prompt: int, completion: int) -> dict[str, Any]:
    scored = [r for r in rows if r.get("verdict") is not None]
    agree = sum(1 for r in scored if r["verdict"] == (r.get("human") or {}).get("winner"))
    firsts = [w for r in scored for w in r.get("first_position_won") or []]
    margins = [r["forced_choice_margin"] for r in scored if r.get("forced_choice_margin") is not None]
    return {"pairs": len(rows), "scored": len(scored), "agree": agree,
            "agreement": agree / len(rows) if rows else None,
            "ties": sum(1 for r in scored if r["verdict"] == "Tie"),
            "first_shown_won": sum(firsts), "single_orders": len(firsts),
            "first_shown_share": sum(firsts) / len(firsts) if firsts else None,
            "median_margin": statistics.median(margins) if margins else None,
            "seconds_per_pair": seconds / len(rows) if rows else None,
            "calls": calls, "prompt_tokens": prompt, "completion_tokens": completion}


def versus_rag(hits: dict[tuple[str, str], dict[str, int]], strategies: list[str],
               resamples: int = 2000) -> dict[str, Any]:
    """Each strategy's agreement minus DICE's default decision's on the same pairs (natural and
    adversarial apart), with a paired bootstrap 95% interval over pairs (seed 0)."""
    rng = random.Random(0)
    table: dict[str, dict[str, Any]] = {}
    lines = []
    for kind in ("natural", "adversarial"):
        keys = [k for k in hits if (k[0] == "natural") == (kind == "natural")]
        for strategy in strategies:
            if strategy == "rag":
                continue
            diffs = [hits[k][strategy] - hits[k]["rag"] for k in keys if strategy in hits[k] and "rag" in hits[k]]
            if not diffs:
                continue
            boots = sorted(sum(rng.choice(diffs) for _ in diffs) / len(diffs) for _ in range(resamples))
            row = {"pairs": len(diffs), "difference": sum(diffs) / len(diffs),
                   "ci95": [boots[int(0.025 * resamples)], boots[int(0.975 * resamples) - 1]]}
            table.setdefault(strategy, {})[kind] = row
            lines.append(f"{strategy} vs rag, {kind}: {row['difference']:+.3f} [{row['ci95'][0]:+.3f}, "
                         f"{row['ci95'][1]:+.3f}] over {len(diffs)} pairs")
    return {"table": table, "lines": lines}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=10, help="the first N pairs of each set")
    parser.add_argument("--strategies", default="rag,instruction,instruction+reference")
    parser.add_argument("--judge", default="llamacpp/default")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--stores", type=Path, default=None, help="folder for the stores (default: a temporary one)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "llmbar_dice.json")
    args = parser.parse_args()
    strategies = [s for s in args.strategies.split(",") if s]
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown:
        raise SystemExit(f"unknown strategies {unknown}; known: {', '.join(STRATEGIES)}")
    results: dict[str, dict[str, Any]] = {}
    hits: dict[tuple[str, str], dict[str, int]] = {}  # (set, pair id) → strategy → agreed (0/1)
    with tempfile.TemporaryDirectory() as tmp:
        stores = args.stores or Path(tmp)
        stores.mkdir(parents=True, exist_ok=True)
        subsets: dict[str, Path] = {}
        for name in SETS:
            lines = (args.data / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()[: args.pairs]
            subsets[name] = Path(tmp) / f"{name}.jsonl"
            subsets[name].write_text("\n".join(lines) + "\n", encoding="utf-8")
        for strategy in strategies:
            results[strategy] = {}
            for name, path in subsets.items():
                started = time.perf_counter()
                result = assay.evaluate(str(path), "dice", args.judge, store=str(stores / f"{strategy}.db"),
                                        runner=RunnerConfig(progress=False), verdicts="direct",
                                        **STRATEGIES[strategy])
                seconds = time.perf_counter() - started
                assert isinstance(result, assay.EvalResult)
                usage = result.summary()["judge_calls"]
                row = measure(result.records(), seconds, int(usage.get("calls", 0)),
                              int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)))
                results[strategy][name] = row
                for r in result.records():
                    hits.setdefault((name, str(r["id"])), {})[strategy] = int(
                        r.get("verdict") == (r.get("human") or {}).get("winner"))
                print(f"{strategy:22s} {name:9s} agree {row['agree']}/{row['pairs']}  first-shown won "
                      f"{row['first_shown_won']}/{row['single_orders']}  median margin "
                      f"{row['median_margin'] if row['median_margin'] is None else round(row['median_margin'], 2)}"
                      f"  {row['seconds_per_pair']:.1f} s/pair", flush=True)
    paired = versus_rag(hits, strategies) if "rag" in strategies else {}
    for line in paired.get("lines", []):
        print(line)
    out = {"judge": args.judge, "paired_versus_rag": paired.get("table", {}), "pairs_per_set": args.pairs,
           "verdicts": "direct, both orders, forced choice",
           "data": "LLMBar dev split (natural; adversarial: neighbor, gptinst, manual), first N pairs of each file",
           "results": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
