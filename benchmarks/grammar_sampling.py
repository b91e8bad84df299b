"""Check-first vs stock grammar sampling with the embedded judge (llama.cpp backend).

Replays real, stored greedy judge calls (JSON-schema constrained, temperature 0) from a
benchmark store through two llama.cpp backends — ``grammar_sampling="check-first"``
(assay's default) and ``"stock"`` (llama-cpp-python's chain) — alternating per call, and
reports wall time per call and whether both gave the same text. The samplers pick the same
greedy token from the same logits, but the two instances keep different prompts in their KV
cache, and llama.cpp's prefix re-use changes how the prompt is batched and so the low bits of
the logits: a near-tie can then flip. In the committed run 5 of 6 calls matched; the sixth
(398 vs 366 tokens) matched exactly when replayed on one instance after a KV reset with each
sampler in turn.

Writes benchmarks/results/grammar_sampling.json.
Usage: python benchmarks/grammar_sampling.py [--calls 6] [--store benchmarks/results/meta_ragchecker.db]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import statistics
import time
from pathlib import Path

from assay import get_backend
from assay.core.types import GenerateConfig, Message

HERE = Path(__file__).parent


def stored_requests(store: Path, calls: int) -> list[dict]:
    """Greedy constrained requests of the embedded judge, spread over the methods' prompts."""
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    rows = [json.loads(r[0]) for r in db.execute("SELECT request FROM judge_calls ORDER BY created_at")]
    greedy = [r for r in rows if r["judge"].get("model") == "default" and r["config"].get("json_schema")
              and r["config"].get("temperature") == 0.0 and not r["config"].get("logprobs")]
    by_system: dict[str, list[dict]] = {}
    for request in greedy:
        by_system.setdefault(request["messages"][0]["content"][:60], []).append(request)
    picked: list[dict] = []
    while len(picked) < calls and any(by_system.values()):
        for group in by_system.values():
            if group and len(picked) < calls:
                picked.append(group.pop(0))
    return picked


async def replay(requests: list[dict]) -> dict:
    backends = {"check-first": get_backend("llamacpp/default", n_ctx=4096),
                "stock": get_backend("llamacpp/default", n_ctx=4096, grammar_sampling="stock")}
    warm = [Message(role="user", content="Say OK.")]
    for backend in backends.values():
        await backend.generate(warm, GenerateConfig(max_tokens=2))
    calls = []
    for n, request in enumerate(requests):
        messages = [Message(**m) for m in request["messages"]]
        config = GenerateConfig(**request["config"])
        order = ["check-first", "stock"] if n % 2 == 0 else ["stock", "check-first"]
        record: dict = {"prompt": request["messages"][0]["content"][:60]}
        texts = {}
        for name in order:
            await backends["stock" if name == "check-first" else "check-first"].generate(warm, GenerateConfig(
                max_tokens=1))  # the other instance runs in between: neither keeps a warm prefix advantage
            start = time.perf_counter()
            completion = await backends[name].generate(messages, config)
            wall = time.perf_counter() - start
            texts[name] = completion.text
            record[name] = {"wall_s": wall, "prompt_tokens": completion.usage.prompt_tokens,
                            "completion_tokens": completion.usage.completion_tokens}
        record["same_text"] = texts["check-first"] == texts["stock"]
        calls.append(record)
        print(f"{n + 1}/{len(requests)} stock {record['stock']['wall_s']:.1f} s, check-first "
              f"{record['check-first']['wall_s']:.1f} s, {record['stock']['completion_tokens']} tokens, "
              f"same={record['same_text']}", flush=True)
    for backend in backends.values():
        await backend.aclose()
    total = {name: sum(c[name]["wall_s"] for c in calls) for name in backends}
    return {"calls": calls, "n": len(calls), "total_wall_s": total,
            "speedup_total": total["stock"] / total["check-first"],
            "median_ratio": statistics.median(c["stock"]["wall_s"] / c["check-first"]["wall_s"] for c in calls),
            "all_same_text": all(c["same_text"] for c in calls)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=6)
    parser.add_argument("--store", type=Path, default=HERE / "results" / "meta_ragchecker.db")
    args = parser.parse_args()
    requests = stored_requests(args.store, args.calls)
    result = asyncio.run(replay(requests))
    result["judge_model"] = "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (llama.cpp, CPU)"
    result["source_store"] = str(args.store.name)
    out = HERE / "results" / "grammar_sampling.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"stock {result['total_wall_s']['stock']:.0f} s vs check-first {result['total_wall_s']['check-first']:.0f} s "
          f"over {result['n']} calls: x{result['speedup_total']:.2f} (median per call x{result['median_ratio']:.2f}); "
          f"identical output: {result['all_same_text']}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
