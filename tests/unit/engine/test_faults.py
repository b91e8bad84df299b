"""Fault injection: timeouts, 429 with Retry-After, 500, 400, malformed JSON and truncated
output never crash a run; every item ends scored or Unscored with its reason."""

from __future__ import annotations

import random

import pytest

import assay
from assay.core.errors import BackendError, JudgeUnreachable, RateLimited, TransientBackendError
from assay.core.types import Completion, GenerateConfig, Message
from assay.judge.backends import JudgeBackend, ScriptedBackend
from assay.judge.runner import RunnerConfig
from assay.store import Store
from tests.helpers import ITEM, KeywordJudge, criteria_json, elements_json, verdicts_json


class FaultyJudge(JudgeBackend):
    """Wraps a good judge and injects a seeded mix of faults into its calls."""

    name = "fake/faulty"
    max_concurrency = 4

    def __init__(self, seed: int) -> None:
        self.inner = KeywordJudge()
        self.rng = random.Random(seed)
        self.injected: dict[str, int] = {}

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        import asyncio
        fault = self.rng.choice(["ok", "ok", "ok", "timeout", "429", "500", "400", "malformed", "truncated"])
        self.injected[fault] = self.injected.get(fault, 0) + 1
        if fault == "timeout":
            await asyncio.sleep(1.0)
        if fault == "429":
            raise RateLimited("HTTP 429", retry_after=0.0)
        if fault == "500":
            raise TransientBackendError("HTTP 500")
        if fault == "400":
            raise BackendError("HTTP 400: bad request")
        good = await self.inner.generate(messages, config)
        if fault == "malformed":
            return good.model_copy(update={"text": good.text.replace('"', "'")})
        if fault == "truncated":
            return good.model_copy(update={"text": good.text[: len(good.text) // 2], "finish_reason": "length"})
        return good


def test_a_faulty_judge_never_crashes_a_run() -> None:
    items = [{**ITEM, "id": f"q{i}", "system": f"s{i % 3}", "query": f"{ITEM['query']} ({i})",
              "response": f"{ITEM['response']} Case {i}."} for i in range(30)]
    judge = FaultyJudge(seed=7)
    runner = RunnerConfig(progress=False, timeout_s=0.05, max_retries=2, backoff_initial_s=0.0,
                          backoff_max_s=0.01)
    result = assay.evaluate(items, "dece", judge, runner=runner)
    rows = result.records()
    assert len(rows) == 30
    assert {"timeout", "429", "500", "400", "malformed", "truncated"} <= set(judge.injected)
    for row in rows:
        for metric in ("precision", "recall", "f_beta"):
            if row[metric] is None:
                assert any(u["metric"] == metric and u["reason"] for u in row["unscored"]), row
            else:
                assert 0.0 <= row[metric] <= 1.0
    overall = result.summary()["overall"]
    unscored_counts = {m: overall[m]["unscored"] for m in ("precision", "recall", "f_beta")}
    assert sum(unscored_counts.values()) > 0
    assert overall["recall"]["n"] + overall["recall"]["unscored"] == 30
    assert overall["recall"]["n"] > 0  # retries and re-asks rescue most items


def test_a_judge_whose_every_call_fails_stops_the_run_as_unreachable() -> None:
    rules = [{"match": ".", "responses": [{"fault": "server_error"}], "repeat": True}]
    runner = RunnerConfig(progress=False, max_retries=1, backoff_initial_s=0.0)
    store = Store(":memory:")
    with pytest.raises(JudgeUnreachable, match="HTTP 500"):
        assay.evaluate([ITEM], "dece", ScriptedBackend(rules=rules), runner=runner, store=store)
    run = store.list_runs()[0]
    assert run.status == "failed: judge unreachable"
    rows = store.results(run.run_id)
    assert rows and any("judge call failed: HTTP 500" in u["reason"] for u in rows[0].unscored)
    # a resumed run evaluates the items whose calls failed again, and finishes once the judge answers
    assert store.done_indices(run.run_id, retry_failed_calls=True) == set()
    good = [{"match": r"<elements>", "responses": [verdicts_json("element", [1])], "repeat": True},
            {"match": r"<criteria>", "responses": [verdicts_json("criterion", [1])], "repeat": True},
            {"match": r"<query>.*<reference>", "responses": [criteria_json("three years")], "repeat": True},
            {"match": r"<query>.*<answer>", "responses": [elements_json("three years")], "repeat": True}]
    resumed = assay.evaluate([ITEM], "dece", ScriptedBackend(rules=good, name="scripted/test"), runner=runner,
                             store=store, resume=True)
    assert resumed.run_id == run.run_id and resumed.summary()["status"] == "finished"
    assert resumed.records()[0]["status"] == "scored"


def test_calls_that_reach_the_judge_and_fail_end_a_run_alike_when_run_again() -> None:
    """Extraction answers, every verdict call is refused (HTTP 400, not retried): the first run finishes
    with the answer Unscored; the same run again — its extractions now from the store, its verdict calls
    failing as before — finishes alike instead of stopping as unreachable. Calls that never reach the
    judge still stop a run whose answers came from the store."""
    from assay.judge.runner import CallStats

    rules = [{"match": r"<query>.*<reference>", "responses": [criteria_json("three years")], "repeat": True},
             {"match": r"<query>.*<answer>", "responses": [elements_json("three years")], "repeat": True},
             {"match": ".", "responses": [{"fault": "bad_request"}], "repeat": True}]
    runner = RunnerConfig(progress=False, max_retries=1, backoff_initial_s=0.0)
    store = Store(":memory:")
    items = [ITEM, {**ITEM, "id": "q2"}]
    for _ in range(2):
        result = assay.evaluate(items, "dece", ScriptedBackend(rules=rules, name="scripted/refuses"),
                                runner=runner, store=store, verdicts="hard")
        assert result.summary()["status"] == "finished"
        assert all(r["status"] != "scored" for r in result.records())
    down = CallStats(cache_hits=4, failures=3, unreached=3)
    assert down.gave_up() and down.gave_up_because().startswith("the judge is unreachable: 3 judge call(s) failed")
    refused = CallStats(failures=3, unreached=0)
    assert refused.gave_up() and refused.gave_up_because().startswith("every judge call failed: 3 judge call(s)")
    assert not CallStats(cache_hits=4, failures=3).gave_up() and not CallStats(calls=1, failures=9).gave_up()
