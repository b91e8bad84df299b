"""The pytest plugin, as a user's test suite meets it: a passing and a failing threshold, the
failure message naming the verdicts, and a re-run served from the store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import ITEM, dece_rules

USER_TESTS = '''
import json

ITEM = json.loads(%r)


def test_close_enough(assay_eval):
    assay_eval.check({"query": "Capital of France?", "response": "Paris is the capital of France.",
                      "reference": "Paris is the capital of France."}, method="rougeL", min={"rougeL": 0.9})


def test_too_far(assay_eval):
    assay_eval.check({"query": "Capital of France?", "response": "It is Lyon.",
                      "reference": "Paris is the capital of France."}, method="rougeL", min={"rougeL": 0.9})


def test_dece_names_the_missed_criterion(assay_eval):
    assay_eval.check(ITEM, method="dece", min={"recall": 0.9})


def test_a_misspelt_metric(assay_eval):
    assay_eval.check(ITEM, method="dece", min={"recal": 0.9})
'''


# The user's suite runs outside this project (its own rootdir), so this project's `-p no:phoenix` does
# not reach it: said here, or the Phoenix client's plug-in loads the whole Phoenix server (~13 s) in
# each child; Hypothesis's plug-in costs ~2 s more. Neither is assay's plug-in and nothing here uses
# them; assay's own is still found the way a user's pytest finds it (its pytest11 entry point).
NOT_OURS = ("-p", "no:phoenix", "-p", "no:hypothesispytest")


def run_pytest(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *NOT_OURS,
                           "--rootdir", str(folder), str(folder / "test_user.py"), *args], cwd=folder,
                          capture_output=True, text=True, timeout=300)


def test_the_plugin_asserts_thresholds_and_shows_the_evidence(tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(USER_TESTS % json.dumps(ITEM))
    script = tmp_path / "judge.json"
    log = tmp_path / "calls.log"
    script.write_text(json.dumps({"rules": dece_rules(["three years", "CPLR 214(5)", "notice of claim"],
                                                      ["three years", "90 days"], [1, 1, 0], [1, 1]),
                                  "log": str(log)}))
    proc = run_pytest(tmp_path, "--assay-judge", f"scripted/{script}", "--assay-store", str(tmp_path / "t.db"))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "1 passed, 3 failed" in out or ("3 failed" in out and "1 passed" in out), out
    # a typo in a metric's name is said as one, before any call (it read "recal unscored: no value")
    assert "min={'recal': ...}: dece has no metric 'recal'; its metrics: precision, recall, f_beta" in out, out
    assert "rougeL" in out and "< 0.9" in out
    assert "recall 0.667 < 0.9" in out, out
    assert "✗ criterion: notice of claim" in out, out  # the verdict that failed, named
    calls = log.read_text().count("\n")
    assert calls > 0
    again = run_pytest(tmp_path, "--assay-judge", f"scripted/{script}", "--assay-store", str(tmp_path / "t.db"))
    assert again.returncode == 1
    assert log.read_text().count("\n") == calls  # the re-run was served from the store


def test_the_plugin_is_registered() -> None:
    proc = subprocess.run([sys.executable, "-m", "pytest", *NOT_OURS, "--help"], capture_output=True,
                          text=True, timeout=120)
    assert "--assay-judge" in proc.stdout and "--assay-store" in proc.stdout
