"""The run summary of a pairwise run says how often the answer shown first won a single order
(position bias) and how decided the forced choices are."""

from __future__ import annotations

from assay.methods.dice import Dice, dice_section, summary_lines


def row(first_won: list[bool], p_a: float, p_b: float, consistent: bool = True) -> dict:
    return {"verdict": "A" if p_a > p_b else "B", "first_position_won": first_won, "position_consistent": consistent,
            "forced_choice_margin": abs(p_a - p_b) / (p_a + p_b), "margin": abs(p_a - p_b), "decision": "soft"}


def test_position_bias_and_forced_choice_margins_are_counted() -> None:
    rows = [row([True, True], 0.52, 0.48, consistent=False), row([True, False], 0.9, 0.1),
            row([True, True], 0.3, 0.7, consistent=False), {"verdict": None, "unscored": True}]
    lines = summary_lines(rows)
    assert lines[0].startswith("position: the answer shown first won 5 of 6 single orders (83%")
    assert "the verdict held across the swap in 1 of 3 pair(s)" in lines[0]
    # margins 0.04, 0.4, 0.8: median 0.40, smallest 0.04, one under 0.10
    assert lines[1] == ("forced choice: margin |P(A) - P(B)| / (P(A) + P(B)) median 0.40, smallest 0.04; "
                        "1 of 3 pair(s) under 0.10 (a near coin flip)")
    assert Dice.summary_lines(rows) == lines
    section = dice_section(rows)
    assert (section["first_wins"], section["single_orders"]) == (5, 6)
    assert section["fc_margins"] == sorted(section["fc_margins"]) and len(section["fc_margins"]) == 3


def test_one_order_runs_print_no_position_line() -> None:
    rows = [{"verdict": "A", "forced_choice_margin": 0.5, "margin": 0.5}]
    assert [line.split(":")[0] for line in summary_lines(rows)] == ["forced choice"]
    assert summary_lines([]) == []


def test_a_margin_just_under_the_line_is_not_printed_as_the_line() -> None:
    # 0.0971 rounds to 0.10; beside "1 of 1 pair(s) under 0.10" it is printed with its third decimal
    rows = [{"verdict": "A", "forced_choice_margin": 0.0971, "margin": 0.0971}]
    assert summary_lines(rows)[0].endswith("median 0.097, smallest 0.097; 1 of 1 pair(s) under 0.10 (a near coin flip)")
    rows = [{"verdict": "A", "forced_choice_margin": 0.1003, "margin": 0.1003}]
    assert summary_lines(rows)[0].endswith("median 0.10, smallest 0.10; 0 of 1 pair(s) under 0.10 (a near coin flip)")
