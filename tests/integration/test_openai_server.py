"""The openai backend against a real OpenAI-compatible server (llama-cpp-python's) on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import assay
from assay.core.errors import JudgeUnreachable
from assay.core.types import GenerateConfig, Message
from assay.judge.backends import get_backend
from assay.judge.runner import RunnerConfig
from assay.store import Store
from tests.helpers import ITEM
from tests.integration.conftest import free_port

pytestmark = pytest.mark.integration

SCHEMA = {"type": "object", "additionalProperties": False, "required": ["colour"],
          "properties": {"colour": {"type": "string", "enum": ["red", "green", "blue"]}}}


def test_schema_constrained_output_and_logprobs(llama_server: str) -> None:
    backend = get_backend(f"openai/smollm2@{llama_server}", schema_mode="json_object")
    messages = [Message(role="user", content="Name a primary colour of light, as JSON.")]
    config = GenerateConfig(max_tokens=24, json_schema=SCHEMA, logprobs=True, top_logprobs=3, seed=1)
    completion = asyncio.run(backend.generate(messages, config))
    assert json.loads(completion.text)["colour"] in ("red", "green", "blue")
    assert completion.usage.prompt_tokens > 0 and completion.usage.completion_tokens > 0
    assert completion.logprobs and all(t.logprob <= 0 for t in completion.logprobs)
    assert completion.latency_s > 0


def test_server_rejects_json_schema_mode_and_run_fails_closed(llama_server: str) -> None:
    # SPEC §2.1: the llama-cpp-python server answers json_schema with an error; the run must not
    # crash and must not invent a score.
    # Every call failing is reported as such (JudgeUnreachable, exit 4 from the CLI), and the
    # stored item is Unscored with the server's error, never a score.
    runner = RunnerConfig(progress=False, max_retries=0)
    store = Store(":memory:")
    with pytest.raises(JudgeUnreachable, match="500"):
        assay.evaluate([ITEM], "dece", f"openai/smollm2@{llama_server}", runner=runner, store=store,
                       judge_options={"schema_mode": "json_schema"})
    run = store.list_runs()[0]
    assert run.status == "failed: judge unreachable"
    row = store.results(run.run_id)[0]
    for metric in ("precision", "recall", "f_beta"):
        assert row.scores[metric] is None
    assert any("judge call failed" in u["reason"] for u in row.unscored)


def test_label_probabilities_and_dece_direct_through_the_server(llama_server: str) -> None:
    """Direct verdicts over an OpenAI-compatible server: one token with top logprobs, read as a
    distribution over the labels; DeCE with verdicts=direct gives every verdict a probability. (DeCE
    end to end through the server at its default was a test of its own; on a server, which gives
    label probabilities, the default is these direct verdicts, so it ran this same evaluation again:
    its checks — calls made and their prompt tokens counted, every metric a score in [0, 1] or
    Unscored with its reason — are here.)"""
    backend = get_backend(f"openai/smollm2@{llama_server}", schema_mode="json_object")
    messages = [Message(role="user", content="Is the sky blue on a clear day? Reply yes or no.")]
    done = asyncio.run(backend.generate(messages, GenerateConfig(max_tokens=1, labels=["yes", "no"])))
    assert done.label_probs is not None and set(done.label_probs) == {"yes", "no"}
    assert abs(sum(done.label_probs.values()) - 1.0) < 1e-6
    runner = RunnerConfig(progress=False, max_retries=1)
    result = assay.evaluate([ITEM], "dece", f"openai/smollm2@{llama_server}", runner=runner,
                            judge_options={"schema_mode": "json_object"}, max_reasks=1, verdicts="direct")
    row = result.records()[0]
    verdicts = row["criteria"] + row["elements"]
    # SmolLM2-135M may fail an extraction (then that metric is Unscored with its reason); every
    # verdict it was asked carries a probability
    for entry in verdicts:
        if "p_judge" in entry:
            assert 0.0 <= entry["p_judge"] <= 1.0
    asked = [e for e in verdicts if "p_judge" in e]
    if not asked:
        assert row["unscored"], row
    for metric in ("precision", "recall", "f_beta"):
        if row[metric] is None:
            assert any(u["metric"] == metric for u in row["unscored"])
        else:
            assert 0.0 <= row[metric] <= 1.0
    assert row["judge_calls"] >= 2
    assert result.summary()["judge_calls"]["prompt_tokens"] > 0


def test_one_judge_over_two_servers_and_a_dead_endpoint(two_llama_servers: tuple[str, str],
                                                        tmp_path: Path) -> None:
    """openai/MODEL@URL1,URL2,URL3 with URL3 refusing connections: every item is scored, both
    live servers answer, the dead one is set aside, and the calls are cached under one identity
    (a second run over another set of the same servers makes no call). Three items, one call each,
    all in flight at once (one per endpoint: the pool's concurrency is three) so each endpoint is
    tried; reasons of at most 40 characters keep each call short."""
    from assay.judge.backends._pool import PoolBackend

    llama_server, second_llama_server = two_llama_servers
    dead = f"http://127.0.0.1:{free_port()}/v1"
    name = f"openai/smollm2@{llama_server},{second_llama_server},{dead}"
    backend = get_backend(name, schema_mode="json_object", max_concurrency=1)
    assert isinstance(backend, PoolBackend)
    items = [assay.Item(id=f"q{n}", query=f"What is {n} plus {n}?", response=f"It is {2 * n}.",
                        reference=f"{2 * n}.") for n in range(3)]
    runner = RunnerConfig(progress=False, max_retries=2, timeout_s=120)
    result = assay.evaluate(items, "pointwise", backend, runner=runner, store=tmp_path / "p.db", max_reasks=0,
                            max_reasoning_chars=40)
    stats = {s["endpoint"]: s for s in backend.stats()}
    print(stats)
    assert all(r.status in ("scored", "unscored") for r in result.rows)
    assert all("judge call failed" not in (u.reason or "") for r in result.rows for u in r.unscored)
    assert stats[f"openai/smollm2@{llama_server}"]["calls"] > 0
    assert stats[f"openai/smollm2@{second_llama_server}"]["calls"] > 0
    assert stats[f"openai/smollm2@{dead}"]["calls"] == 0 and stats[f"openai/smollm2@{dead}"]["failures"] >= 1
    again = assay.evaluate(items, "pointwise", f"openai/smollm2@{second_llama_server},{llama_server}",
                           runner=runner, store=tmp_path / "p.db", judge_options={"schema_mode": "json_object"},
                           resume=True, max_reasks=0, max_reasoning_chars=40)
    assert again.client_stats is not None and again.client_stats.calls == 0
