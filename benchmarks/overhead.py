"""Framework overhead of assay's runner + store (issue: < 0.5 ms per judge call, < 5% of wall
time with the embedded judge).

0. Runner + store alone: 2,000 distinct calls through a judge session's client vs bare scripted calls.
1. Zero-latency scripted judge: DeCE over N items through the whole engine (cache look-up,
   retries machinery, SQLite writes of every call and result) vs the same number of bare
   ``backend.generate`` calls. Overhead per call = (engine wall − bare wall) / calls.
2. Embedded judge: the same K structured calls made directly with llama-cpp-python and through
   a judge session's client (a fresh store each round, so no cache hit), alternating, on one loaded
   model. Overhead = (assay − direct) / direct.

Writes benchmarks/results/overhead.json. Usage: python benchmarks/overhead.py [--items N] [--calls K]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.helpers

from tests.helpers import ITEM, dece_rules

import assay
from assay import JudgeBackend, JudgeSession, get_backend
from assay.core.types import GenerateConfig, Message
from assay.judge.backends import ScriptedBackend
from assay.judge.backends._fastgrammar import json_schema_grammar
from assay.judge.runner import RunnerConfig
from assay.store import Store

RESULTS = Path(__file__).parent / "results" / "overhead.json"


def scripted_overhead(n_items: int) -> dict[str, float]:
    items = [{**ITEM, "id": f"q{i}", "query": f"{ITEM['query']} #{i}", "response": f"{ITEM['response']} #{i}"}
             for i in range(n_items)]
    rules = dece_rules(["a", "b", "c"], ["x", "y"], sat=[1, 0, 1], ver=[1, 1])
    with tempfile.TemporaryDirectory() as tmp:
        backend = ScriptedBackend(rules=rules)
        start = time.perf_counter()
        result = assay.evaluate(items, "dece", backend, store=Path(tmp) / "run.db",
                                runner=RunnerConfig(progress=False))
        engine_wall = time.perf_counter() - start
        calls = len(backend.calls)
        assert len(result.records()) == n_items
    bare = ScriptedBackend(rules=rules)
    messages = [Message(role="user", content="<query>q</query><answer>a</answer>")]

    async def bare_calls() -> None:
        for _ in range(calls):
            await bare.generate(messages, GenerateConfig())

    start = time.perf_counter()
    asyncio.run(bare_calls())
    bare_wall = time.perf_counter() - start
    return {"items": n_items, "judge_calls": calls, "engine_wall_s": engine_wall, "bare_wall_s": bare_wall,
            "calls_per_s": calls / engine_wall,
            "overhead_ms_per_call": 1000 * (engine_wall - bare_wall) / calls}


async def through_session(backend: JudgeBackend, path: Path, calls: list[list[Message]],
                          config: GenerateConfig) -> Any:
    """Make ``calls`` one after the other through a judge session's client (cache look-up, in-flight
    de-duplication, semaphore, timeout, retry machinery, one SQLite commit per call); its counters."""
    runner = RunnerConfig(progress=False)
    async with JudgeSession("bench-overhead", backend, store=Store(path), runner=runner) as session:
        for messages in calls:
            await session.client.complete(messages, config)
    return session.client.stats


def runner_overhead(n_calls: int) -> dict[str, float]:
    """The runner + store alone: distinct calls through a judge session's client (cache look-up, in-flight
    de-duplication, semaphore, timeout, retry machinery, one SQLite commit per call) vs the
    same calls made on the bare scripted backend."""
    messages = [[Message(role="user", content=f"<query>q{i}</query><answer>a</answer>")] for i in range(n_calls)]
    config = GenerateConfig(max_tokens=64, seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        backend = ScriptedBackend(responses=['{"score": 1}'] * n_calls)
        start = time.perf_counter()
        asyncio.run(through_session(backend, Path(tmp) / "s.db", messages, config))
        engine_wall = time.perf_counter() - start
    bare = ScriptedBackend(responses=['{"score": 1}'] * n_calls)

    async def direct() -> None:
        for m in messages:
            await bare.generate(m, config)

    start = time.perf_counter()
    asyncio.run(direct())
    bare_wall = time.perf_counter() - start
    return {"judge_calls": n_calls, "engine_wall_s": engine_wall, "bare_wall_s": bare_wall,
            "calls_per_s": n_calls / engine_wall, "overhead_ms_per_call": 1000 * (engine_wall - bare_wall) / n_calls}


SCHEMA = {"type": "object", "additionalProperties": False, "required": ["reasoning", "score"],
          "properties": {"reasoning": {"type": "string", "maxLength": 120},
                         "score": {"type": "integer", "enum": [0, 1]}}}


def embedded_overhead(k_calls: int, rounds: int) -> dict[str, object]:
    backend = get_backend("llamacpp/default", n_ctx=2048, process="inline")  # bare calls use .load()
    llama = backend.load()
    prompts = [[{"role": "system", "content": "You grade claims. Reply in JSON with reasoning and score."},
                {"role": "user", "content": f"Claim {i}: {i} + {i} = {2 * i + (i % 2)}. Is it correct?"}]
               for i in range(k_calls)]
    config = GenerateConfig(max_tokens=48, json_schema=SCHEMA, seed=0)

    def direct() -> float:
        start = time.perf_counter()
        for messages in prompts:
            # the same model object, grammar and sampler the backend uses: only the framework differs
            llama.create_chat_completion(messages=messages, temperature=0.0, top_p=1.0, max_tokens=48, seed=0,
                                         grammar=json_schema_grammar(SCHEMA))
        return time.perf_counter() - start

    child = get_backend("llamacpp/default", n_ctx=2048)  # the default: the model in a child process

    def through_assay(judge: JudgeBackend = backend) -> float:
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            stats = asyncio.run(through_session(judge, Path(tmp) / "s.db",
                                                [[Message(**m) for m in messages] for messages in prompts], config))
            wall = time.perf_counter() - start
            assert stats.calls == k_calls and stats.cache_hits == 0
            return wall

    direct()  # warm-up: page the weights in
    through_assay(child)  # warm-up: start the child and load the model there
    direct_walls, assay_walls, child_walls = [], [], []
    for _ in range(rounds):
        direct_walls.append(direct())
        assay_walls.append(through_assay())
        child_walls.append(through_assay(child))
    asyncio.run(child.aclose())
    d, a, c = statistics.median(direct_walls), statistics.median(assay_walls), statistics.median(child_walls)
    return {"calls_per_round": k_calls, "rounds": rounds, "direct_wall_s": direct_walls,
            "assay_wall_s": assay_walls, "median_direct_s": d, "median_assay_s": a,
            "overhead_fraction": (a - d) / d, "overhead_ms_per_call": 1000 * (a - d) / k_calls,
            "assay_child_wall_s": child_walls, "median_assay_child_s": c,
            "child_overhead_fraction": (c - d) / d, "child_overhead_ms_per_call": 1000 * (c - d) / k_calls}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--calls", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip-embedded", action="store_true")
    args = parser.parse_args()
    out: dict[str, object] = {"assay_version": assay.__version__, "python": platform.python_version(),
                              "machine": platform.machine(), "cpus": os.cpu_count(),
                              "runner_store": runner_overhead(2000),
                              "scripted": scripted_overhead(args.items)}
    print(json.dumps({k: out[k] for k in ("runner_store", "scripted")}, indent=2))
    if not args.skip_embedded:
        out["embedded"] = embedded_overhead(args.calls, args.rounds)
        print(json.dumps(out["embedded"], indent=2))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
