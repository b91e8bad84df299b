"""Cost of re-running evaluations whose judge calls are cached (issue: the 40-pair RAGChecker
meta-evaluation took 1,036 s to re-derive from 704 cached calls).

On a zero-latency scripted judge, DeCE (4 calls per item) over N distinct items, in one store:

1. first run: every call made and stored;
2. ``--resume`` of the finished run: must make no call and touch no item;
3. a new run whose calls are all in the cache (same prompts, another F-beta, so another run id):
   every item evaluated again, every call served from the cache — the re-derivation case.

Reports wall seconds, calls made, cache hits and seconds per 1,000 cached calls, all measured in
one process. Writes benchmarks/results/rerun.json. Usage: python benchmarks/rerun.py [--items N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.helpers

from tests.helpers import ITEM, dece_rules

import assay
from assay.judge.backends import ScriptedBackend
from assay.judge.runner import RunnerConfig
from assay.store import Store

RESULTS = Path(__file__).parent / "results" / "rerun.json"


def items(n: int) -> list[dict]:
    # every item distinct (query, answer and reference), so each makes its own 4 calls
    return [{**ITEM, "id": f"q{i}", "query": f"{ITEM['query']} (#{i})", "response": f"{ITEM['response']} #{i}",
             "reference": {"required": f"{ITEM['reference']['required']} (#{i})"}} for i in range(n)]


def judge() -> ScriptedBackend:
    return ScriptedBackend(rules=dece_rules(["three years", "notice"], ["three years"], sat=[1, 0], ver=[1]),
                           max_concurrency=8)


async def timed(label: str, data: list[dict], store: Store, **options: object) -> dict:
    backend = judge()
    started = time.perf_counter()
    result = await assay.aevaluate(data, "dece", backend, store=store, runner=RunnerConfig(progress=False),
                                   **options)  # type: ignore[arg-type]
    wall = time.perf_counter() - started
    stats = result.client_stats
    assert stats is not None
    row = {"phase": label, "wall_s": round(wall, 3), "calls_made": stats.calls, "cache_hits": stats.cache_hits,
           "backend_calls": len(backend.calls), "items": len(data), "run_id": result.run_id}
    if stats.cache_hits:
        row["s_per_1000_cached_calls"] = round(1000 * wall / stats.cache_hits, 3)
    print(json.dumps(row))
    return row


async def measure(n: int) -> dict:
    data = items(n)
    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder) / "rerun.db")
        first = await timed("first run", data, store)
        resumed = await timed("resume finished run", data, store, resume=True)
        cached = await timed("new run, all calls cached", data, store, beta=1.0)
        size = (Path(folder) / "rerun.db").stat().st_size
    assert resumed["backend_calls"] == 0 and cached["backend_calls"] == 0
    return {"benchmark": "rerun", "items": n, "calls_per_item": 4, "judge": "scripted (zero latency)",
            "python": platform.python_version(), "machine": platform.machine(), "store_bytes": size,
            "phases": [first, resumed, cached],
            "ratio_first_vs_cached": round(first["wall_s"] / cached["wall_s"], 2) if cached["wall_s"] else None}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    result = asyncio.run(measure(args.items))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
