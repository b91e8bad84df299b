"""Soft verdicts from hand-made logprob lists (assay.judge.verdicts), checked against hand-computed values."""

from __future__ import annotations

import math

import pytest

from assay.core.types import Completion, TokenLogprob
from assay.judge.verdicts import expected_ratio, field_label_probs


def _completion(*tokens: tuple[str, dict[str, float]]) -> Completion:
    """Tokens given as (generated token, {candidate: probability}); the generated one is listed."""
    out = []
    for token, top in tokens:
        logs = {k: math.log(v) for k, v in top.items()}
        out.append(TokenLogprob(token=token, logprob=logs.get(token, math.log(0.5)), top=logs))
    return Completion(text="".join(t for t, _ in tokens), logprobs=out)


def test_every_occurrence_in_order_renormalised_over_the_labels() -> None:
    c = _completion(('{"supported": "', {}), ("yes", {"yes": 0.6, "no": 0.3, "Yes": 0.1}),
                    ('", "relevant": "', {}), ("no", {"no": 0.5, "yes": 0.25, "true": 0.25}),
                    ('"}, {"supported": "', {}), ("no", {"no": 0.8, "yes": 0.2}), ('"}', {}))
    supported = field_label_probs(c, "supported", ("yes", "no"))
    assert supported is not None and len(supported) == 2
    assert [s.greedy for s in supported] == ["yes", "no"]
    assert supported[0].p == pytest.approx({"yes": 0.6 / 0.9, "no": 0.3 / 0.9})
    assert supported[0].mass == pytest.approx(0.9)
    assert supported[1].p == pytest.approx({"yes": 0.2, "no": 0.8})
    relevant = field_label_probs(c, "relevant", ("yes", "no"))
    assert relevant is not None and len(relevant) == 1
    assert relevant[0].p == pytest.approx({"yes": 1 / 3, "no": 2 / 3})


def test_integer_labels_with_a_leading_space_and_a_merged_brace() -> None:
    c = _completion(('{"score":', {}), (" 1}", {" 1}": 0.7, " 0": 0.2, " 2": 0.1}))
    found = field_label_probs(c, "score", ("0", "1"))
    assert found is not None and found[0].greedy == "1"
    assert found[0].p == pytest.approx({"0": 0.2 / 0.9, "1": 0.7 / 0.9})


def test_a_label_absent_from_the_top_logprobs_gets_zero_and_an_upper_bound() -> None:
    c = _completion(('{"verdict": "', {}), ("A", {"A": 0.7, "Tie": 0.2, "x": 0.05}), ('"}', {}))
    found = field_label_probs(c, "verdict", ("A", "B", "Tie"))
    assert found is not None
    assert found[0].p == pytest.approx({"A": 0.7 / 0.9, "B": 0.0, "Tie": 0.2 / 0.9})
    # the smallest listed candidate (0.05) renormalised as if it were B's
    assert found[0].missing_bound == pytest.approx({"B": 0.05 / 0.95})


def test_multi_token_labels_follow_the_generated_path() -> None:
    # "i" starts incorrect and irrelevant: the next token decides among them
    c = _completion(('{"tag": "', {}), ("i", {"i": 0.8, "correct": 0.2}),
                    ("ncorrect", {"ncorrect": 0.75, "rrelevant": 0.25}), ('"}', {}))
    found = field_label_probs(c, "tag", ("correct", "incorrect", "irrelevant"))
    assert found is not None and found[0].greedy == "incorrect"
    assert found[0].p == pytest.approx({"correct": 0.2, "incorrect": 0.6, "irrelevant": 0.2})
    assert not found[0].ambiguous


def test_an_ambiguous_candidate_not_generated_is_split_evenly_and_said() -> None:
    c = _completion(('{"tag": "', {}), ("correct", {"correct": 0.6, "i": 0.4}), ('"}', {}))
    found = field_label_probs(c, "tag", ("correct", "incorrect", "irrelevant"))
    assert found is not None and found[0].greedy == "correct" and found[0].ambiguous
    assert found[0].p == pytest.approx({"correct": 0.6, "incorrect": 0.2, "irrelevant": 0.2})


def test_without_logprobs_none_and_a_field_never_generated_gives_an_empty_list() -> None:
    assert field_label_probs(Completion(text='{"score": 1}'), "score", ("0", "1")) is None
    c = _completion(('{"other": "', {}), ("yes", {"yes": 1.0}), ('"}', {}))
    assert field_label_probs(c, "supported", ("yes", "no")) == []


def test_expected_ratio() -> None:
    assert expected_ratio([0.9, 0.2], [1.0, 1.0]) == pytest.approx(0.55)
    assert expected_ratio([], []) is None
