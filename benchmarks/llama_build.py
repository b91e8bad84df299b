"""Speed of llama.cpp builds on this machine: the portable build assay installs against others.

Each build is a folder holding an installed ``llama_cpp`` package (``pip install --target DIR`` of a
wheel compiled with other CMAKE_ARGS), or ``installed`` for the one in this environment. For each
build, in its own process (a build that uses an instruction the CPU refuses dies by a signal, which
is reported as such): load the embedded judge (Qwen2.5-Coder-1.5B Q4_K_M), read a prompt of about
256 tokens from an empty cache, then generate 64 tokens greedily; prompt and generated tokens per
second. Builds alternate over ``--rounds`` rounds so that load on the machine falls on each alike;
the medians and their ratios to the first build are written.

``--load N`` keeps N busy processes running throughout (other work on the same cores), to see how
a build degrades when it does not have the machine to itself (OpenMP's threads wait for each other
by spinning; a build with ``-DGGML_OPENMP=OFF`` uses llama.cpp's own thread pool).

A build may carry environment variables for its process after a comma, e.g.
``--build passive=installed,OMP_WAIT_POLICY=PASSIVE`` (the same build, OpenMP's idle threads asleep
instead of spinning).

Usage: python benchmarks/llama_build.py --build portable=installed --build native=/tmp/native/site
       [--rounds 3] [--load 0] [--out benchmarks/results/llama_build.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

from assay.judge.backends._child import signal_text
from assay.judge.doctor import cpu_model
from assay.judge.model import resolve_model

HERE = Path(__file__).parent

PROBE = r"""
import json, sys, time
import llama_cpp
from llama_cpp import Llama
path, threads = sys.argv[1], int(sys.argv[2])
llama = Llama(model_path=path, n_ctx=2048, n_threads=threads, verbose=False)
text = ("The supplier invoices monthly and payment is due within forty-five days of the invoice date. "
        "Late payments carry interest of two percent per month, and either party may end the agreement "
        "with ninety days of written notice. ") * 6
tokens = llama.tokenize(text.encode(), add_bos=True)[:256]
start = time.perf_counter(); llama.eval(tokens); prompt_s = time.perf_counter() - start
start = time.perf_counter()
out = llama.create_completion(text[:400] + " Summarise the payment terms:", max_tokens=64, temperature=0.0)
gen_s = time.perf_counter() - start
generated = out["usage"]["completion_tokens"]
info = llama_cpp.llama_print_system_info().decode()
print(json.dumps({"prompt_tokens": len(tokens), "prompt_s": prompt_s, "generated_tokens": generated,
                  "generate_s": gen_s, "system_info": " ".join(info.split())}))
"""


def in_build(site: str, code: str, args: list[str], timeout: float, keep_stderr: int = 300) -> dict[str, object]:
    """Run ``code`` in its own process with the build at ``site`` (``installed``: this environment's)
    first on the path; its last line of output, read as JSON, with ``ok``; a crash (an instruction the
    CPU refuses) is reported by its signal."""
    env = dict(os.environ)
    site, *settings = site.split(",")
    env.update(setting.split("=", 1) for setting in settings)
    if site != "installed":
        env["PYTHONPATH"] = site + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env,
                          timeout=timeout)
    if done.returncode != 0:
        return {"ok": False, "failure": signal_text(done.returncode), "stderr": done.stderr[-keep_stderr:]}
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    result["ok"] = True
    return result


def probe(site: str, model: str, threads: int) -> dict[str, object]:
    return in_build(site, PROBE, [model, str(threads)], timeout=1800)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", action="append", required=True, metavar="NAME=DIR",
                        help="a build: NAME=installed or NAME=a folder holding llama_cpp, then ,VAR=VALUE "
                             "for each environment variable of its process")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--load", type=int, default=0,
                        help="busy processes (a Python loop each) kept running through every probe: other "
                             "work sharing the cores, as on a developer's machine or a CI runner")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "llama_build.json")
    args = parser.parse_args()
    builds = dict(b.split("=", 1) for b in args.build)
    model = str(resolve_model().path)
    runs: dict[str, list[dict[str, object]]] = {name: [] for name in builds}
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.load)]
    try:
        for _ in range(args.rounds):
            for name, site in builds.items():
                runs[name].append(probe(site, model, args.threads))
                print(name, json.dumps(runs[name][-1])[:200], flush=True)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    summary: dict[str, dict[str, object]] = {}
    for name, results in runs.items():
        ok = [r for r in results if r["ok"]]
        if not ok:
            summary[name] = {"ok": False, "failure": results[0]["failure"]}
            continue
        summary[name] = {
            "ok": True,
            "prompt_tok_s": statistics.median(float(r["prompt_tokens"]) / float(r["prompt_s"]) for r in ok),
            "generate_tok_s": statistics.median(float(r["generated_tokens"]) / float(r["generate_s"]) for r in ok),
            "system_info": ok[0]["system_info"], "rounds_ok": len(ok)}
    first = next(iter(summary))
    for s in summary.values():
        if s["ok"] and summary[first]["ok"]:
            s["prompt_ratio_to_" + first] = float(s["prompt_tok_s"]) / float(summary[first]["prompt_tok_s"])
            s["generate_ratio_to_" + first] = float(s["generate_tok_s"]) / float(summary[first]["generate_tok_s"])
    out = {"benchmark": "llama_build", "cpu": cpu_model(), "machine": platform.machine(), "threads": args.threads,
           "busy_processes": args.load,
           "load_average_at_end": os.getloadavg(), "builds": builds, "summary": summary, "runs": runs}
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
