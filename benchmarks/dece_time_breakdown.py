"""Where DeCE's time goes on the embedded judge, and what batching the label questions could win.

DeCE with its default verdicts (direct on the embedded judge) over the demo's answers (the first N
bundled answers, as ``assay demo --limit N``), in a fresh store, alone on the machine. Every judge
call in the store is put in one of four kinds:

- ``generated``: an extraction call (criteria, elements) that writes its output token by token;
- ``label, new prefix``: a label question whose prompt shares less than all but its last
  ``--question-tokens`` tokens with what llama.cpp holds (the answer or reference is read here);
- ``label, question``: a label question over a prefix already in the KV cache (only the question's
  few dozen tokens are read);
- ``label, other``: none of the above (not expected).

For each kind: calls, seconds, new prompt tokens (prompt minus what llama.cpp reused), generated
tokens and the rate of reading. The bound: if every question's tokens were read at the rate of the
long prefix reads (what one multi-sequence batch of all of an answer's questions could reach at
best), the questions' time would fall to ``question tokens / prefix rate``; the whole evaluation's
time would then be ``generated + prefix + that``, and the ratio to today's is the most that
batched label questions can give (Amdahl). Writes ``results/dece_time_breakdown.json`` (``--out``).

Usage: python benchmarks/dece_time_breakdown.py [--answers 3] [--out results/dece_time_breakdown.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import sqlite3
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


def classify(completion: dict[str, Any], prompt_tokens: int, question_tokens: int) -> str:
    if not completion.get("label_probs"):
        return "generated"
    cached = int((completion.get("usage") or {}).get("cached_prompt_tokens") or 0)
    return "label, question" if prompt_tokens - cached <= question_tokens else "label, new prefix"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--answers", type=int, default=3, help="the first N bundled answers (the demo: 3)")
    parser.add_argument("--question-tokens", type=int, default=40,
                        help="a label call reading at most this many new tokens is a question over a cached prefix")
    parser.add_argument("--judge", default="llamacpp/default")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "dece_time_breakdown.json")
    args = parser.parse_args()
    items = load_items(examples_path()).items[: args.answers]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "d.db"
        start = time.perf_counter()
        result = assay.evaluate(items, "dece", args.judge, store=Store(path), runner=RunnerConfig(progress=False))
        wall = time.perf_counter() - start
        with sqlite3.connect(path) as con:
            rows = con.execute("SELECT prompt_tokens, completion_tokens, latency_s, completion FROM judge_calls "
                               "WHERE backend NOT LIKE 'scripted%'").fetchall()
    kinds: dict[str, dict[str, float]] = {}
    for prompt, generated, latency, completion in rows:
        done = json.loads(completion)
        cached = int((done.get("usage") or {}).get("cached_prompt_tokens") or 0)
        kind = kinds.setdefault(classify(done, prompt, args.question_tokens),
                                {"calls": 0, "seconds": 0.0, "new_prompt_tokens": 0, "generated_tokens": 0})
        kind["calls"] += 1
        kind["seconds"] += latency
        kind["new_prompt_tokens"] += prompt - cached
        kind["generated_tokens"] += generated
    for kind in kinds.values():
        kind["seconds"] = round(kind["seconds"], 2)
        kind["new_tokens_per_s"] = round(kind["new_prompt_tokens"] / kind["seconds"], 1) if kind["seconds"] else None
    total = sum(k["seconds"] for k in kinds.values())
    prefix, question = kinds.get("label, new prefix"), kinds.get("label, question")
    bound: dict[str, Any] = {"note": "no question or no prefix read: no bound"}
    if prefix and question and prefix["new_tokens_per_s"]:
        best_questions = question["new_prompt_tokens"] / prefix["new_tokens_per_s"]
        best_total = total - question["seconds"] + best_questions
        bound = {"questions_s_now": question["seconds"], "questions_s_at_prefix_rate": round(best_questions, 2),
                 "judge_s_now": round(total, 2), "judge_s_at_best": round(best_total, 2),
                 "best_ratio": round(best_total / total, 3)}
    shares = {name: round(k["seconds"] / total, 3) for name, k in kinds.items()} if total else {}
    out = {"judge": args.judge, "answers": len(items), "run_id": result.run_id, "wall_s": round(wall, 2),
           "judge_s": round(total, 2), "calls": len(rows), "kinds": kinds, "share_of_judge_time": shares,
           "batched_questions_bound": bound, "machine": platform.processor() or platform.machine(),
           "question_tokens": args.question_tokens}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
