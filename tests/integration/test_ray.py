"""`--executor ray` on a local Ray cluster (127.0.0.1, no dashboard): the same exports as the local
executor, a worker killed mid-run changes nothing in the store, tournaments distribute their
rounds, and the installed command runs it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.exchange.export import export_rows
from assay.judge.backends import ScriptedBackend
from assay.judge.runner import RunnerConfig
from assay.store import Store
from tests.helpers import NO_MODEL

pytestmark = [pytest.mark.integration, *NO_MODEL]
CANNED = json.dumps({"reasoning": "r", "issues": [], "score": 3, "justification": "j"})
QUIET = RunnerConfig(progress=False)


def items(n: int) -> list[assay.Item]:
    return [assay.Item(id=f"q{i:02d}", query="What is it?", response=f"Answer {i}.", reference="It.")
            for i in range(n)]


def rows(store: Store, run_id: str) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "judge_calls"} for r in export_rows(store, run_id)]


def test_a_worker_killed_mid_run_loses_and_repeats_nothing(tmp_path: Path) -> None:
    from assay.engine import _ray

    def judge() -> ScriptedBackend:
        return ScriptedBackend(rules=[{"match": ".", "responses": [CANNED], "repeat": True}], latency=0.4)

    local = assay.evaluate(items(16), "pointwise", judge(), runner=QUIET, store=tmp_path / "local.db")
    store = Store(tmp_path / "ray.db")
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = assay.evaluate(items(16), "pointwise", judge(), runner=QUIET, store=store,
                                               executor="ray", workers=2)
        except BaseException as exc:  # reported by the assertion below
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.time() + 120
    while not (_ray.LIVE and len(store.results(local.run_id)) >= 3):
        assert time.time() < deadline and thread.is_alive(), outcome
        time.sleep(0.1)
    pool = _ray.LIVE[0]
    victim = pool.pids()[0]
    os.kill(victim, signal.SIGKILL)
    thread.join(timeout=180)
    assert "error" not in outcome, outcome.get("error")
    result = outcome["result"]
    assert pool.restarts >= 1
    assert len(store.results(result.run_id)) == 16 and all(r.status == "scored" for r in store.results(result.run_id))
    assert rows(store, result.run_id) == rows(local.store, local.run_id)
    # the driver wrote each call once: as many cached calls as units
    assert store.db.execute("SELECT COUNT(*) FROM judge_calls").fetchone()[0] == 16


def test_the_executable_gives_the_local_exports_and_distributes_a_tournament(tmp_path: Path) -> None:
    exe = shutil.which("assay", path=str(Path(sys.executable).parent))
    assert exe is not None
    (tmp_path / "items.jsonl").write_text("\n".join(i.model_dump_json(exclude_none=True) for i in items(6)) + "\n")
    script = tmp_path / "judge.json"
    analysis = json.dumps({"analysis_a": "x", "analysis_b": "y", "comparison": "z", "class_a": "fully correct",
                           "class_b": "fully correct"})
    script.write_text(json.dumps({"rules": [{"match": "DICE stage 2", "responses": ['{"verdict": "A"}'],
                                             "repeat": True},
                                            {"match": "<answer_a>", "responses": [analysis], "repeat": True},
                                            {"match": ".", "responses": [CANNED], "repeat": True}]}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}

    def assay_run(*args: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([exe, *args, "--judge", f"scripted/{script}", "--no-progress"], cwd=tmp_path,
                              capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return proc

    assay_run("eval", "pointwise", "items.jsonl", "--store", "local.db")
    assay_run("eval", "pointwise", "items.jsonl", "--store", "ray.db", "--executor", "ray", "--workers", "2")
    for name in ("local", "ray"):
        assert subprocess.run([exe, "export", f"{name}.db", "-o", f"{name}.jsonl"], cwd=tmp_path,
                              env=env).returncode == 0
    assert (tmp_path / "local.jsonl").read_text() == (tmp_path / "ray.jsonl").read_text()
    answers = [{"id": f"q{q}", "query": "Which?", "response": "x" * (n + 1), "system": f"s{n}"}
               for q in range(2) for n in range(4)]
    (tmp_path / "answers.jsonl").write_text("\n".join(json.dumps(a) for a in answers) + "\n")
    assay_run("tournament", "answers.jsonl", "--store", "t1.db", "--output", "t1.json", "--samples", "2")
    assay_run("tournament", "answers.jsonl", "--store", "t2.db", "--output", "t2.json", "--samples", "2",
              "--executor", "ray", "--workers", "2")
    local, ray = (json.loads((tmp_path / f"t{n}.json").read_text()) for n in (1, 2))
    assert ray["ranking"] == local["ranking"] and ray["matches"] == local["matches"] and len(ray["matches"]) == 6


def test_the_budget_holds_across_workers(tmp_path: Path) -> None:
    from assay.core.errors import BudgetExhausted

    judge = ScriptedBackend(rules=[{"match": ".", "responses": [CANNED], "repeat": True}], latency=0.1)
    store = Store(tmp_path / "b.db")
    with pytest.raises(BudgetExhausted):
        assay.evaluate(items(20), "pointwise", judge, store=store, executor="ray", workers=2,
                       runner=RunnerConfig(progress=False, budget_tokens=2000))
    run = store.list_runs()[0]
    done = len(store.results(run.run_id))
    assert run.status == "incomplete: budget exhausted" and 2 <= done < 20
    # each call costs ~420 tokens: the driver stops dispatching once 2000 are spent; at most the
    # units already on a worker (one per worker) finish after that
    spent = store.call_stats([k for r in store.results(run.run_id) for k in r.call_keys])
    assert spent["prompt_tokens"] + spent["completion_tokens"] < 2000 + 2 * 500
