"""What keeping the instructions' KV state on disk saves the embedded judge, and that it changes no number.

DeCE with its default verdicts (direct, on the embedded judge) over the same answers three times, each
in a fresh store and a fresh model process, alone on the machine:

- ``off``: ``prefix_cache=false`` — every run reads every system message (assay before the store);
- ``first``: the store on, empty — a machine's first run: it reads the instructions and keeps them;
- ``later``: the store on, as ``first`` left it — a later run loads them.

Per run: wall seconds, judge seconds (the calls' latencies), calls, new prompt tokens (prompt minus
what llama.cpp reused or loaded), generated tokens; and between runs, the label probabilities of
the calls both made (``first`` against ``later`` must be identical; ``off`` against ``first`` differ
by float rounding: a system message read in a step of its own). Two answer sets: the demo's (the
first N bundled answers, as ``assay demo --limit N``) and the first N distinct RAGChecker dev answers.
The store lives in a temporary directory (``ASSAY_CACHE_DIR``), so ~/.cache/assay/kv is not touched.

Writes ``results/kept_instructions.json`` (``--out``).
Usage: python benchmarks/kept_instructions.py [--demo 3] [--ragchecker 5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import assay
from assay.cli.demo import examples_path
from assay.data import load_items
from assay.data.datasets.adapters import read_ragchecker
from assay.judge.model import resolve_model
from assay.judge.runner import RunnerConfig
from assay.store import Store

HERE = Path(__file__).parent
RAGCHECKER = HERE.parents[1] / "shared" / "data" / "ragchecker_human_labeled_dev.json"


def ragchecker_answers(count: int) -> list[Any]:
    chosen, seen = [], set()
    for item in read_ragchecker(RAGCHECKER).items:
        text = item.response.strip()
        if text and text not in seen:
            seen.add(text)
            chosen.append(item)
        if len(chosen) == count:
            break
    return chosen


def run(items: list[Any], folder: Path, name: str, prefix_cache: bool, model_path: str) -> dict[str, Any]:
    path = folder / f"{name}.db"
    start = time.perf_counter()
    assay.evaluate(items, "dece", "llamacpp/default", store=Store(path), runner=RunnerConfig(progress=False),
                   judge_options={"prefix_cache": prefix_cache, "model_path": model_path})
    wall = time.perf_counter() - start
    with sqlite3.connect(path) as con:
        rows = con.execute("SELECT key, prompt_tokens, completion_tokens, latency_s, completion FROM judge_calls "
                           "WHERE backend NOT LIKE 'scripted%'").fetchall()
    probs, new = {}, 0
    for key, prompt, _, _, completion in rows:
        done = json.loads(completion)
        new += prompt - int((done.get("usage") or {}).get("cached_prompt_tokens") or 0)
        if done.get("label_probs"):
            probs[key] = done["label_probs"]
    return {"wall_s": round(wall, 2), "judge_s": round(sum(r[3] for r in rows), 2), "calls": len(rows),
            "prompt_tokens": sum(r[1] for r in rows), "new_prompt_tokens": new,
            "generated_tokens": sum(r[2] for r in rows), "_probs": probs}


def difference(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    shared = set(a["_probs"]) & set(b["_probs"])
    gaps = [max(abs(a["_probs"][k][label] - b["_probs"][k][label]) for label in a["_probs"][k]) for k in shared]
    return {"label_calls_compared": len(shared), "max_abs_p": max(gaps, default=None),
            "mean_abs_p": round(sum(gaps) / len(gaps), 4) if gaps else None}


def measure(items: list[Any], model_path: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        os.environ["ASSAY_CACHE_DIR"] = str(Path(folder) / "cache")  # the kv store of these runs only
        runs = {"off": run(items, Path(folder), "off", False, model_path),
                "first": run(items, Path(folder), "first", True, model_path),
                "later": run(items, Path(folder), "later", True, model_path)}
        kept = sorted((Path(folder) / "cache" / "kv").glob("*.kv"))
        out: dict[str, Any] = {"answers": len(items), "states_kept": len(kept),
                               "kept_mb": round(sum(p.stat().st_size for p in kept) / 1e6, 1)}
    out["first_vs_later"] = difference(runs["first"], runs["later"])
    out["off_vs_first"] = difference(runs["off"], runs["first"])
    for name, values in runs.items():
        out[name] = {k: v for k, v in values.items() if not k.startswith("_")}
    out["later_over_off"] = {k: round(runs["later"][k] / runs["off"][k], 3)
                             for k in ("wall_s", "judge_s", "new_prompt_tokens") if runs["off"][k]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--demo", type=int, default=3, help="the first N bundled answers (the demo: 3)")
    parser.add_argument("--ragchecker", type=int, default=5, help="the first N distinct RAGChecker dev answers")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "kept_instructions.json")
    args = parser.parse_args()
    import llama_cpp

    model_path = str(resolve_model().path)  # before ASSAY_CACHE_DIR moves: the installed model
    out: dict[str, Any] = {"judge": "llamacpp/default (Qwen2.5-Coder-1.5B-Instruct Q4_K_M)",
                           "llama_cpp": llama_cpp.__version__,
                           "build": " ".join(llama_cpp.llama_print_system_info().decode().split()),
                           "machine": platform.processor() or platform.machine()}
    if args.demo:
        out["demo"] = measure(load_items(examples_path()).items[: args.demo], model_path)
        print(json.dumps(out["demo"], indent=2), flush=True)
    if args.ragchecker:
        out["ragchecker"] = measure(ragchecker_answers(args.ragchecker), model_path)
        print(json.dumps(out["ragchecker"], indent=2), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
