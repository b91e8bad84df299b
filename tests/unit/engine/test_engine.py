"""The run lifecycle (assay.engine): one run id recipe, and a workflow whose finished steps are
committed as they finish (a killed audit resumes with no judge call repeated)."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest

from assay.core.types import Completion, GenerateConfig, Message
from assay.engine import Run, RunSpec
from assay.engine.stages import run_stage, stage_id_for
from assay.judge.runner import canonical_json
from assay.methods.premise.audit import Audit, AuditConfig
from assay.methods.premise.workflow import audit_document, audit_rubric
from assay.store import Store
from tests.unit.methods.premise.test_rubric_audit import FOREIGN, PAIRS, RUBRIC, PairJudge


def _sha(payload: object) -> str:
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()[:16]


def test_one_recipe_keeps_the_ids_of_every_kind_of_run() -> None:
    judge, items = {"backend": "x"}, [{"id": "1"}]
    old = {"method": "m", "manifest": {"a": 1}, "judge": judge, "items": items}
    assert RunSpec("evaluate", "m", {"a": 1}, {"judge": judge}, items).run_id == _sha(old)
    assert RunSpec("evaluate", "m", {"a": 1}, {"judge": judge}, items, "2").run_id == \
        _sha({**old, "method_version": "2"})
    assert RunSpec("evaluate", "m", {"a": 1}, {"judge": judge}, items, "2").lineage == _sha(old)
    assert stage_id_for("dece.criteria", {"q": 1}) == _sha({"stage": "dece.criteria", "manifest": {"q": 1}})
    assert RunSpec("stage", "s", {}).lock == f"stage:{_sha({'stage': 's', 'manifest': {}})}"
    judges = {"judge": judge, "attacker": {"backend": "y"}}
    assert RunSpec("workflow", "rubric-audit", {"r": 1}, judges).run_id == \
        _sha({"kind": "rubric-audit", "manifest": {"r": 1}, "judges": judges})
    with pytest.raises(ValueError, match="items and its judge"):
        RunSpec("evaluate", "m", {})


class Killed(BaseException):
    """The process dying mid-call (nothing may catch it as a judge failure)."""


class CountingJudge(PairJudge):
    """PairJudge that records every call it answers and dies at call number ``kill_at``."""

    def __init__(self, calls: list[str], kill_at: int | None = None) -> None:
        super().__init__("pair")
        self.calls, self.kill_at = calls, kill_at

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        if self.kill_at is not None and len(self.calls) == self.kill_at:
            raise Killed
        self.calls.append(canonical_json([[m.content for m in messages], config.model_dump()]))
        return await super().generate(messages, config)


def _audit(store: Path, judge: CountingJudge) -> dict:
    auditor = Audit(AuditConfig(runs=2, paraphrases=1, fit_parts=("applicability", "scores")))
    return asyncio.run(audit_rubric(RUBRIC, "r.yaml", PAIRS, FOREIGN, ["reliability", "fit"], auditor,
                                    judge=judge, store=store))


def test_a_killed_audit_resumes_without_repeating_a_call_or_a_finished_axis(tmp_path: Path) -> None:
    whole: list[str] = []
    expected = _audit(tmp_path / "whole.db", CountingJudge(whole))
    fit_calls = sum("F.11" in c for c in whole)  # the applicability calls of the fit axis come last
    assert 3 < fit_calls < len(whole)

    calls: list[str] = []
    kill_at = len(whole) - 3  # during the fit axis, after the reliability axis finished
    with pytest.raises(Killed):
        _audit(tmp_path / "a.db", CountingJudge(calls, kill_at=kill_at))
    store = Store(tmp_path / "a.db")
    (run,) = store.list_runs()
    assert run.status == "interrupted"
    # the finished axis is committed: every criterion is a unit with its reliability numbers
    rows = store.results(run.run_id)
    assert len(rows) == len(RUBRIC.criteria) and all("flip_rate" in r.scores for r in rows)
    assert not any("applicability" in r.scores for r in rows)
    store.close()

    resumed = _audit(tmp_path / "a.db", CountingJudge(calls))
    assert len(calls) == len(whole) and len(set(calls)) == len(set(whole))  # no call made twice
    assert resumed["resumed_axes"] == ["reliability"]  # read back, not even replayed from the cache
    assert resumed["judge_calls"] == len(whole) - kill_at
    assert json.dumps(audit_document(RUBRIC, resumed).to_dict()["summary"]) == \
        json.dumps(audit_document(RUBRIC, expected).to_dict()["summary"])
    store = Store(tmp_path / "a.db")
    assert store.list_runs()[0].status == "finished"
    assert all("applicability" in r.scores for r in store.results(run.run_id))


def test_a_stage_is_a_run_with_its_own_lock_and_status(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    seen: list[str] = []

    def part(key: str, fail: bool = False):
        async def compute() -> dict:
            seen.append(key)
            if fail:
                raise Killed
            return {"v": key}
        return compute

    with pytest.raises(Killed):
        asyncio.run(run_stage(store, "demo", {"n": 2}, {"a": part("a"), "b": part("b", fail=True)}, window=1))
    assert [s.status for s in store.stages()] == ["interrupted"]
    done = asyncio.run(run_stage(store, "demo", {"n": 2}, {"a": part("a"), "b": part("b")}))
    assert seen == ["a", "b", "b"] and done.resumed_with == 1 and done.computed == 1
    assert [s.status for s in store.stages()] == ["finished"] and done.output_sha256 == store.stages()[0].output_sha256

    def locks() -> list[str]:
        return [r[0] for r in store.db.execute("SELECT run_id FROM run_locks")]

    async def locked() -> list[str]:
        async with Run("stage", "demo", store=store, manifest={"n": 2}):
            return locks()

    assert asyncio.run(locked()) == [f"stage:{done.stage_id}"] and locks() == []


def test_a_ray_workers_store_reports_the_calls_it_made_and_only_those() -> None:
    from assay.engine._ray import CallLog

    log = CallLog()
    log.put_call("c1:seeded", "j", "{}", Completion(text="from the driver"))
    log.mark()
    log.put_call("c1:made", "j", "{}", Completion(text="made here"))
    assert [key for key, *_ in log.made] == ["c1:made"]
    assert log.cached_call("c1:seeded") is not None and Completion.model_validate_json(log.made[0][3]).text == \
        "made here"
