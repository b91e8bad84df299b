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


def test_the_html_report_prints_the_same_side_of_the_band_as_its_mark() -> None:
    """The report's three decimals put a calibrated 0.7496 shown ? at 0.750, the ✓ band's edge;
    it is printed 0.7496, and a raw 0.4996 beside "not met" 0.4996."""
    from jinja2 import Environment

    from assay.methods.dece import DeCE
    from assay.view.report import environment

    cal = default()
    assert cal is not None and cal.yes_from == 0.75
    element = {"element": "one year and 90 days", "supported": 0.4996, "p_judge": 0.4996, "p_calibrated": 0.7496,
               "calibration": cal.name, "shown": cal.mark(0.7496), "evidence": [], "decided_by": "judge"}
    row = {"id": "1", "verdicts": "direct", "precision": 0.5, "recall": None, "elements": [element], "criteria": []}
    section = DeCE.report_section([row])
    assert section is not None and section.item
    env: Environment = environment()
    html = env.from_string(section.item).render(row=row, **section.context)
    assert "uncertain ?" in html and "P(yes) 0.7496" in html and "the judge's 0.4996" in html
    assert "0.750" not in html and "0.500" not in html


def test_the_report_charts_never_print_none() -> None:
    """An answer without a metadata field (the demo's right answer has no `planted` note) was plotted in
    a series named "None"; it is "(no planted)", and an answer without a system is labelled by its id."""
    from assay.methods.dece.report import section_context

    rows = [{"id": "a", "system": "good", "precision": 0.9, "recall": 0.8, "metadata": {}},
            {"id": "b", "system": "error", "precision": 0.4, "recall": 0.6, "metadata": {"planted": "a wrong year"}},
            {"id": "c", "system": None, "precision": 0.5, "recall": 0.5, "metadata": {"planted": "omission"}}]
    plots = dict(section_context(rows)["plots"])
    assert set(plots) == {"system", "planted"}
    text = " ".join(str(svg) for svg in plots.values())
    assert "None" not in text and "(no planted)" in text and "(no system)" in text
