"""What writing forced JSON text in one step (jump-forward, ``--judge-opt jump_forward``) saves the embedded
judge, and what it changes.

Each method that has the judge write JSON (DeCE's extractions at its default, the case-aware judge, LeMAJ)
runs over the demo's first N answers with ``jump_forward=true`` and ``=false``, in alternating order over
``--rounds`` rounds, each run in a fresh store and a fresh model process, with ``prefix_cache=false`` so
that no run loads what an earlier one kept. Per run: wall seconds, judge seconds (the calls' latencies),
calls, prompt and generated tokens. Between the two settings, per method: the share of calls whose reply
text is identical, and the mean absolute difference of the items' headline scores (a forced token is
evaluated in one batch with the token before it, whose float rounding differs from a step of its own, so a
near-tied choice later in a reply can go the other way). Calls that read logprobs (DICE's analysis, soft
verdicts) never jump and are not measured here.

Writes ``results/jump_forward.json`` (``--out``). Run it alone on the machine.
Usage: python benchmarks/jump_forward.py [--answers 3] [--rounds 2] [--methods dece,caseaware,lemaj]
"""

from __future__ import annotations

import argparse
import json
import platform
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import assay
from assay.cli.demo import examples_path
from assay.data import load_items
from assay.judge.runner import RunnerConfig
from assay.store import Store

HERE = Path(__file__).parent
SCORES = {"dece": "f_beta", "caseaware": "s_final", "lemaj": "relevance"}  # each method's headline metric
OPTIONS: dict[str, dict[str, Any]] = {"lemaj": {"without_document": "knowledge"}}  # the demo's answers have no document


def run(items: list[Any], method: str, jump: bool, folder: Path, tag: str) -> dict[str, Any]:
    path = folder / f"{method}-{tag}.db"
    start = time.perf_counter()
    result = assay.evaluate(items, method, "llamacpp/default", store=Store(path),
                            runner=RunnerConfig(progress=False),
                            judge_options={"prefix_cache": False, "jump_forward": jump}, **OPTIONS.get(method, {}))
    wall = time.perf_counter() - start
    with sqlite3.connect(path) as con:
        rows = con.execute("SELECT request, prompt_tokens, completion_tokens, latency_s, completion FROM judge_calls "
                           "WHERE backend NOT LIKE 'scripted%'").fetchall()
    # by messages and settings, not by key: the option is part of the judge's identity in the key
    texts = {json.dumps({k: v for k, v in json.loads(request).items() if k != "judge"}, sort_keys=True):
             json.loads(completion).get("text") for request, _, _, _, completion in rows}
    records = result.records()
    field = SCORES.get(method)
    scores = {(r["id"], r.get("system")): r.get(field) for r in records} if field else {}
    return {"wall_s": round(wall, 2), "judge_s": round(sum(r[3] for r in rows), 2), "calls": len(rows),
            "prompt_tokens": sum(r[1] for r in rows), "generated_tokens": sum(r[2] for r in rows),
            "scored": sum(1 for r in records if r.get("status") == "scored"), "_texts": texts, "_scores": scores}


def compare(on: dict[str, Any], off: dict[str, Any]) -> dict[str, Any]:
    shared = set(on["_texts"]) & set(off["_texts"])
    same = sum(1 for k in shared if on["_texts"][k] == off["_texts"][k])
    both = [k for k in on["_scores"] if isinstance(on["_scores"].get(k), float)
            and isinstance(off["_scores"].get(k), float)]
    gaps = [abs(on["_scores"][k] - off["_scores"][k]) for k in both]
    return {"calls_with_the_same_prompt": len(shared), "identical_replies": same,
            "items_scored_both": len(both), "mean_abs_score_difference": round(statistics.mean(gaps), 4) if gaps
            else None}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--answers", type=int, default=3, help="the demo's first N answers")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds of on and off")
    parser.add_argument("--methods", default="dece,caseaware,lemaj")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "jump_forward.json")
    args = parser.parse_args()
    import llama_cpp

    items = load_items(examples_path()).items[: args.answers]
    out: dict[str, Any] = {"judge": "llamacpp/default (Qwen2.5-Coder-1.5B-Instruct Q4_K_M)",
                           "llama_cpp": llama_cpp.__version__,
                           "build": " ".join(llama_cpp.llama_print_system_info().decode().split()),
                           "machine": platform.processor() or platform.machine(), "answers": len(items),
                           "rounds": args.rounds, "methods": {}}
    for method in args.methods.split(","):
        runs: dict[str, list[dict[str, Any]]] = {"on": [], "off": []}
        with tempfile.TemporaryDirectory() as folder:
            for round_ in range(args.rounds):
                order = ("on", "off") if round_ % 2 == 0 else ("off", "on")
                for name in order:
                    runs[name].append(run(items, method, name == "on", Path(folder), f"{name}{round_}"))
                    print(method, name, {k: v for k, v in runs[name][-1].items() if not k.startswith("_")},
                          flush=True)
        summary: dict[str, Any] = {}
        for name, values in runs.items():
            summary[name] = {k: statistics.median(v[k] for v in values)
                             for k in ("wall_s", "judge_s", "calls", "prompt_tokens", "generated_tokens", "scored")}
        summary["on_over_off"] = {k: round(summary["on"][k] / summary["off"][k], 3)
                                  for k in ("wall_s", "judge_s", "generated_tokens") if summary["off"][k]}
        summary["on_vs_off"] = compare(runs["on"][0], runs["off"][0])
        out["methods"][method] = summary
        print(method, json.dumps(summary), flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)  # after each method: a later one may fail
        args.out.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
