"""Calibration of direct verdicts against per-claim human labels (issue 30, item 3).

Direct verdicts give every element a probability (``p_judge``, the judge's P(yes) as its next
token). The RAGChecker pairs carry one label per answer, not per verdict, so they cannot say
whether a 0.8 means "right four times in five". ExpertQA can: an expert marked each claim of an
answer as completely, partly or not supported by the evidence cited for it. This benchmark asks
DeCE's element-verification question in its direct form — the same prompt file, rules and
lettered reference the method sends — with the claim as the statement and its cited evidence as
the reference, and compares P(yes) with the expert's label:

- positive: support ``Complete``; negative: ``Incomplete``, ``Partial`` or ``Missing``; ``N/A``
  and claims without evidence are left out;
- ECE (10 equal-width bins), Brier score (and the Brier score of always answering the base rate),
  AUROC, accuracy at 0.5, the base rate, and the reliability bins. (Claims marked ``Missing`` have
  no evidence to check against, so they drop out with the claims without evidence.)

A seeded sample of claims (``--claims``, seed ``--seed``), each claim's evidence cut to its first
``--chars`` characters. The store (``--store``, not in git) caches every call, so a re-run only
pays for new claims. Writes ``results/calibration_expertqa.json``.
Usage: python benchmarks/calibration_expertqa.py [--claims 120] [--chars 1200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from pathlib import Path
from typing import Any

from sklearn.metrics import roc_auc_score

from assay import JudgeSession
from assay.analysis.stats import brier, ece
from assay.judge.direct import ask, lettered
from assay.judge.prompts import fence, numbered
from assay.judge.runner import RunnerConfig
from assay.judge.text import split_sentences
from assay.methods.dece import DeCE, DeCEConfig
from assay.store import Store

HERE = Path(__file__).parent
DATA = HERE.parents[1] / "shared" / "data" / "expertqa_rand_test.jsonl"
NEGATIVE = {"Incomplete", "Partial", "Missing"}


def claims(path: Path, chars: int) -> list[dict[str, Any]]:
    """Every claim with a support label other than N/A and some evidence text."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        for system, answer in record["answers"].items():
            for n, claim in enumerate(answer.get("claims") or []):
                support = claim.get("support")
                evidence = claim.get("evidence") or []
                if isinstance(evidence, str):
                    evidence = [evidence]
                text = "\n".join(e for e in evidence if isinstance(e, str)).strip()
                if support not in NEGATIVE | {"Complete"} or not text or not claim.get("claim_string"):
                    continue
                out.append({"id": f"{record['question'][:40]}|{system}|{n}", "claim": claim["claim_string"],
                            "evidence": text[:chars], "support": support,
                            "field": (record.get("metadata") or {}).get("field") or "unknown"})
    return out


def summary(p: list[float], y: list[int]) -> dict[str, Any]:
    bins = []
    for k in range(10):
        lo, hi = k / 10, (k + 1) / 10
        inside = [(pi, yi) for pi, yi in zip(p, y, strict=True) if lo <= pi < hi or (k == 9 and pi == 1.0)]
        if inside:
            bins.append({"bin": [lo, hi], "n": len(inside), "mean_p": sum(a for a, _ in inside) / len(inside),
                         "positive_share": sum(b for _, b in inside) / len(inside)})
    return {"n": len(y), "base_rate": sum(y) / len(y), "mean_p": sum(p) / len(p),
            "ece": ece(p, y), "brier": brier(p, y),
            "brier_of_base_rate": brier([sum(y) / len(y)] * len(y), y),
            "auroc": roc_auc_score(y, p) if 0 < sum(y) < len(y) else None,
            "accuracy_at_0_5": sum((pi >= 0.5) == bool(yi) for pi, yi in zip(p, y, strict=True)) / len(y),
            "reliability": bins}


async def run(sample: list[dict[str, Any]], store: Store) -> list[float | None]:
    method = DeCE(DeCEConfig(verdicts="direct"))
    prompt = method.prompts["element_direct"]
    rules = numbered(method.domain["verification_rules"])
    out: list[float | None] = []
    async with JudgeSession("bench-calibration-expertqa", "llamacpp/default", store=store,
                            runner=RunnerConfig(progress=False), judge_options={"n_ctx": 4096},
                            manifest={"claims": [c["claim"] for c in sample]}) as session:
        for k, c in enumerate(sample, 1):
            reference = fence("reference", lettered(split_sentences(c["evidence"])))
            messages = prompt.render(expert=str(method.domain["expert"]), rules=rules, reference=reference,
                                     statement=c["claim"])
            probs, _key, problem = await ask(session.client, messages, metric="precision")
            out.append(None if probs is None else probs["yes"])
            if problem is not None:
                print(f"claim {k}: Unscored: {problem.reason}")
            if k % 20 == 0:
                print(f"{k}/{len(sample)} claims", flush=True)
    return out


def scored_sample(data: Path, chars: int, claims_n: int, seed: int,
                  store: Path) -> tuple[list[dict[str, Any]], list[tuple[float, dict[str, Any]]], float]:
    """A seeded sample of claims, each with its direct P(yes) (Unscored ones left out), and the wall
    time of the judge calls. Shared with align_expertqa.py."""
    pool = claims(data, chars)
    sample = random.Random(seed).sample(pool, min(claims_n, len(pool)))
    start = time.perf_counter()
    probs = asyncio.run(run(sample, Store(store)))
    wall = time.perf_counter() - start
    return sample, [(p, c) for p, c in zip(probs, sample, strict=True) if p is not None], wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--claims", type=int, default=120)
    parser.add_argument("--chars", type=int, default=1200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--store", type=Path, default=HERE / "results" / "calibration_expertqa.db")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "calibration_expertqa.json")
    args = parser.parse_args()
    sample, scored, wall = scored_sample(args.data, args.chars, args.claims, args.seed, args.store)
    p_all = [p for p, _ in scored]
    y_all = [int(c["support"] == "Complete") for _, c in scored]
    out = {"judge": "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (llama.cpp, CPU)", "question": "DeCE element_direct",
           "claims": len(sample), "unscored": len(sample) - len(scored), "chars": args.chars, "seed": args.seed,
           "pool": len(claims(args.data, args.chars)), "labels": {s: sum(c["support"] == s for c in sample)
                                         for s in ("Complete", "Incomplete", "Partial", "Missing")},
           "complete_vs_rest": summary(p_all, y_all),
           "wall_s": wall, "seconds_per_claim": wall / len(sample)}
    args.out.write_text(json.dumps(out, indent=1))
    for name in ("complete_vs_rest",):
        s = out[name]
        auroc = "—" if s["auroc"] is None else f"{s['auroc']:.2f}"
        print(f"{name}: n {s['n']}, base rate {s['base_rate']:.2f}, mean P(yes) {s['mean_p']:.2f}, "
              f"ECE {s['ece']:.3f}, Brier {s['brier']:.3f} (base rate alone {s['brier_of_base_rate']:.3f}), "
              f"AUROC {auroc}, accuracy@0.5 {s['accuracy_at_0_5']:.2f}")
    print(f"wrote {args.out} in {wall:.0f} s")


if __name__ == "__main__":
    main()
