"""The human layer of a run, read back: what reviewers annotated in ``assay ui``.

Annotations are append-only (``Store.annotate`` checks each value first); the layer a reviewer
sees is the latest annotation per address and author. An address is either a verdict of the
judge's result (``criteria[0].satisfied``, ``recall``) — an override — or something the reviewer
adds under ``human.``: the 1–5 grades ``human.grade_correctness`` and ``human.grade_relevance``,
``human.comment``, and whatever the run's method lets a reviewer add (its review panel). Nothing
here names a method: a method reads its own annotations (its ``review_context`` and
``agreement`` hooks, :mod:`assay.core.protocols`).
"""

from __future__ import annotations

from assay.core.records import Edit

GRADES = ("human.grade_correctness", "human.grade_relevance")
"""The reviewer's grades of an answer, on the 1–5 scale (5: completely correct / relevant)."""


def latest(annotations: list[Edit], author: str | None = None) -> dict[str, Edit]:
    """The latest annotation per address (of ``author`` only, if given)."""
    out: dict[str, Edit] = {}
    for a in annotations:
        if author is None or a.author == author:
            out[a.path] = a
    return out


def grade_score(grade: int | float) -> float:
    """A 1–5 grade as a 0–1 score: 1 → 0, 2 → 0.25, 3 → 0.5, 4 → 0.75, 5 → 1 (the expert scale
    of the LeMAJ paper, "LeMAJ (Legal LLM-as-a-Judge): Bridging Legal Reasoning and LLM
    Evaluation", Table 8)."""
    if not 1 <= grade <= 5:
        raise ValueError(f"grade {grade} is not on the 1–5 scale")
    return (float(grade) - 1.0) / 4.0
