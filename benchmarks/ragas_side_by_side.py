"""assay DeCE (direct verdicts) against RAGAS FactualCorrectness, in one run, on the same answers and judge.

The first N distinct RAGChecker dev answers (as ``cost_ragchecker.py``: truncated to 1,500 characters,
the pair's gold answer as reference) are scored by both tools, one after the other, through ONE
llama.cpp server on 127.0.0.1 serving the embedded judge (``python -m assay.judge.serve``, 2 threads,
``logits_all`` for assay's label probabilities). RAGAS is not a dependency of assay: it runs in its
own environment (``--ragas-python``, a venv with ``pip install ragas==0.4.3``), as a child process,
with its defaults (FactualCorrectness mode f1, atomicity and coverage low; instructor in JSON mode
over an AsyncOpenAI client). Both tools reach the server through a recording proxy in this process,
which keeps every request's messages, the server's ``usage`` and the call's time; assay also runs at
concurrency 1 and sends ``repeat_penalty`` 1.0 (the server's default 1.1 is not what assay's embedded
judge uses).

Per answer and tool: wall time, calls, prompt tokens, generated tokens (the server's counts), and two
kinds of cached prompt tokens computed from the chat-templated prompts (the judge's own tokenizer):
- ``llama.cpp reuse``: the start a call shares with the call just before it (what the server keeps);
- ``OpenAI rule``: for each call, the longest start shared with any earlier call of the same tool's
  run, billed as cached by OpenAI's automatic rule (prompts of 1,024 tokens or more, in 128-token
  steps: ``assay.judge.prices.openai_cached``). Hosted models write other completions and count
  tokens with another tokenizer: the cost rows are the list price of THESE token counts.
Cost: USD list price per answer at gpt-4o-mini and gpt-4.1 (OpenAI's price table in
``assay.judge.prices``), without and with that caching. Scores are printed, not compared: the
judge is weak and this measures cost, not quality.

Writes ``results/ragas_side_by_side.json`` and prints a markdown table. Run it alone on the machine.
RAGAS's environment (pip resolves a langchain-community without the module RAGAS 0.4.3 imports):
    python3 -m venv ragas-venv && ragas-venv/bin/pip install ragas==0.4.3 langchain-community==0.4.1
Usage: python benchmarks/ragas_side_by_side.py --ragas-python ragas-venv/bin/python [--answers 4]
       [--variant direct --variant hard-brief --variant soft-brief]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from assay import aevaluate
from assay.judge.model import resolve_model
from assay.judge.prices import PRICES_PER_MILLION, Price, openai_cached
from assay.judge.runner import RunnerConfig
from assay.judge.serve import free_port, running
from assay.store import Store

sys.path.insert(0, str(Path(__file__).parent))
from cost_ragchecker import DATA, answers

HERE = Path(__file__).parent
MODELS = ("openai/gpt-4o-mini", "openai/gpt-4.1")
# DeCE's options per variant: direct (label probabilities, the default on judges that give them);
# the brief generated verdicts (no written reasons), what a judge without logprobs would be asked; and the
# same one call per list with each verdict's probability read from the logprobs of its generated label
VARIANTS: dict[str, dict[str, Any]] = {"direct": {"verdicts": "direct"},
                                       "hard-brief": {"verdicts": "hard", "reasoning": False},
                                       "soft-brief": {"verdicts": "soft", "reasoning": False}}

RAGAS_CHILD = r'''
import asyncio, json, sys, time
from openai import AsyncOpenAI
from ragas.llms.base import llm_factory
from ragas.metrics.collections import FactualCorrectness

async def main(base, items_path, out_path):
    client = AsyncOpenAI(base_url=base, api_key="not-needed", timeout=1800, max_retries=0)
    metric = FactualCorrectness(llm=llm_factory("qwen", client=client))
    for line in open(items_path, encoding="utf-8"):
        item = json.loads(line)
        start = time.perf_counter()
        try:
            value, error = (await metric.ascore(response=item["response"], reference=item["reference"])).value, None
        except Exception as exc:  # what RAGAS raises on an output it cannot parse: recorded, not hidden
            value, error = None, f"{type(exc).__name__}: {exc}"[:400]
        row = {"id": item["id"], "value": value, "error": error, "seconds": time.perf_counter() - start}
        with open(out_path, "a", encoding="utf-8") as out:
            out.write(json.dumps(row) + "\n")

asyncio.run(main(*sys.argv[1:4]))
'''


class Recorder:
    """A reverse proxy on 127.0.0.1 that forwards to the server and records each chat call."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.calls: list[dict[str, Any]] = []
        self.tool = ""
        self.lock = threading.Lock()
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _forward(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                start = time.perf_counter()
                with httpx.Client(timeout=1800) as client:
                    reply = client.request(method, recorder.upstream + self.path.removeprefix("/v1"),
                                           content=body, headers={"Content-Type": "application/json"})
                seconds = time.perf_counter() - start
                if method == "POST" and self.path.endswith("/chat/completions"):
                    request = json.loads(body)
                    usage = (reply.json().get("usage") if reply.status_code == 200 else None) or {}
                    with recorder.lock:
                        recorder.calls.append({"tool": recorder.tool, "messages": request.get("messages"),
                                               "status": reply.status_code, "seconds": seconds,
                                               "prompt_tokens": usage.get("prompt_tokens", 0),
                                               "completion_tokens": usage.get("completion_tokens", 0)})
                self.send_response(reply.status_code)
                self.send_header("Content-Type", reply.headers.get("Content-Type", "application/json"))
                self.send_header("Content-Length", str(len(reply.content)))
                self.end_headers()
                self.wfile.write(reply.content)

            def do_GET(self) -> None:
                self._forward("GET")

            def do_POST(self) -> None:
                self._forward("POST")

        self.port = free_port()
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.base = f"http://127.0.0.1:{self.port}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def shared(a: list[int], b: list[int]) -> int:
    """How many tokens ``a`` and ``b`` share from their start."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def token_counts(calls: list[dict[str, Any]], model_path: Path) -> None:
    """Adds each call's llama.cpp reuse and OpenAI-rule cached tokens (chat-templated as the server
    does, with the model's own template and tokenizer)."""
    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    vocab = Llama(model_path=str(model_path), vocab_only=True, verbose=False)
    formatter = Jinja2ChatFormatter(template=vocab.metadata["tokenizer.chat_template"],
                                    eos_token=vocab.detokenize([vocab.token_eos()]).decode("utf-8", "replace"),
                                    bos_token=vocab.detokenize([vocab.token_bos()]).decode("utf-8", "replace"))
    previous: dict[str, list[int]] = {}
    earlier: dict[str, list[list[int]]] = {}
    for call in calls:
        messages = [{"role": m["role"], "content": m["content"] if isinstance(m["content"], str)
                     else json.dumps(m["content"])} for m in call["messages"]]
        ids = vocab.tokenize(formatter(messages=messages).prompt.encode("utf-8"), add_bos=False, special=True)
        tool = call["tool"]
        call["templated_tokens"] = len(ids)
        call["llamacpp_reuse"] = shared(previous.get(tool, []), ids)
        best = max((shared(old, ids) for old in earlier.get(tool, [])), default=0)
        call["openai_cached"] = openai_cached(call["prompt_tokens"], best)
        previous[tool] = ids
        earlier.setdefault(tool, []).append(ids)


def plain(item: Any) -> str:
    """The gold answer as one text (RAGAS takes a plain reference; RAGChecker's is all required)."""
    reference = item.reference
    return "\n\n".join(part for part in (reference.required, reference.helpful) if part.strip())


def summary(calls: list[dict[str, Any]], n: int, wall: float) -> dict[str, Any]:
    prompt = sum(c["prompt_tokens"] for c in calls)
    completion = sum(c["completion_tokens"] for c in calls)
    cached = sum(c["openai_cached"] for c in calls)
    row: dict[str, Any] = {
        "answers": n, "wall_s": round(wall, 1), "seconds_per_answer": round(wall / n, 1),
        "calls": round(len(calls) / n, 1), "failed_calls": sum(c["status"] != 200 for c in calls),
        "prompt_tokens": round(prompt / n), "completion_tokens": round(completion / n),
        "llamacpp_reuse_tokens": round(sum(c["llamacpp_reuse"] for c in calls) / n),
        "openai_cached_tokens": round(cached / n), "cost_usd_per_answer": {}}
    for model in MODELS:
        price = Price(*PRICES_PER_MILLION[model])
        row["cost_usd_per_answer"][model] = {
            "no_cache": price.cost(prompt, completion) / n,
            "openai_cache": price.cost(prompt, completion, cached) / n}
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ragas-python", type=Path, required=True,
                        help="the Python of an environment with ragas==0.4.3 (not assay's)")
    parser.add_argument("--answers", type=int, default=4)
    parser.add_argument("--chars", type=int, default=1500)
    parser.add_argument("--variant", action="append", choices=sorted(VARIANTS), default=[],
                        help="DeCE's verdicts (repeat for several; default direct)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "ragas_side_by_side.json")
    args = parser.parse_args()
    items = answers(args.data, args.answers, args.chars)
    model = resolve_model().path
    version = subprocess.run([str(args.ragas_python), "-c", "import ragas; print(ragas.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    out: dict[str, Any] = {"answers": [i.key for i in items], "chars": args.chars, "ragas": version,
                           "judge": f"Qwen2.5-Coder-1.5B-Instruct Q4_K_M, python -m assay.judge.serve, "
                                    f"{args.threads} threads", "tools": {}}
    walls: dict[str, float] = {}
    scores: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp, \
            running(model, Path(tmp) / "server.log", alias="qwen", threads=args.threads) as base:
        proxy = Recorder(base)
        try:
            for variant in args.variant or ["direct"]:
                proxy.tool = f"assay DeCE {variant}"
                start = time.perf_counter()
                result = asyncio.run(aevaluate(items, "dece", f"openai/qwen@{proxy.base}", **VARIANTS[variant],
                                               store=Store(Path(tmp) / f"dece-{variant}.db"),
                                               runner=RunnerConfig(progress=False, concurrency=1, timeout_s=900),
                                               judge_options={"schema_mode": "json_object",
                                                              "extra_body": {"repeat_penalty": 1.0}}))
                walls[proxy.tool] = time.perf_counter() - start
                scores[proxy.tool] = {r.key: r.scores.get("f_beta") for r in result.rows}
                print(f"{proxy.tool}: {walls[proxy.tool]:.0f} s", flush=True)
            proxy.tool = "RAGAS FactualCorrectness"
            (Path(tmp) / "items.jsonl").write_text("".join(
                json.dumps({"id": i.key, "response": i.response, "reference": plain(i)}) + "\n" for i in items))
            (Path(tmp) / "child.py").write_text(RAGAS_CHILD)
            start = time.perf_counter()
            child = subprocess.run([str(args.ragas_python), str(Path(tmp) / "child.py"), proxy.base,
                                    str(Path(tmp) / "items.jsonl"), str(Path(tmp) / "ragas.jsonl")],
                                   capture_output=True, text=True, timeout=6 * 3600)
            walls["RAGAS FactualCorrectness"] = time.perf_counter() - start
            if child.returncode != 0:
                raise SystemExit(f"the RAGAS child failed ({child.returncode}): {child.stderr[-2000:]}")
            ragas_rows = [json.loads(line) for line in (Path(tmp) / "ragas.jsonl").read_text().splitlines()]
            print(f"RAGAS: {walls['RAGAS FactualCorrectness']:.0f} s", flush=True)
        finally:
            proxy.close()
    token_counts(proxy.calls, model)
    scores["RAGAS FactualCorrectness"] = {r["id"]: r["value"] for r in ragas_rows}
    for tool, wall in walls.items():
        out["tools"][tool] = summary([c for c in proxy.calls if c["tool"] == tool], len(items), wall)
        out["tools"][tool]["scores"] = scores[tool]
    r = out["tools"]["RAGAS FactualCorrectness"]
    r["errors"] = [row for row in ragas_rows if row["error"]]
    out["ratios_over_ragas"] = {tool: {
        "seconds": round(a["seconds_per_answer"] / r["seconds_per_answer"], 3),
        "prompt_tokens": round(a["prompt_tokens"] / r["prompt_tokens"], 3),
        **{f"cost {m} {k}": round(a["cost_usd_per_answer"][m][k] / r["cost_usd_per_answer"][m][k], 3)
           for m in MODELS for k in ("no_cache", "openai_cache")}} for tool, a in out["tools"].items() if a is not r}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print("| per answer | s | calls | prompt | llama.cpp reuse | OpenAI-cached | generated | "
          + " | ".join(f"{m} (no cache / cache)" for m in MODELS) + " |")
    print("|---" * (7 + len(MODELS)) + "|")
    for tool, row in out["tools"].items():
        costs = " | ".join(f"${row['cost_usd_per_answer'][m]['no_cache']:.5f} / "
                           f"${row['cost_usd_per_answer'][m]['openai_cache']:.5f}" for m in MODELS)
        print(f"| {tool} | {row['seconds_per_answer']} | {row['calls']} | {row['prompt_tokens']} | "
              f"{row['llamacpp_reuse_tokens']} | {row['openai_cached_tokens']} | {row['completion_tokens']} | "
              f"{costs} |")
    print(json.dumps(out["ratios_over_ragas"], indent=2))


if __name__ == "__main__":
    main()
