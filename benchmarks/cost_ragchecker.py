"""Cost of DeCE per answer through one llama-cpp-python server (issue 17, item 5).

The first 10 distinct, non-empty RAGChecker dev answers in file order (``read_ragchecker``'s
items: model1 then model2 of each pair), each truncated to 1,500 characters, with the pair's
gold answer as the reference. A real llama-cpp-python server on 127.0.0.1 serves the embedded
judge (2 threads, ``logits_all`` for the soft verdicts): ``--server assay`` (default) is
``python -m assay.judge.serve``, llama-cpp-python's server with assay's check-first grammar sampling
and numpy logprobs; ``--server stock`` is ``python -m llama_cpp.server``. assay reaches it with
the ``openai`` backend, concurrency 1, and sends ``repeat_penalty`` 1.0 (the server's own
default is 1.1, which also disables check-first sampling) unless ``--server-repeat-penalty``.
Each variant runs in a fresh store (no cached call), one after the other on the same server;
per answer we report judge calls, prompt and completion tokens as the server counts them
(``usage``), and wall time.

The reference row (RAGAS 0.4.3 FactualCorrectness on the same answers and judge: ~4,150 tokens
and 152 s per answer) is the figure issue 17 gives; RAGAS is not installed here, so it is not
re-measured in this run and the ratios against it are ratios to a number from another run.
The ratios between our variants are measured in this run.

Writes benchmarks/results/cost_ragchecker.json and prints a markdown table.
Usage: python benchmarks/cost_ragchecker.py [--answers 10] [--variant NAME ...] [--server assay|stock]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from assay import aevaluate
from assay.core.types import Item
from assay.data.datasets.adapters import read_ragchecker
from assay.judge.model import resolve_model
from assay.judge.runner import RunnerConfig
from assay.judge.serve import running
from assay.store import Store

HERE = Path(__file__).parent
DATA = HERE.parents[1] / "shared" / "data" / "ragchecker_human_labeled_dev.json"
RAGAS = {"tokens_per_answer": 4150, "seconds_per_answer": 152,
         "source": "issue 17 (RAGAS 0.4.3 FactualCorrectness, same answers and judge; not re-measured here)"}
# name -> DeCE options
VARIANTS: dict[str, dict[str, Any]] = {
    "soft": {"verdicts": "soft"},
    "soft-brief": {"verdicts": "soft", "reasoning": False},
    "hard": {},
    "hard-brief": {"reasoning": False},
    "direct": {"verdicts": "direct"},
}


def answers(path: Path, count: int, chars: int) -> list[Item]:
    chosen: list[Item] = []
    seen: set[str] = set()
    for item in read_ragchecker(path).items:
        text = item.response.strip()
        if not text or text in seen:
            continue
        seen.add(text)
        chosen.append(item.model_copy(update={"response": text[:chars]}))
        if len(chosen) == count:
            break
    return chosen


def run_variant(items: list[Item], judge: str, options: dict[str, Any], store_dir: Path, name: str,
                judge_options: dict[str, Any]) -> dict[str, Any]:
    store = Store(store_dir / f"cost_{name}.db")
    start = time.perf_counter()
    result = asyncio.run(aevaluate(items, "dece", judge, store=store,
                                   runner=RunnerConfig(progress=True, concurrency=1, timeout_s=900),
                                   judge_options=judge_options, **options))
    wall = time.perf_counter() - start
    keys = sorted({k for r in store.results(result.run_id) for k in r.call_keys})
    stats = store.call_stats(keys)
    n = len(items)
    scores = [r.scores.get("f_beta") for r in result.rows]
    return {"options": options, "run_id": result.run_id, "answers": n, "wall_s": wall,
            "per_answer": {"calls": stats["calls"] / n, "prompt_tokens": stats["prompt_tokens"] / n,
                           "completion_tokens": stats["completion_tokens"] / n,
                           "tokens": (stats["prompt_tokens"] + stats["completion_tokens"]) / n,
                           "seconds": wall / n},
            "prefix_reuse": stats.get("prefix_reuse"),
            "unscored_f_beta": sum(s is None for s in scores),
            "f_beta": scores}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--answers", type=int, default=10)
    parser.add_argument("--chars", type=int, default=1500)
    parser.add_argument("--variant", action="append", choices=sorted(VARIANTS), default=[])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--embedded", action="store_true",
                        help="the in-process llama.cpp judge (llamacpp/default) instead of a server")
    parser.add_argument("--server", choices=["stock", "assay"], default="assay",
                        help="stock: python -m llama_cpp.server; assay: python -m assay.judge.serve "
                             "(check-first grammar sampling, numpy logprobs)")
    parser.add_argument("--server-repeat-penalty", action="store_true",
                        help="leave the server's default repeat_penalty (1.1) instead of sending 1.0")
    parser.add_argument("--stores", type=Path, default=None,
                        help="keep the variants' stores in this directory (default: a temporary one)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "cost_ragchecker.json")
    args = parser.parse_args()
    items = answers(args.data, args.answers, args.chars)
    variants = args.variant or ["soft", "soft-brief"]
    module = "llama_cpp.server" if args.server == "stock" else "assay.judge.serve"
    judge_options: dict[str, Any] = {"schema_mode": "json_object"}
    if not args.server_repeat_penalty:
        judge_options["extra_body"] = {"repeat_penalty": 1.0}
    out: dict[str, Any] = {"answers": [i.key for i in items], "chars": args.chars,
                           "judge": f"Qwen2.5-Coder-1.5B-Instruct Q4_K_M, python -m {module}, "
                                    f"{args.threads} threads, concurrency 1",
                           "server": module, "judge_options": judge_options,
                           "ragas_reference": RAGAS, "variants": {}}
    if args.embedded:
        out["judge"] = f"Qwen2.5-Coder-1.5B-Instruct Q4_K_M, in-process llama.cpp (llamacpp/default), " \
                       f"{args.threads} threads, concurrency 1"
        out["server"] = None
        out["judge_options"] = judge_options = {"n_threads": args.threads}
        with tempfile.TemporaryDirectory() as tmp:
            for name in variants:
                where = args.stores or Path(tmp)
                where.mkdir(parents=True, exist_ok=True)
                (where / f"cost_{name}.db").unlink(missing_ok=True)
                out["variants"][name] = run_variant(items, "llamacpp/default", VARIANTS[name], where, name,
                                                    judge_options)
                print(name, json.dumps(out["variants"][name]["per_answer"]), flush=True)
    else:
        with tempfile.TemporaryDirectory() as tmp, \
                running(resolve_model().path, Path(tmp) / "server.log", module=module, alias="qwen",
                        threads=args.threads) as base:
            for name in variants:
                out["variants"][name] = run_variant(items, f"openai/qwen@{base}", VARIANTS[name], Path(tmp), name,
                                                    judge_options)
                print(name, json.dumps(out["variants"][name]["per_answer"]), flush=True)
    for row in out["variants"].values():
        row["vs_ragas"] = {"tokens": row["per_answer"]["tokens"] / RAGAS["tokens_per_answer"],
                           "seconds": row["per_answer"]["seconds"] / RAGAS["seconds_per_answer"]}
    for base_name in ("soft", "hard"):
        if base_name in out["variants"]:
            first = out["variants"][base_name]["per_answer"]
            for row in out["variants"].values():
                row[f"vs_{base_name}"] = {"tokens": row["per_answer"]["tokens"] / first["tokens"],
                                          "seconds": row["per_answer"]["seconds"] / first["seconds"]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print("| variant | calls | prompt tok | completion tok | tokens | s | × RAGAS tokens | × RAGAS s | prefix reuse |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, row in out["variants"].items():
        p = row["per_answer"]
        reuse = "—" if row["prefix_reuse"] is None else f"{row['prefix_reuse']:.0%}"
        print(f"| {name} | {p['calls']:.1f} | {p['prompt_tokens']:.0f} | {p['completion_tokens']:.0f} | "
              f"{p['tokens']:.0f} | {p['seconds']:.1f} | {row['vs_ragas']['tokens']:.2f} | "
              f"{row['vs_ragas']['seconds']:.2f} | {reuse} |")


if __name__ == "__main__":
    main()
