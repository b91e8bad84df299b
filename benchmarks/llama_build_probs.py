"""Do two llama.cpp builds give the same label probabilities? The portable build against the avx512
one (or any other), with SmolLM2-135M (or ``--model default``, the 1.5B judge) through assay's
llama.cpp judge (label calls: one forward pass, the next token's distribution over the labels).

Each build is a folder holding an installed ``llama_cpp`` package (``pip install --target DIR``), or
``installed`` for the one in this environment; each runs in its own process (a build the CPU refuses
dies by a signal, reported as such). The prompts are a short one and two of more than 64 tokens
(llama.cpp runs other matrix kernels for longer batches). Writes each build's probabilities and the
largest difference from the first build; exits 1 if it exceeds ``--tolerance``.

Usage: python benchmarks/llama_build_probs.py --build portable=installed --build avx512=/tmp/avx512/site
       [--tolerance 1e-3] [--out benchmarks/results/llama_build_probs.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from assay.judge.doctor import cpu_model

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))
from benchmarks.llama_build import in_build  # noqa: E402  (one way to run code in a build's own process)

CLAUSE = ("The tenant must give written notice of at least thirty days before the end of the lease term. "
          "The landlord returns the security deposit within fourteen days after the keys are handed back, "
          "minus the cost of repairing damage beyond normal wear and tear, itemised in writing. ")

PROMPTS = [
    ("Is Paris the capital of France? Answer yes or no.", ["yes", "no"]),
    (f"{CLAUSE * 2}\nDoes the tenant have to give notice? Answer yes or no.", ["yes", "no"]),
    (f"{CLAUSE * 2}\nHow many days does the landlord have to return the deposit? Answer A (thirty), "
     "B (fourteen) or C (seven).", ["A", "B", "C"]),
]

PROBE = r"""
import asyncio, json, sys
import llama_cpp
from assay.core.types import GenerateConfig, Message
from assay.judge.backends import get_backend
prompts = json.loads(sys.argv[1])
judge = get_backend("llamacpp/" + sys.argv[2], n_ctx=1024, process="inline")
async def run():
    out = []
    for text, labels in prompts:
        done = await judge.generate([Message(role="user", content=text)], GenerateConfig(labels=labels, max_tokens=1))
        out.append({"prompt_tokens": done.usage.prompt_tokens, "label_probs": done.label_probs})
    await judge.aclose()
    return out
info = " ".join(llama_cpp.llama_print_system_info().decode().split())
print(json.dumps({"system_info": info, "results": asyncio.run(run())}))
"""


def probe(site: str, model: str) -> dict[str, object]:
    return in_build(site, PROBE, [json.dumps(PROMPTS), model], timeout=900, keep_stderr=500)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", action="append", required=True, metavar="NAME=DIR",
                        help="a build: NAME=installed or NAME=a folder holding llama_cpp (the first is the reference)")
    parser.add_argument("--model", default="smollm2", help="the embedded model: smollm2 or default (the 1.5B judge)")
    parser.add_argument("--tolerance", type=float, default=1e-3)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "llama_build_probs.json")
    args = parser.parse_args()
    builds = dict(b.split("=", 1) for b in args.build)
    runs = {name: probe(site, args.model) for name, site in builds.items()}
    first = next(iter(runs))
    differences: dict[str, float | None] = {}
    for name, run in runs.items():
        if not (run["ok"] and runs[first]["ok"]):
            differences[name] = None
            continue
        worst = 0.0
        mine_all: list[dict[str, Any]] = run["results"]  # type: ignore[assignment]
        ref_all: list[dict[str, Any]] = runs[first]["results"]  # type: ignore[assignment]
        for mine, ref in zip(mine_all, ref_all, strict=True):
            for label, p in ref["label_probs"].items():
                worst = max(worst, abs(mine["label_probs"][label] - p))
        differences[name] = worst
    out = {"benchmark": "llama_build_probs", "model": args.model, "cpu": cpu_model(), "builds": builds,
           "tolerance": args.tolerance, "max_abs_difference_from_" + first: differences, "runs": runs}
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({"max_abs_difference_from_" + first: differences}, indent=2))
    for name, run in runs.items():
        print(name, run.get("system_info") or run.get("failure"))
        results: list[dict[str, Any]] = run.get("results") or []  # type: ignore[assignment]
        for (text, _), result in zip(PROMPTS, results, strict=False):
            print(f"  {result['prompt_tokens']:4d} tokens  {json.dumps(result['label_probs'])}  {text[-40:]!r}")
    if any(d is None or d > args.tolerance for d in differences.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
