"""Cost as the providers bill it, through the installed `assay` executable: the ``--dry-run`` line
(without and with OpenAI's prompt cache) and the summary line of a run whose judge (a server on
127.0.0.1) reports cached prompt tokens."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.judge.prices import Price
from tests.helpers import ITEM
from tests.stubs import stub_server

ASSAY = shutil.which("assay", path=str(Path(sys.executable).parent))
pytestmark = pytest.mark.skipif(ASSAY is None, reason="the assay console script is not installed (make setup)")
GRADE = json.dumps({"reasoning": "stages", "issues": [], "score": 3, "justification": "ok"})


def run(*args: object, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    assert ASSAY is not None
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "OPENAI_"))}
    full_env.update({"COLUMNS": "100", **(env or {})})
    return subprocess.run([ASSAY, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env=full_env, stdin=subprocess.DEVNULL)


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def line_of(output: str, start: str) -> str:
    lines = [line for line in output.splitlines() if line.startswith(start)]
    assert len(lines) == 1, output
    return lines[0]


# --- --dry-run --------------------------------------------------------------------------------------
LONG = {**ITEM, "response": " ".join(f"The policy covers case {i} if filed within {i + 3} days." for i in range(80)),
        "reference": " ".join(f"Clause {i}: case {i} claims are filed within {i + 3} days." for i in range(80))}


def test_the_dry_run_prices_a_long_shared_start_as_cached(tmp_path: Path) -> None:
    items = [LONG, {**LONG, "id": "q2", "query": "And for a second claim?"}]
    write_jsonl(tmp_path / "items.jsonl", items)
    proc = run("eval", "dece", "items.jsonl", "--judge", "openai/gpt-4o-mini", "--verdicts", "direct", "--dry-run",
               cwd=tmp_path, env={"OPENAI_API_KEY": "sk-not-used"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = line_of(proc.stdout, "dry run:")
    est = assay.estimate(items, "dece", verdicts="direct")
    assert est.cached_tokens is not None and est.cached_tokens > 0
    price = Price(0.15, 0.075, 0.60)
    full, cached = price.cost(est.prompt_tokens, est.completion_tokens), \
        price.cost(est.prompt_tokens, est.completion_tokens, est.cached_tokens)
    assert cached < full
    assert (f"≈{est.prompt_tokens} prompt + ≈{est.completion_tokens} completion tokens, direct verdicts, assuming 4 "
            "criteria and 4 elements an answer (the judge's extraction decides; calls and tokens grow with them) → "
            f"≈${full:.4f} at openai/gpt-4o-mini's list price ($0.15/1M in, $0.075/1M cached in, $0.6/1M out); "
            f"≈${cached:.4f} with ≈{est.cached_tokens} prompt tokens billed as cached (OpenAI's rule assumed: of "
            "a prompt of ≥1,024 tokens, the start it shares with a recent call, in 128-token steps)") in line


def test_a_dry_run_before_the_key_is_set_estimates_the_run_the_judge_will_make(tmp_path: Path) -> None:
    """Without OPENAI_API_KEY the judge cannot be built: the estimate is still of the verdicts an OpenAI
    judge settles on (direct: it gives label probabilities), not of hard verdicts, and the line says a run
    would stop at once."""
    write_jsonl(tmp_path / "items.jsonl", [ITEM])
    keyless = run("eval", "dece", "items.jsonl", "--judge", "openai/gpt-4o-mini", "--dry-run", cwd=tmp_path)
    keyed = run("eval", "dece", "items.jsonl", "--judge", "openai/gpt-4o-mini", "--dry-run", cwd=tmp_path,
                env={"OPENAI_API_KEY": "sk-not-used"})
    assert keyless.returncode == 0 and keyed.returncode == 0, keyless.stderr + keyed.stderr
    est = assay.estimate([ITEM], "dece", verdicts="direct")
    for proc in (keyless, keyed):
        assert f"≈{est.calls} judge calls, ≈{est.prompt_tokens} prompt" in line_of(proc.stdout, "dry run:")
    assert ("direct verdicts as openai/gpt-4o-mini would settle them: the judge cannot be built here (openai/...: "
            "set OPENAI_API_KEY") in line_of(keyless.stdout, "dry run:")
    assert "so a run would stop before its first call" in keyless.stdout
    assert "cannot be built" not in keyed.stdout and ", direct verdicts, assuming" in keyed.stdout
    hard = run("eval", "dece", "items.jsonl", "--judge", "openai/gpt-4o-mini", "--verdicts", "hard", "--dry-run",
               cwd=tmp_path)
    assert "hard verdicts; the judge cannot be built here" in line_of(hard.stdout, "dry run:")


def test_the_dry_run_of_the_embedded_judge_gives_the_time_with_its_instructions_kept(tmp_path: Path) -> None:
    """A local judge: the time of a machine's first run, and of a later one that loads the
    instructions the first kept (nothing is loaded; with no speed measured here, the embedded judge's
    on the slowest machine)."""
    write_jsonl(tmp_path / "items.jsonl", [ITEM])
    proc = run("eval", "dece", "items.jsonl", "--judge", "llamacpp/default", "--verdicts", "direct", "--dry-run",
               cwd=tmp_path, env={"ASSAY_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = line_of(proc.stdout, "dry run:")
    est = assay.estimate([ITEM], "dece", verdicts="direct")
    assert f"reading ≈{est.read_tokens} new prompt tokens" in line
    assert (f"where an earlier run on this machine kept the ≈{est.instruction_tokens} tokens of instructions "
            "(the embedded judge keeps them on disk unless --judge-opt prefix_cache=false)") in line
    assert "at 20 prompt and 5 generated tokens/s, the slowest 2-core CPU we measured" in line
    assert not (tmp_path / "cache").exists()  # a dry run keeps nothing
    off = run("eval", "dece", "items.jsonl", "--judge", "llamacpp/default", "--verdicts", "direct", "--dry-run",
              "--judge-opt", "prefix_cache=false", cwd=tmp_path)
    assert off.returncode == 0 and "earlier run" not in line_of(off.stdout, "dry run:"), off.stdout + off.stderr


@pytest.mark.parametrize("model", ["smollm2", "default"])
@pytest.mark.parametrize("basis", ["same", "earlier file", "none", "no record"])
def test_the_dry_run_uses_a_measured_speed_only_for_the_file_and_build_it_was_measured_with(
        tmp_path: Path, basis: str, model: str) -> None:
    """`assay doctor` keeps the speed it measured per judge name; a record made with another model file
    (SmolLM2 was loaded as Q4_1 before) or another llama.cpp build, or by a version that did not say,
    is not this judge's speed. The embedded judge then gets the slowest machine's speed, said to be
    that; another model (15-20x faster than the embedded judge) gets no time at all, and the command
    that measures it."""
    from assay.judge import doctor

    cache = tmp_path / "cache"
    cache.mkdir()
    record: dict[str, Any] = {"model": model, "prompt_tokens_per_s": 1234.0, "generated_tokens_per_s": 321.0,
                              "cpu": "Test CPU"}
    if basis in ("same", "earlier file"):
        record["basis"] = {**doctor.speed_basis(model)}
    if basis == "earlier file":
        record["basis"]["model_file"] = "smollm2-135m-instruct-q4_1.gguf"
    if basis != "no record":
        (cache / f"speed-{model}.json").write_text(json.dumps(record))
    write_jsonl(tmp_path / "items.jsonl", [ITEM])
    proc = run("eval", "dece", "items.jsonl", "--judge", f"llamacpp/{model}", "--verdicts", "direct", "--dry-run",
               cwd=tmp_path, env={"ASSAY_CACHE_DIR": str(cache)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = line_of(proc.stdout, "dry run:")
    if basis == "same":
        assert "at 1234 prompt and 321 generated tokens/s, measured here by assay doctor (Test CPU)" in line
        return
    assert "1234" not in line
    if model == "smollm2":
        assert ("time not estimated: no speed of this model was measured here (`assay doctor --model smollm2` "
                "measures it)") in line and " s reading" not in line
        return
    assert "at 20 prompt and 5 generated tokens/s, the slowest 2-core CPU we measured" in line
    stale = "(its last measurement here was of another model file or llama.cpp build)"
    assert (stale in line) == (basis != "no record")


def test_a_pairwise_dry_run_counts_pairs_and_prices_every_call_of_each(tmp_path: Path) -> None:
    """The dry run counts what the run's summary counts (pairs, not their two answers), and each call's
    instructions once per call: they were added once per run, so 20 pairs were estimated at ~45 prompt
    tokens a call (a real call of these pairs reads ~390)."""
    pair = {"query": "What is the capital of France?", "reference": "Paris.",
            "a": {"system": "good", "response": "Paris is the capital of France."},
            "b": {"system": "bad", "response": "The capital of France is Lyon."}}
    estimates = {}
    for n in (1, 20):
        write_jsonl(tmp_path / f"p{n}.jsonl", [{**pair, "id": f"q{i}"} for i in range(n)])
        proc = run("pairwise", f"p{n}.jsonl", "--judge", "llamacpp/default", "--dry-run", "--no-swap", cwd=tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        line = line_of(proc.stdout, "dry run:")
        assert line.startswith(f"dry run: {n} item(s) → ≈{n} judge calls, ≈"), line
        estimates[n] = int(line.split(" prompt + ")[0].rsplit("≈", 1)[1])
    assert estimates[20] == pytest.approx(20 * estimates[1], rel=0.02)
    assert estimates[1] > 300  # the instructions alone are ~350 tokens


def test_the_dry_run_of_short_prompts_caches_nothing_and_a_given_cached_price_is_used(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "items.jsonl", [ITEM])
    proc = run("eval", "dece", "items.jsonl", "--judge", "openai/m@http://127.0.0.1:9/v1", "--dry-run",
               "--price-in", "2", "--price-cached", "0.5", "--price-out", "8", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = line_of(proc.stdout, "dry run:")
    assert "at the given price ($2/1M in, $0.5/1M cached in, $8/1M out)" in line
    assert "with ≈0 prompt tokens billed as cached" in line  # every prompt below 1,024 tokens
    # a judge without a known price, and no price given: it says which options price it
    bare = line_of(run("eval", "dece", "items.jsonl", "--judge", "openai/m@http://127.0.0.1:9/v1", "--dry-run",
                       cwd=tmp_path).stdout, "dry run:")
    assert "give --price-in, --price-out and" in bare and "--price-cached" in bare
    for bad in ("nan", "-1", "inf"):
        refused = run("eval", "dece", "items.jsonl", "--dry-run", "--price-cached", bad, cwd=tmp_path)
        assert refused.returncode == 2 and "--price-cached" in refused.stderr, refused.stderr
    above = run("eval", "dece", "items.jsonl", "--dry-run", "--price-in", "1", "--price-cached", "2", cwd=tmp_path)
    assert above.returncode == 2 and "--price-cached 2 is above --price-in 1" in above.stderr, above.stderr


# --- the summary line of a run --------------------------------------------------------------------
def chat(usage: dict[str, Any]) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": GRADE}, "finish_reason": "stop"}],
            "usage": usage}


def test_the_summary_line_shows_cached_tokens_and_the_cost_as_billed(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "items.jsonl", [{**ITEM, "id": f"q{i}", "query": f"Question {i}?"} for i in range(2)])
    usage = {"prompt_tokens": 2000, "completion_tokens": 10, "total_tokens": 2010,
             "prompt_tokens_details": {"cached_tokens": 1536}}
    prices = ("--price-in", "2", "--price-cached", "0.5", "--price-out", "8")
    with stub_server("json", lambda _: chat(usage)) as stub:
        args = ("eval", "pointwise", "items.jsonl", "--judge", f"openai/m@{stub.url}", "--no-progress",
                "--store", "r.db")
        proc = run(*args, *prices, cwd=tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert stub.requests == 2
    cost = Price(2.0, 0.5, 8.0).cost(4000, 20, 3072)
    assert cost == pytest.approx((928 * 2 + 3072 * 0.5 + 20 * 8) / 1e6)
    assert line_of(proc.stdout, "2 item(s)") == (
        "2 item(s); judge calls behind them: 2 (4000 prompt + 20 completion tokens, of which 3072 prompt tokens "
        f"cached); ${cost:.4f} at the given price ($2/1M in, $0.5/1M cached in, $8/1M out)")
    # the finished run again, from the store (no server): the cost comes from the stored usage
    again = run(*args, "--price-in", "2", "--price-out", "8", cwd=tmp_path)
    assert again.returncode == 0 and "was already finished" in again.stdout, again.stdout + again.stderr
    undiscounted = Price(2.0, 2.0, 8.0).cost(4000, 20, 3072)
    assert line_of(again.stdout, "2 item(s)").endswith(
        f"of which 3072 prompt tokens cached); ${undiscounted:.4f} at the given price ($2/1M in, $2/1M cached in, "
        "$8/1M out)")
    # no price given and none known for a model at another address: tokens only
    bare = run(*args, cwd=tmp_path)
    assert line_of(bare.stdout, "2 item(s)").endswith("of which 3072 prompt tokens cached)")


def test_a_server_that_reports_no_cache_gives_the_line_as_before(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "items.jsonl", [ITEM])
    usage = {"prompt_tokens": 2000, "completion_tokens": 10, "prompt_tokens_details": None}
    with stub_server("json", lambda _: chat(usage)) as stub:
        proc = run("eval", "pointwise", "items.jsonl", "--judge", f"openai/m@{stub.url}", "--no-progress",
                   "--store", "r.db", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert line_of(proc.stdout, "1 item(s)") == \
        "1 item(s); judge calls behind them: 1 (2000 prompt + 10 completion tokens)"
