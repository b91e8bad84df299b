"""Would evaluating a unit's label questions together be faster? llama.cpp's speed by batch size,
and DeCE's questions one at a time against all in one batch.

DeCE with direct verdicts asks one label question per criterion and element: the shared start
(instructions, reference, answer) stays in llama.cpp's KV cache and each question evaluates only its
own new tokens. Batching them (several sequences in one ``llama_decode`` over the shared prefix) pays
only if llama.cpp reads small batches much slower than large ones. Two measurements, in a child
process per model, best of ``--rounds``:

1. **Speed by batch size.** After a cached 400-token prefix, the time to evaluate N new tokens, for N
   in ``--sizes``: prompt tokens per second at each N.
2. **DeCE's questions, one at a time against together.** The new-token counts of the direct-verdict
   label calls of ``assay eval dece`` on the demo's first ``--answers`` answers (run first, through
   the installed command; its store gives each call's prompt and reused tokens). Each question's
   tokens evaluated one call after another, each after the cached prefix, against all of them in
   one batch after it (the compute a multi-sequence batch over the shared prefix would do, without
   the bookkeeping): the most that batching could save, as seconds and as a share of the run's judge time.

Usage: python benchmarks/batch_sizes.py [--rounds 3] [--answers 3] [--sizes 8,16,32,64,128,256,512]
       [--out benchmarks/results/batch_sizes.json]
Run it alone on the machine: two model processes at once halve each other's speed.
"""

from __future__ import annotations

import argparse
import json
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from assay.judge.doctor import cpu_model
from assay.judge.model import resolve_model

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks._cli import assay_exe, demo_items  # shared by the benchmarks that run the command

HERE = Path(__file__).parent

PROBE = r"""
import json, sys, time
from llama_cpp import Llama
path, rounds = sys.argv[1], int(sys.argv[2])
sizes, questions = json.loads(sys.argv[3]), json.loads(sys.argv[4])
llama = Llama(model_path=path, n_ctx=4096, verbose=False, logits_all=False)
text = ("The supplier invoices monthly and payment is due within forty-five days of the invoice date. "
        "Late payments carry interest of two percent per month, and either party may end the agreement "
        "with ninety days of written notice. ") * 60
tokens = llama.tokenize(text.encode(), add_bos=True)
PREFIX = 400
llama.eval(tokens[:PREFIX])

def timed(n):
    best = float("inf")
    for _ in range(rounds):
        llama.n_tokens = PREFIX
        start = time.perf_counter()
        llama.eval(tokens[PREFIX:PREFIX + n])
        best = min(best, time.perf_counter() - start)
    return best

by_size = {n: timed(n) for n in sizes}
one_at_a_time = together = float("inf")
for _ in range(rounds):
    start = time.perf_counter()
    for n in questions:
        llama.n_tokens = PREFIX
        llama.eval(tokens[PREFIX:PREFIX + n])
    one_at_a_time = min(one_at_a_time, time.perf_counter() - start)
    llama.n_tokens = PREFIX
    start = time.perf_counter(); llama.eval(tokens[PREFIX:PREFIX + sum(questions)])
    together = min(together, time.perf_counter() - start)
print(json.dumps({"by_size": by_size, "one_at_a_time_s": one_at_a_time, "together_s": together}))
"""


def dece_questions(answers: int) -> tuple[list[int], float, float]:
    """The new-token counts of the label calls of direct DeCE on the demo's first answers, the
    run's judge seconds and its wall time."""
    exe = assay_exe()
    with tempfile.TemporaryDirectory() as tmp:
        items = demo_items(Path(tmp), answers)
        start = time.perf_counter()
        subprocess.run([exe, "eval", "dece", str(items), "--verdicts", "direct", "--store", str(Path(tmp) / "d.db"),
                        "--no-progress"], check=True, capture_output=True, timeout=3600)
        wall = time.perf_counter() - start
        with sqlite3.connect(Path(tmp) / "d.db") as con:
            rows = [json.loads(c) for (c,) in con.execute("SELECT completion FROM judge_calls")]
            judge = float(con.execute("SELECT SUM(latency_s) FROM judge_calls").fetchone()[0])
    new = [r["usage"]["prompt_tokens"] - r["usage"].get("cached_prompt_tokens", 0)
           for r in rows if r["usage"]["completion_tokens"] == 0]  # label calls generate nothing
    return new, judge, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--answers", type=int, default=3, help="demo answers through direct DeCE")
    parser.add_argument("--sizes", default="8,16,32,64,128,256,512")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "batch_sizes.json")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    questions, judge_s, wall_s = dece_questions(args.answers)
    # the small questions a batch would gather; a long new start (a new reference or answer) is
    # already one large batch
    small = [n for n in questions if n <= 64]
    done = subprocess.run([sys.executable, "-c", PROBE, str(resolve_model().path), str(args.rounds), json.dumps(sizes),
                           json.dumps(small)], capture_output=True, text=True, timeout=3600, check=True)
    probe = json.loads(done.stdout.strip().splitlines()[-1])
    saved = probe["one_at_a_time_s"] - probe["together_s"]
    out = {
        "machine": {"cpu": cpu_model(), "platform": platform.platform()}, "rounds": args.rounds,
        "model": "embedded 1.5B", "prefix_tokens": 400,
        "tokens_per_s_by_new_tokens": {n: round(int(n) / s, 1) for n, s in probe["by_size"].items()},
        "dece_direct": {"answers": args.answers, "wall_s": round(wall_s, 1), "judge_s": round(judge_s, 1),
                        "label_calls": len(questions), "new_tokens_per_label_call": sorted(questions),
                        "small_questions": len(small), "small_new_tokens": sum(small),
                        "one_at_a_time_s": round(probe["one_at_a_time_s"], 2),
                        "together_s": round(probe["together_s"], 2), "most_batching_saves_s": round(saved, 2),
                        "share_of_judge_time": round(saved / judge_s, 3)},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
