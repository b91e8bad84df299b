"""LeMAJ with direct verdicts on the planted-defect contract answers: time and what it catches.

The six answers of ``tests/data/lemaj_planted.json`` (an original and five with one planted defect
of LeMAJ Table 13 each) scored with ``verdicts=direct`` by the embedded judge, in a fresh store,
alone on the machine. Per answer: wall time, judge calls, prompt and generated tokens, the share of
prompt tokens llama.cpp reused; per planted defect whether it was caught (tagged incorrect, or
irrelevant for the aside; a missing point or lower recall for the removed clause) and by whom
(the judge or a deterministic check). Writes ``results/lemaj_direct.json`` (``--out``).
Usage: python benchmarks/lemaj_direct.py [--out results/lemaj_direct.json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import assay
from assay import get_backend
from assay.engine.results import EvalResult
from assay.judge.runner import RunnerConfig
from assay.store import Store

HERE = Path(__file__).parent
PLANTED = HERE.parent / "tests" / "data" / "lemaj_planted.json"


def caught(planted: dict[str, Any], out: dict[str, dict[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name, sentence in planted["planted"].items():
        row = out[name]
        if name == "remove_info":
            found[name] = {"caught": any(d["tag"] == "missing" for d in row["ldps"])
                           or (row["recall"] or 0) < (out["original"]["recall"] or 0), "by": "recall"}
            continue
        want = "irrelevant" if name == "irrelevant_aside" else "incorrect"
        start = row["response"].index(sentence)
        hits = [d for d in row["ldps"] if d["tag"] == want and d["start"] is not None
                and d["start"] < start + len(sentence) and d["end"] > start]
        found[name] = {"caught": bool(hits), "by": sorted({d.get("decided_by") or "" for d in hits})}
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=HERE / "results" / "lemaj_direct.json")
    args = parser.parse_args()
    planted = json.loads(PLANTED.read_text())
    items = [{"id": name, "query": planted["query"], "response": text, "document": planted["document"]}
             for name, text in planted["answers"].items()]
    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder) / "l.db")
        judge = get_backend("llamacpp/default", n_ctx=4096)
        start = time.perf_counter()
        result = assay.evaluate(items, "lemaj", judge, store=store, runner=RunnerConfig(progress=False),
                                verdicts="direct", max_reason_chars=90, max_quote_chars=120)
        wall = time.perf_counter() - start
        assert isinstance(result, EvalResult)
        records = result.records()
        keys = sorted({k for r in store.results(result.run_id) for k in r.call_keys})
        stats = store.call_stats(keys)
    out = {r["id"]: r for r in records}
    report: dict[str, Any] = {"judge": "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (llama.cpp, CPU, 2 threads)",
              "answers": len(items),
              "wall_s": wall, "seconds_per_answer": wall / len(items),
              "per_answer": {k: stats[k] / len(items) for k in ("calls", "prompt_tokens", "completion_tokens")},
              "prefix_reuse": stats.get("prefix_reuse"), "caught": caught(planted, out),
              "correctness": {name: row.get("correctness") for name, row in out.items()}}
    args.out.write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v for k, v in report.items() if k != "caught"}, indent=1))
    print("caught:", {k: v["caught"] for k, v in report["caught"].items()})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
