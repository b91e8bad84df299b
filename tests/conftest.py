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


# `make test` runs the suite in two parts (unit tests on both cores with pytest-xdist, then the
# real-model and real-server tests one at a time); each test's time is appended to the file named
# by SUITE_DURATIONS so that tests/slowest.py can print the 25 slowest of the whole suite.
_DURATIONS = os.environ.get("SUITE_DURATIONS")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):  # the controller receives every worker's report too
        return
    if _DURATIONS and report.when in ("setup", "call", "teardown") and report.duration >= 0.05:
        import json

        with open(_DURATIONS, "a", encoding="utf-8") as out:
            out.write(json.dumps({"test": report.nodeid, "when": report.when, "s": round(report.duration, 2)}) + "\n")
