"""LeMAJ against expert labels with the embedded judge: ExpertQA claims and HaluQuestQA spans.

1. ExpertQA (``expertqa_rand_test.jsonl``): a seeded subset of answers, each checked against the
   evidence passages of its claims (the item's document). Answer level: ``assay meta``'s table
   (LeMAJ correctness / precision / recall / F1 vs the expert's share of correct claims, of
   supported claims, and usefulness). Claim level: each expert claim is matched to the judge's
   LDPs by sentence embeddings (all-MiniLM-L6-v2, threshold 0.6); the expert's correctness
   (definitely or probably correct vs probably or definitely incorrect) against the tag of the
   matched LDP (incorrect vs not): accuracy, Cohen's κ, confusion, and how many claims matched.
2. HaluQuestQA spans (``haluquestqa_spans_dev.tsv``): answers to open-domain questions with no
   document, so LeMAJ runs with ``without_document=knowledge``. Each expert span (factuality,
   irrelevance) is located in its answer; it is caught when an LDP overlapping it carries the
   corresponding tag (incorrect, irrelevant). Incompleteness: answers with an expert
   "incomplete" span vs answers where the judge added a missing point. False alarms: LDPs
   tagged incorrect / irrelevant in answers without such an expert span.

Judge: Qwen2.5-Coder-1.5B Q4_K_M (llama-cpp-python, n_ctx 4096). Calls go to
``benchmarks/results/meta_lemaj.db`` (not in git; resumable). Writes
``benchmarks/results/meta_lemaj.json``. Usage:
python benchmarks/meta_lemaj.py [--expertqa 20] [--haluquestqa 20] [--seed 0]
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from assay import get_backend
from assay.analysis.meta import ameta
from assay.analysis.stats import cohen_kappa
from assay.data.datasets.adapters import MetaSet, read_expertqa, read_haluquestqa
from assay.exchange.export import export_rows
from assay.judge.embeddings import match
from assay.judge.runner import RunnerConfig
from assay.store import Store

HERE = Path(__file__).parent
DATA = HERE.parents[1] / "shared" / "data"
INCORRECT = {"Probably incorrect", "Definitely incorrect"}
CORRECT = {"Definitely correct", "Probably correct"}


def claim_level(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Expert claim correctness vs the tag of the LDP each claim matches."""
    pairs: list[tuple[str, str]] = []
    claims = matched = 0
    for row in rows:
        labelled = [c for c in (row.get("metadata") or {}).get("claims", [])
                    if c.get("correctness") in CORRECT | INCORRECT and c.get("claim_string")]
        ldps = [d for d in row.get("ldps") or [] if d["tag"] != "missing"]
        claims += len(labelled)
        for i, j, _ in match([c["claim_string"] for c in labelled], [d["text"] for d in ldps], "embeddings"):
            matched += 1
            expert = "incorrect" if labelled[i]["correctness"] in INCORRECT else "correct"
            judge = "incorrect" if ldps[j]["tag"] == "incorrect" else "correct"
            pairs.append((expert, judge))
    confusion = {e: {j: sum(1 for a, b in pairs if a == e and b == j) for j in ("correct", "incorrect")}
                 for e in ("correct", "incorrect")}
    try:
        kappa = cohen_kappa([a for a, _ in pairs], [b for _, b in pairs]) if pairs else None
    except ValueError:
        kappa = None
    return {"claims": claims, "matched": matched, "accuracy": sum(a == b for a, b in pairs) / len(pairs)
            if pairs else None, "cohen_kappa": kappa, "confusion_expert_to_judge": confusion}


def _literal(value: str | None) -> list[str]:
    if not value or not value.strip():
        return []
    try:
        parsed = ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return []
    return [str(v) for v in parsed] if isinstance(parsed, list) else []


def expert_spans(metaset: MetaSet) -> dict[str, dict[str, list[str]]]:
    """answer key → criterion → the expert's spans in that answer."""
    spans: dict[str, dict[str, list[str]]] = {}
    by_key = {i.key: i for i in metaset.items}
    for unit in metaset.units:
        first = by_key[unit.keys[0]]
        for criterion, info in (first.metadata.get("expert_spans") or {}).items():
            for label, span in zip(_literal(info.get("label")), _literal(info.get("span")), strict=False):
                target = unit.keys[0] if label.strip() == "answer1" else unit.keys[1]
                spans.setdefault(target, {}).setdefault(criterion, []).append(span)
    return spans


def span_level(rows: list[dict[str, Any]], spans: dict[str, dict[str, list[str]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for criterion, tag in (("factuality", "incorrect"), ("irrelevance", "irrelevant")):
        located = caught = 0
        alarms, clean_answers = 0, 0
        for row in rows:
            key = f"{row['id']}::{row['system']}"
            response = row.get("response") or ""
            ldps = row.get("ldps") or []
            mine = spans.get(key, {}).get(criterion, [])
            if not mine:
                clean_answers += 1
                alarms += any(d["tag"] == tag for d in ldps)
            for span in mine:
                start = response.find(span.strip()[:60])
                if start < 0:
                    continue
                located += 1
                end = start + len(span.strip())
                caught += any(d["tag"] == tag and d["start"] is not None and d["start"] < end and d["end"] > start
                              for d in ldps)
        out[criterion] = {"expert_spans_located": located, "caught": caught,
                          "recall": caught / located if located else None,
                          "answers_without_span": clean_answers,
                          "of_which_judge_flagged": alarms}
    with_gap = [r for r in rows if spans.get(f"{r['id']}::{r['system']}", {}).get("incomplete_ans")]
    without = [r for r in rows if not spans.get(f"{r['id']}::{r['system']}", {}).get("incomplete_ans")]
    out["incompleteness"] = {
        "answers_with_expert_span": len(with_gap),
        "of_which_judge_added_missing": sum(any(d["tag"] == "missing" for d in r.get("ldps") or []) for r in with_gap),
        "answers_without": len(without),
        "of_which_judge_added_missing_": sum(any(d["tag"] == "missing" for d in r.get("ldps") or []) for r in without)}
    out["tags"] = dict(Counter(d["tag"] for r in rows for d in r.get("ldps") or []))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--expertqa", type=int, default=20, help="ExpertQA answers")
    parser.add_argument("--haluquestqa", type=int, default=10, help="HaluQuestQA pairs (two answers each)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--store", type=Path, default=HERE / "results" / "meta_lemaj.db")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "meta_lemaj.json")
    args = parser.parse_args()
    judge = get_backend("llamacpp/default", n_ctx=4096)
    store = Store(args.store)
    summary: dict[str, Any] = {"benchmark": "meta_lemaj", "judge": "llamacpp/default (Qwen2.5-Coder-1.5B Q4_K_M)",
                               "seed": args.seed}
    full = read_expertqa(DATA / "expertqa_rand_test.jsonl")
    usable = [u for u in full.units if next(i for i in full.items if i.key == u.id).document and u.human]
    full.units = usable
    expertqa = full.subset(args.expertqa, args.seed)
    started = time.perf_counter()
    result = asyncio.run(ameta(expertqa, ["lemaj"], judge, store=store, seed=args.seed, resamples=1000,
                               runner=RunnerConfig(progress=True)))
    rows = export_rows(store, result["runs"]["lemaj"]["run_id"])
    summary["expertqa"] = {"answers": len(expertqa.units), "wall_s": round(time.perf_counter() - started, 1),
                           "run": result["runs"]["lemaj"], "answer_level": result["rows"],
                           "claim_level": claim_level(rows),
                           "tags": dict(Counter(d["tag"] for r in rows for d in r.get("ldps") or [])),
                           "located": dict(Counter(str(d.get("located")) for r in rows for d in r.get("ldps") or [])),
                           "document_view": dict(Counter(r["document_view"]["strategy"] for r in rows
                                                         if r.get("document_view")))}
    halu = read_haluquestqa(DATA / "haluquestqa_spans_dev.tsv").subset(args.haluquestqa, args.seed)
    started = time.perf_counter()
    result = asyncio.run(ameta(halu, ["lemaj"], judge, store=store, seed=args.seed, resamples=1000,
                               runner=RunnerConfig(progress=True),
                               method_options={"lemaj": {"without_document": "knowledge", "domain": "general"}}))
    rows = export_rows(store, result["runs"]["lemaj"]["run_id"])
    summary["haluquestqa"] = {"answers": len(halu.items), "wall_s": round(time.perf_counter() - started, 1),
                              "run": result["runs"]["lemaj"], "span_level": span_level(rows, expert_spans(halu)),
                              "unscored": sum(1 for r in rows if r["status"] == "unscored")}
    args.out.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps({k: v for k, v in summary.items()}, indent=1, default=str)[:6000])
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
