"""Depth-first vs breadth-first call order with the embedded judge (prompt-prefix reuse).

llama.cpp keeps the previous call's prompt in its KV cache and re-uses the longest common
prefix. assay runs ITEM_WINDOW x concurrency items at once, so with a one-call-at-a-time judge
a method's calls go breadth-first (all satisfaction calls, then all element extractions, ...)
and consecutive prompts share their instructions. This runs DeCE on the answers of the bundled
examples' first questions twice, with a fresh store each time — once with a window of 1 item
(depth-first, the old order) and once with the default — on one loaded model, and reports wall
time and whether the scores agree.

Writes benchmarks/results/call_order.json. Usage: python benchmarks/call_order.py [--questions 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from importlib import resources
from pathlib import Path

from assay import JudgeBackend, aevaluate, get_backend
from assay.core.types import Item
from assay.engine import ITEM_WINDOW
from assay.judge.runner import RunnerConfig

HERE = Path(__file__).parent


def examples(questions: int) -> list[Item]:
    text = resources.files("assay.examples").joinpath("dece_examples.jsonl").read_text(encoding="utf-8")
    items = [Item.model_validate(json.loads(line)) for line in text.splitlines() if line.strip()]
    keep = list(dict.fromkeys(i.id for i in items))[:questions]
    return [i for i in items if i.id in keep]


async def run(items: list[Item], judge: JudgeBackend, window: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        result = await aevaluate(items, "dece", judge, store=Path(tmp) / "run.db", runner=RunnerConfig(progress=False),
                                 units_in_flight=window)
        wall = time.perf_counter() - start
        rows = result.records()
    return {"item_window": window, "wall_s": wall, "judge_calls": result.client_stats.calls if result.client_stats
            else None, "scores": {f"{r['id']}::{r['system']}": [r["precision"], r["recall"]] for r in rows}}


async def main_async(questions: int) -> dict:
    items = examples(questions)
    judge = get_backend("llamacpp/default", n_ctx=4096)
    default = ITEM_WINDOW  # x the judge's concurrency, 1 for llama.cpp
    first = await run(items, judge, 1)
    second = await run(items, judge, default)
    await judge.aclose()
    return {"items": len(items), "questions": questions, "depth_first": first, "breadth_first": second,
            "speedup": first["wall_s"] / second["wall_s"], "same_scores": first["scores"] == second["scores"],
            "judge_model": "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (llama.cpp, CPU)"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=2)
    args = parser.parse_args()
    result = asyncio.run(main_async(args.questions))
    out = HERE / "results" / "call_order.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{result['items']} answers: depth-first {result['depth_first']['wall_s']:.0f} s, breadth-first "
          f"{result['breadth_first']['wall_s']:.0f} s (x{result['speedup']:.2f}); same scores: {result['same_scores']}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
