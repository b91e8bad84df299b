"""`--dry-run`'s estimate against what a run took, on the embedded judge (issue 46).

Through the installed `assay`, as a user runs it: first `assay doctor` (it times this machine's
prompt reading and generation, which the estimates use), then for each case the dry run's printed
estimate (calls, tokens, the prompt tokens llama.cpp must read, seconds) and the real run in a fresh
store (calls, tokens, tokens read = prompt minus the cached prefix, from the store; seconds of the
run's own clock). Cases: the demo (three bundled answers) and the first ``--answers`` distinct
RAGChecker dev answers (gold answer as reference, cut to ``--chars`` characters), with direct
verdicts (the default) and, with ``--hard``, generated ones. The target: every time estimate
within ±30% of the run. Run it alone on the machine. Writes ``results/estimate_vs_measured.json``.
Usage: python benchmarks/estimate_vs_measured.py [--answers 4] [--hard]
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from assay.data.datasets.adapters import read_ragchecker

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks._cli import assay_exe  # shared by the benchmarks that run the command

HERE = Path(__file__).parent
DATA = HERE.parents[1] / "shared" / "data" / "ragchecker_human_labeled_dev.json"
ESTIMATE = re.compile(r"≈(\d+) judge calls, ≈(\d+) prompt \+ ≈(\d+) completion tokens.*?≈([\d.]+) (s|min) "
                      r"reading ≈(\d+) new prompt tokens")


def run(args: list[str], cwd: Path) -> tuple[str, float]:
    started = time.perf_counter()
    proc = subprocess.run([assay_exe(), *args], cwd=cwd, capture_output=True, text=True, timeout=7200)
    if proc.returncode != 0:
        raise SystemExit(f"assay {' '.join(args)} exited {proc.returncode}: {proc.stderr[-800:]}")
    return proc.stdout, time.perf_counter() - started


def estimated(text: str) -> dict[str, Any]:
    found = ESTIMATE.search(" ".join(text.split()))
    if found is None:
        raise SystemExit(f"no estimate in: {text}")
    calls, prompt, completion, value, unit, read = found.groups()
    return {"calls": int(calls), "prompt_tokens": int(prompt), "completion_tokens": int(completion),
            "read_tokens": int(read), "seconds": float(value) * (60 if unit == "min" else 1)}


def measured(store: Path) -> dict[str, Any]:
    db = sqlite3.connect(store)
    calls, prompt, cached, completion = db.execute(
        "SELECT COUNT(*), SUM(prompt_tokens), SUM(COALESCE(json_extract(completion, "
        "'$.usage.cached_prompt_tokens'), 0)), SUM(completion_tokens) FROM judge_calls").fetchone()
    started, finished = db.execute("SELECT MIN(created_at), MAX(finished_at) FROM runs").fetchone()
    return {"calls": calls, "prompt_tokens": prompt, "completion_tokens": completion, "read_tokens": prompt - cached,
            "run_seconds": None if finished is None else finished - started}


def case(name: str, dry: list[str], real: list[str], store: Path, cwd: Path) -> dict[str, Any]:
    out, _ = run(dry, cwd)
    guess = estimated(out)
    _, wall = run(real, cwd)
    got = measured(cwd / store)
    seconds = got["run_seconds"] or wall
    row = {"case": name, "estimate": guess, "measured": {**got, "wall_seconds": wall},
           "time_ratio": guess["seconds"] / seconds, "calls_ratio": guess["calls"] / got["calls"],
           "read_tokens_ratio": guess["read_tokens"] / max(1, got["read_tokens"])}
    print(f"{name}: estimate {guess['seconds']:.0f} s, {guess['calls']} calls, {guess['read_tokens']} read; run "
          f"{seconds:.0f} s, {got['calls']} calls, {got['read_tokens']} read → time ratio {row['time_ratio']:.2f}",
          flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--answers", type=int, default=4)
    parser.add_argument("--chars", type=int, default=1200)
    parser.add_argument("--hard", action="store_true", help="also generated verdicts on the RAGChecker answers")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "estimate_vs_measured.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        doctor, _ = run(["doctor"], work)
        speeds = [line for line in doctor.splitlines() if line.startswith(("forward", "generate"))]
        print("\n".join(speeds), flush=True)
        rows = [case("demo (3 bundled answers, direct)", ["demo", "--dry-run"], ["demo"], Path("demo-run.db"), work)]
        seen: set[str] = set()
        chosen = []
        for item in read_ragchecker(args.data).items:
            text = item.response.strip()
            if text and text not in seen and len(chosen) < args.answers:
                seen.add(text)
                chosen.append({"id": item.id, "system": item.system, "query": item.query,
                               "response": text[:args.chars],
                               "reference": item.reference.required if item.reference else ""})
        (work / "rag.jsonl").write_text("".join(json.dumps(r) + "\n" for r in chosen))
        modes = ["direct", "hard"] if args.hard else ["direct"]
        for mode in modes:
            store = f"rag-{mode}.db"
            rows.append(case(f"{len(chosen)} RAGChecker dev answers ({mode})",
                             ["eval", "dece", "rag.jsonl", "--verdicts", mode, "--dry-run"],
                             ["eval", "dece", "rag.jsonl", "--verdicts", mode, "--store", store, "--no-progress"],
                             Path(store), work))
    out = {"judge": "llamacpp/default (Qwen2.5-Coder-1.5B-Instruct Q4_K_M)", "doctor": speeds, "cases": rows,
           "within_30_percent": all(0.7 <= r["time_ratio"] <= 1.3 for r in rows)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1, allow_nan=False) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
