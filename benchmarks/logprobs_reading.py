"""What logprobs cost the embedded judge: llama.cpp's own ``logits_all`` against reading each
generated token's logprobs from the step's last output (what assay does).

Two measurements, each model in its own process, alternating over ``--rounds`` rounds:

1. **The cause.** llama.cpp reads the same prompt (``--prompt-tokens``, default 800) with its
   ``logits_all`` on and off: on, it computes and copies the logits of every prompt token, which a
   generated token's logprobs never need. Prompt tokens per second, medians, and their ratio.
2. **The path a user runs.** ``assay eval dece --verdicts soft --judge-opt logits_all=true`` on the
   demo's first ``--answers`` answers (fresh store each round): wall time, calls, tokens, and the
   scores, which must be equal from round to round.

Usage: python benchmarks/logprobs_reading.py [--rounds 3] [--prompt-tokens 800] [--answers 3]
       [--out benchmarks/results/logprobs_reading.json]
Run it alone on the machine: two model processes at once halve each other's speed.
"""

from __future__ import annotations

import argparse
import json
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from assay.judge.doctor import cpu_model
from assay.judge.model import resolve_model, smollm_path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks._cli import assay_exe, demo_items  # shared by the benchmarks that run the command

HERE = Path(__file__).parent

PROBE = r"""
import json, sys, time
from llama_cpp import Llama
path, n, logits_all = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "on"
llama = Llama(model_path=path, n_ctx=2048, verbose=False, logits_all=logits_all)
text = ("The supplier invoices monthly and payment is due within forty-five days of the invoice date. "
        "Late payments carry interest of two percent per month, and either party may end the agreement "
        "with ninety days of written notice. ") * 40
tokens = llama.tokenize(text.encode(), add_bos=True)[:n]
llama.eval(tokens[:16]); llama.reset()  # first-call set-up out of the timing
start = time.perf_counter(); llama.eval(tokens); seconds = time.perf_counter() - start
print(json.dumps({"prompt_tokens": len(tokens), "seconds": seconds}))
"""


def probe(model: Path, tokens: int, logits_all: str) -> float:
    done = subprocess.run([sys.executable, "-c", PROBE, str(model), str(tokens), logits_all], capture_output=True,
                          text=True, timeout=900, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return float(result["prompt_tokens"] / result["seconds"])


def soft_dece(answers: int) -> dict[str, object]:
    exe = assay_exe()
    with tempfile.TemporaryDirectory() as tmp:
        items = demo_items(Path(tmp), answers)
        start = time.perf_counter()
        subprocess.run([exe, "eval", "dece", str(items), "--verdicts", "soft", "--judge-opt", "logits_all=true",
                        "--store", str(Path(tmp) / "s.db"), "--no-progress"], check=True, capture_output=True,
                       timeout=3600)
        wall = time.perf_counter() - start
        with sqlite3.connect(Path(tmp) / "s.db") as con:
            calls, prompt, generated, judge = con.execute(
                "SELECT COUNT(*), SUM(prompt_tokens), SUM(completion_tokens), SUM(latency_s) "
                "FROM judge_calls").fetchone()
            scores = [json.loads(row[0]) for row in con.execute("SELECT scores FROM results ORDER BY idx")]
    return {"wall_s": round(wall, 2), "judge_s": round(judge, 2), "calls": calls, "prompt_tokens": prompt,
            "generated_tokens": generated, "scores": scores}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--prompt-tokens", type=int, default=800)
    parser.add_argument("--answers", type=int, default=3, help="demo answers through soft DeCE (0: skip)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "logprobs_reading.json")
    args = parser.parse_args()
    models = {"embedded 1.5B": resolve_model().path, "SmolLM2-135M": smollm_path()}
    reading: dict[str, dict[str, list[float]]] = {name: {"on": [], "off": []} for name in models}
    runs: list[dict[str, object]] = []
    for _ in range(args.rounds):
        for name, path in models.items():
            for mode in ("on", "off"):
                reading[name][mode].append(probe(path, args.prompt_tokens, mode))
        if args.answers:
            runs.append(soft_dece(args.answers))
    out: dict[str, object] = {
        "machine": {"cpu": cpu_model(), "platform": platform.platform()}, "rounds": args.rounds,
        "prompt_tokens": args.prompt_tokens,
        "llama_cpp_logits_all": {
            name: {"tokens_per_s_on": [round(x, 1) for x in modes["on"]],
                   "tokens_per_s_off": [round(x, 1) for x in modes["off"]],
                   "median_on": round(statistics.median(modes["on"]), 1),
                   "median_off": round(statistics.median(modes["off"]), 1),
                   "on_over_off": round(statistics.median(modes["on"]) / statistics.median(modes["off"]), 3)}
            for name, modes in reading.items()},
    }
    if runs:
        out["soft_dece"] = {"answers": args.answers, "runs": runs,
                            "same_scores_every_round": all(r["scores"] == runs[0]["scores"] for r in runs)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in out.items() if k != "soft_dece"}, indent=2))
    for run in runs:
        print({k: v for k, v in run.items() if k != "scores"})


if __name__ == "__main__":
    main()
