"""The embedded judge's default calibration: shipped with its provenance, applied only to the judge
and question it was measured on, counted in precision, shown in three states, and switched off with
``calibration="none"``."""

from __future__ import annotations

import json
import math
from importlib import resources
from typing import Any

import pytest

import assay
from assay.judge.calibration import Calibration, default
from assay.judge.model import MODEL_SHA256
from assay.judge.runner import RunnerConfig
from assay.methods.dece import DeCE, DeCEConfig
from assay.methods.dece.report import explain
from tests.helpers import ITEM
from tests.unit.engine.test_direct import judge

QUIET = RunnerConfig(progress=False)


def shipped() -> dict[str, Any]:
    return json.loads(resources.files("assay.judge.calibration").joinpath("embedded_default.json").read_text())


def test_the_shipped_map_carries_its_provenance() -> None:
    data = shipped()
    prov = data["provenance"]
    assert data["map"]["kind"] == "platt" and all(math.isfinite(data["map"][k]) for k in ("slope", "intercept"))
    assert prov["model_sha256"] == MODEL_SHA256 and prov["judge"] == "llamacpp/default"
    element = DeCE(DeCEConfig(verdicts="direct")).prompts["element_direct"].sha256
    assert prov["prompts"] == {"dece/element_direct": element}  # the question it was measured on, as sent today
    assert prov["claims"] >= 300 and "ExpertQA" in prov["data"]
    for when in ("before", "after_cv"):
        figures = prov["cross_validated"][when]
        for name in ("ece", "brier", "auroc"):
            assert 0 <= figures[name] <= 1 and len(figures[f"{name}_ci"]) == 2
    assert prov["cross_validated"]["after_cv"]["ece"] < prov["cross_validated"]["before"]["ece"]
    bands = data["band_figures"]
    for band in ("supported", "not_supported"):
        assert bands[band]["agreement"] is None or bands[band]["agreement"] >= 0.8  # the rule the bands obey
    total = bands["supported"]["share"] + bands["not_supported"]["share"] + bands["uncertain"]["share"]
    assert total == pytest.approx(1.0)


def test_the_map_applies_only_to_its_judge_and_prompt() -> None:
    cal = default()
    assert cal is not None
    prompt = next(iter(cal.prompts.values()))
    assert cal.fits({"model_sha256": MODEL_SHA256}, prompt)
    assert not cal.fits({"model_sha256": "0" * 64}, prompt)
    assert not cal.fits({"model_sha256": MODEL_SHA256}, "f" * 64)
    assert not cal.fits({"backend": "scripted"}, prompt)


def test_marks_follow_the_bands() -> None:
    cal = Calibration(slope=1.0, intercept=0.0, yes_from=0.9, no_to=0.2, model_sha256="m", prompts={}, name="t",
                      provenance={})
    assert cal(0.5) == pytest.approx(0.5) and cal(0.8) == pytest.approx(0.8)
    assert [cal.mark(q) for q in (0.95, 0.9, 0.5, 0.2, 0.1)] == ["✓", "✓", "?", "✗", "✗"]
    none = Calibration(slope=1.0, intercept=0.0, yes_from=None, no_to=None, model_sha256="m", prompts={}, name="t",
                       provenance={})
    assert {none.mark(q) for q in (0.0, 0.5, 1.0)} == {"?"}


class EmbeddedLike:
    """The scripted judge of the direct-verdict tests, wearing the embedded judge's identity."""

    def __new__(cls, p_element: float) -> Any:
        backend = judge(p_element=p_element)
        backend.identity = lambda: {"backend": "llamacpp", "model": "default",  # type: ignore[method-assign]
                                    "model_sha256": MODEL_SHA256}
        return backend


def test_dece_shows_the_calibrated_probability_of_elements_in_three_states_and_counts_the_raw() -> None:
    """The map decides the mark and is written beside the judge's P; precision counts the judge's own
    P(yes) (with the mapped values it followed human preferences less closely on dev pairs)."""
    cal = default()
    assert cal is not None
    row = assay.evaluate([ITEM], "dece", EmbeddedLike(0.3), runner=QUIET, verdicts="direct").records()[0]
    q = cal(0.3)
    for e in row["elements"]:
        assert e["p_judge"] == 0.3 and e["p_calibrated"] == pytest.approx(q)
        assert e["calibration"] == cal.name and e["shown"] == cal.mark(q)
    assert q != pytest.approx(0.3) and row["precision"] == pytest.approx(0.3)
    for c in row["criteria"]:  # no labels for the criterion question: no map, the judge's reading
        assert c["p_calibrated"] is None and c["calibration"] is None and c["shown"] in ("✓", "✗")
    lines = explain(row)
    if cal.mark(q) == "?":
        assert any(line.startswith("? unsure whether the reference says") and "calibrated" in line for line in lines)
    raw = assay.evaluate([ITEM], "dece", EmbeddedLike(0.3), runner=QUIET, verdicts="direct",
                         calibration="none").records()[0]
    assert raw["precision"] == pytest.approx(0.3) and all(e["p_calibrated"] is None for e in raw["elements"])
    assert raw["run_id"] != row["run_id"]


def test_another_judge_gets_no_calibrated_value() -> None:
    row = assay.evaluate([ITEM], "dece", judge(p_element=0.3), runner=QUIET, verdicts="direct").records()[0]
    assert row["precision"] == pytest.approx(0.3)
    assert all(e["p_calibrated"] is None and e["shown"] == "✗" for e in row["elements"])
