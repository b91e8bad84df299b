"""Run ids of DeCE (every verdict mode), the baselines and case-aware for a fixed item and judge,
computed before their modules were split: a store written earlier finds its runs again only if
the manifest (options, prompt hashes) is byte-identical."""

from __future__ import annotations

import pytest

from assay.core.types import Item
from assay.engine import run_id_for
from assay.methods.baselines import Claims, GEval, Pointwise
from assay.methods.caseaware import CaseAware
from assay.methods.dece import CriteriaSet, DeCE, DeCEConfig
from tests.helpers import ITEM
from tests.unit.methods.caseaware.test_caseaware import TURN

JUDGE = {"backend": "scripted", "model": "pinned"}
# every option spelled out, so a changed default does not move these pins
BASE = {"domain": "general", "beta": 2.0, "seed": 0, "extraction_temperature": 0.3,
        "verification_temperature": 0.0, "max_criteria": 8, "max_elements": 10, "max_text_chars": 160,
        "min_text_chars": 12, "max_evidence": 3, "max_reasoning_chars": 120, "reasoning": True, "max_reasks": 2,
        "quote_policy": "require", "verdicts": "hard", "top_logprobs": 5, "extraction_samples": 1,
        "sample_matcher": "embeddings", "sample_threshold": None}


@pytest.mark.parametrize(("options", "frozen", "expected"), [
    ({"verdicts": "hard"}, False, "0cd4dbc68a72c4cd"),
    ({"verdicts": "soft"}, False, "472b3e5b5d067bc0"),
    # direct verdicts show the calibrated P of the shipped map since assay 0.3 (new ids; the map file's
    # sha256 is in the manifest, so a new map is a new run) and, since the map lowered the scores'
    # correlation with RAGChecker's preferences, count the raw P again (new ids once more: a run that
    # counted the mapped P is not continued with raw counts); calibration="none", the raw reading
    # without the marks, keeps the earlier direct runs' id
    ({"verdicts": "direct"}, False, "4aa9bdfce09cca6b"),
    ({"verdicts": "direct", "calibration": "none"}, False, "4140d0c92c513074"),
    ({"reasoning": False}, False, "279474cc8e122036"),
    ({"extraction_samples": 3}, False, "58baf00d9398aef7"),
    ({}, True, "f19d74afc12af90c"),
])
def test_dece_run_ids_are_pinned(options: dict[str, object], frozen: bool, expected: str) -> None:
    criteria = {"q1": CriteriaSet(id="q1", criteria=["Three years."])} if frozen else None
    method = DeCE(DeCEConfig(**{**BASE, **options}), criteria=criteria)
    assert run_id_for(method, JUDGE, [Item.model_validate(ITEM)]) == expected


@pytest.mark.parametrize(("cls", "expected"), [
    (Pointwise, "f719eaff9f3fec09"), (GEval, "01ffd16b52beef3f"), (Claims, "dc4592d45a693097")])
def test_baseline_run_ids_are_pinned(cls: type, expected: str) -> None:
    assert run_id_for(cls(), JUDGE, [Item.model_validate(ITEM)]) == expected


def test_caseaware_run_id_is_pinned() -> None:
    assert run_id_for(CaseAware(), JUDGE, [Item.model_validate(TURN)]) == "ff51df628cbc2381"
