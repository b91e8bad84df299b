"""assay inside pytest: score answers in a test and assert thresholds, with the evidence in the
failure message. Registered as a pytest plugin (entry point ``pytest11``) when assay is installed.

::

    def test_refund_answer(assay_eval):
        assay_eval.check({"query": "Can I get a refund after 30 days?",
                          "response": my_bot("Can I get a refund after 30 days?"),
                          "reference": "No: refunds are accepted within 30 days of purchase."},
                         method="dece", min={"recall": 0.8})

Options: ``--assay-judge`` (default: ``$ASSAY_JUDGE`` or the embedded judge) and ``--assay-store``
(default ``.assay/pytest.db``): every judge call is cached there, so a re-run with the same
answers calls no judge.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

DEFAULT_STORE = Path(".assay") / "pytest.db"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("assay", "assay: LLM-judge evaluations in tests")
    group.addoption("--assay-judge", default=None,
                    help="the judge of assay_eval (provider/model; default $ASSAY_JUDGE or llamacpp/default)")
    group.addoption("--assay-store", default=None,
                    help=f"assay's run store for the tests (default {DEFAULT_STORE}): cached, so re-runs call no judge")


class AssayCheck:
    """The ``assay_eval`` fixture: scores answers with a cached judge. ``method`` defaults to
    ``"dece"``, as :func:`assay.evaluate` does (the user-facing default; the engine has none)."""

    def __init__(self, judge: str, store: Path) -> None:
        self.judge = judge
        self.store = store

    def score(self, answers: Any, method: str = "dece", **options: Any) -> list[dict[str, Any]]:
        """Score one answer (a dict) or several (a list, a DataFrame, a path) and return the rows."""
        import assay

        data = [answers] if isinstance(answers, dict) else answers
        self.store.parent.mkdir(parents=True, exist_ok=True)
        options.setdefault("runner", assay.RunnerConfig(progress=False))
        result = assay.evaluate(data, method, self.judge, store=self.store, resume=True, **options)
        assert isinstance(result, assay.EvalResult)
        return list(result)

    def check(self, answers: Any, method: str = "dece", *, min: dict[str, float] | None = None,
              max: dict[str, float] | None = None, **options: Any) -> list[dict[str, Any]]:
        """Score and assert every answer's metrics: at least ``min[metric]``, at most
        ``max[metric]``. An Unscored metric fails too. The failure names the answer, the metric
        and the verdicts behind it."""
        import math

        from assay.core.protocols import presentation
        from assay.core.registry import method_class

        known = getattr(method_class(method), "metrics", None)
        for which, bounds in (("min", min), ("max", max)):  # before any judge call: a typo is not "unscored"
            for metric, bound in (bounds or {}).items():
                if isinstance(known, tuple) and metric not in known:
                    pytest.fail(f"assay check: {which}={{{metric!r}: ...}}: {method} has no metric {metric!r}; "
                                f"its metrics: {', '.join(known)}", pytrace=False)
                if isinstance(bound, bool) or not isinstance(bound, int | float) or not math.isfinite(bound):
                    pytest.fail(f"assay check: {which}[{metric!r}] must be a finite number, not {bound!r}",
                                pytrace=False)
        rows = self.score(answers, method, **options)
        explain = presentation(method_class(method)).explain
        problems = []
        for row in rows:
            failed = []
            for metric, bound in (min or {}).items():
                value = row.get(metric)
                if value is None:
                    failed.append(f"{metric} unscored: {row.get('unscored_reason') or 'no value'}")
                elif value < bound:
                    failed.append(f"{metric} {value:.3f} < {bound:g}")
            for metric, bound in (max or {}).items():
                value = row.get(metric)
                if value is None:
                    failed.append(f"{metric} unscored: {row.get('unscored_reason') or 'no value'}")
                elif value > bound:
                    failed.append(f"{metric} {value:.3f} > {bound:g}")
            if failed:
                why = explain({m: row.get(m) for m in row}, row)
                problems.append(f"answer {row.get('id')!r}: " + "; ".join(failed)
                                + "".join(f"\n    {line}" for line in why[:10]))
        if problems:
            pytest.fail(f"assay {method} with {self.judge}:\n  " + "\n  ".join(problems), pytrace=False)
        return rows


@pytest.fixture
def assay_eval(request: pytest.FixtureRequest) -> AssayCheck:
    """Score answers inside a test with a cached judge and assert thresholds (see the module)."""
    config = request.config
    judge = config.getoption("--assay-judge") or os.environ.get("ASSAY_JUDGE") or "llamacpp/default"
    store = Path(config.getoption("--assay-store") or os.environ.get("ASSAY_STORE") or DEFAULT_STORE)
    return AssayCheck(judge, store)
