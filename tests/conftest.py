from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def _no_network_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests never reach a paid API by accident.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ASSAY_OPENAI_API_KEY", raising=False)
    for key in list(os.environ):
        if key.startswith("ASSAY_") and key not in ("ASSAY_CACHE_DIR", "ASSAY_MODEL_PATH"):
            monkeypatch.delenv(key, raising=False)


# `make test` runs the suite in two parts (unit tests on both cores with pytest-xdist, the integration
# tests marked no_model beside them, then the tests that load a model or start a model server: two
# workers of one CPU each, or one test at a time: tests/model_workers.py); each test's time is appended
# to the file named by SUITE_DURATIONS so that tests/slowest.py can print the 25 slowest of the whole suite.
_DURATIONS = os.path.abspath(os.environ["SUITE_DURATIONS"]) if os.environ.get("SUITE_DURATIONS") else None
# (absolute: some tests change the working directory)


def pytest_configure(config: pytest.Config) -> None:
    """With SUITE_PIN_WORKERS set (`make test`'s tests that run a model), each pytest-xdist worker
    keeps to its own share of the CPUs, and so do the processes it starts: llama.cpp takes one thread
    per CPU it may use (assay.judge.cpu_build.usable_cpus), so two workers on two cores run a model
    each on one core instead of four spinning threads taking turns on two."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    if not (os.environ.get("SUITE_PIN_WORKERS") and worker and count > 1 and hasattr(os, "sched_setaffinity")):
        return
    cpus, index = sorted(os.sched_getaffinity(0)), int(worker.removeprefix("gw"))
    if len(cpus) >= count and index < count:  # a worker started again after a crash (gw2, ...) stays unpinned
        os.sched_setaffinity(0, cpus[index::count])


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):  # the controller receives every worker's report too
        return
    if _DURATIONS and report.when in ("setup", "call", "teardown") and report.duration >= 0.05:
        import json

        with open(_DURATIONS, "a", encoding="utf-8") as out:
            # "model": a test of the serial part (loads a model or starts a model server), which a slower CPU slows
            model = "integration" in report.keywords and "no_model" not in report.keywords
            out.write(json.dumps({"test": report.nodeid, "when": report.when, "s": round(report.duration, 2),
                                  "model": model}) + "\n")


def pytest_runtest_teardown(item: pytest.Item) -> None:
    """With SUITE_DURATIONS: the time the test's real judges (llama.cpp, in process or behind a
    server) spent on the calls kept in the stores it wrote under ``tmp_path`` — so that
    tests/slowest.py can say how much of the suite is the model's, and what a slower CPU makes of it."""
    tmp = getattr(item, "funcargs", {}).get("tmp_path")
    # only the tests that run a model: a unit test's replayed judge carries its recording's latencies
    if not _DURATIONS or tmp is None or item.get_closest_marker("integration") is None:
        return
    import json
    import sqlite3
    from pathlib import Path

    spans: dict[str, list[tuple[float, float]]] = {}
    for db in Path(tmp).rglob("*.db"):
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
                rows = con.execute("SELECT backend, created_at, latency_s FROM judge_calls").fetchall()
        except sqlite3.Error:  # not a store, or one without calls
            continue
        for backend, stored_at, latency in rows:
            if not str(backend).startswith("scripted") and latency:
                spans.setdefault(str(backend), []).append((float(stored_at) - float(latency), float(stored_at)))
    # the wall time the test waited on each judge: calls in flight together (one judge over two
    # servers, a run with concurrency) count once, not once each. A call's span ends when it was
    # stored; Ray's driver stores its workers' calls after their unit, which would undercount them
    # (no integration test runs Ray with a real judge)
    seconds = {backend: _covered(intervals) for backend, intervals in spans.items()}
    if seconds:
        with open(_DURATIONS, "a", encoding="utf-8") as out:
            out.write(json.dumps({"test": item.nodeid, "when": "judge", "s": 0.0,
                                  "judge_s": {k: round(v, 2) for k, v in seconds.items()}}) + "\n")


def _covered(intervals: list[tuple[float, float]]) -> float:
    """The length of the union of (start, end) intervals."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total
