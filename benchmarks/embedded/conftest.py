"""The method measurements on the real embedded judge (Qwen2.5-Coder-1.5B-Instruct Q4_K_M), moved here
from ``tests/integration/`` so that ``make test`` fits CI's time on a slow CPU: each runs several
answers through a whole method on the 1.5B model (6–10 minutes apiece on 2 cores), and what they assert
is what the judge does with planted errors, which is a measurement, not plumbing. The plumbing of each
method on a real model stays in ``tests/integration/test_methods_smoke.py`` (SmolLM2-135M).

Run them with ``make bench-embedded``: it writes ``benchmarks/results/bench_embedded.json`` (each
test's outcome and seconds) beside pytest's own report. Run it alone on the machine: two embedded-judge
jobs at once halve each other's speed."""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path
from typing import Any

import pytest

RESULTS = Path(__file__).parents[1] / "results" / "bench_embedded.json"
_outcomes: dict[str, dict[str, Any]] = {}
_started = time.time()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Each test's outcome and seconds, setup included (a module's judge run is its first test's setup)."""
    entry = _outcomes.setdefault(report.nodeid, {"test": report.nodeid, "outcome": "passed", "seconds": 0.0})
    entry["seconds"] = round(entry["seconds"] + report.duration, 1)
    if report.outcome != "passed" and entry["outcome"] == "passed":
        entry["outcome"] = f"{report.outcome} ({report.when})"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not _outcomes:
        return
    from assay.judge.doctor import cpu_model

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"judge": "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (llama.cpp, CPU)",
                                   "cpu": cpu_model(), "python": platform.python_version(),
                                   "wall_s": round(time.time() - _started, 1), "exit_status": int(exitstatus),
                                   "tests": list(_outcomes.values())}, indent=1, allow_nan=False) + "\n")
