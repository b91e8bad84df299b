"""The probability printed beside a verdict's mark is on the same side of the mark's edges as the
value the mark was decided by (a calibrated 0.7466 shown ? was printed 0.75, the ✓ band's edge)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from assay.judge.calibration import default
from assay.methods.dece.report import explain, shown_p


def test_two_decimals_unless_they_would_reach_an_edge() -> None:
    assert shown_p(0.31) == "0.31"
    assert shown_p(0.49939) == "0.499"
    assert shown_p(0.7466, (0.5, 0.75)) == "0.747"
    assert shown_p(0.7504, (0.5, 0.75)) == "0.7504"
    assert shown_p(0.75, (0.5, 0.75)) == "0.75"
    assert shown_p(0.7466) == "0.75"  # no edge there: two decimals


@given(st.floats(0, 1), st.floats(0, 1))
def test_the_shown_value_is_on_the_value_s_side_of_every_edge(value: float, edge: float) -> None:
    shown = float(shown_p(value, (edge,)))
    if value < edge:
        assert shown < edge or abs(edge - value) < 1e-6
    elif value > edge:
        assert shown > edge or abs(value - edge) < 1e-6


def test_a_calibrated_verdict_just_under_the_band_reads_under_it() -> None:
    cal = default()
    assert cal is not None and cal.yes_from == 0.75
    entry = {"element": "one year and 90 days", "supported": 0.47, "p_judge": 0.47, "p_calibrated": 0.7466,
             "calibration": cal.name, "shown": cal.mark(0.7466)}
    assert explain({"elements": [entry]}) == [
        "? unsure whether the reference says: one year and 90 days — P(yes) 0.747 calibrated, 0.47 raw"]
