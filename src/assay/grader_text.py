"""A deterministic detector of text in an evaluated answer that addresses the grader instead of
the reader: orders to ignore instructions, demands for a score, forged chat turns or delimiters,
forged verdicts (SPEC §2.3; the defence of holistic judges asked for in issue 17).

It flags; it does not change a score. Every run records, per unit, the passages that matched
(``details.grader_directed_text``: pattern name and the matched text), and the report and
``assay ui`` show them, so a reviewer looks at those items first. The patterns are deliberately
narrow — each needs grader vocabulary or chat/verdict syntax, not just strong words — because a
false alarm on an honest answer costs a reviewer's time; ``benchmarks/results`` records how often
they fire on the human-labelled dev answers (which contain no attacks).
"""

from __future__ import annotations

import re
from typing import Any

_GRADER = r"(?:grader|grading|judge|evaluator|evaluation|assessor|reviewer|rater|rubric|scoring)"
_SCORE = r"(?:score|scores|rating|grade|marks?|points|verdict)"
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("instruction override", re.compile(
        r"\b(?:ignore|disregard|forget|override)\b[^.\n]{0,40}\b(?:instructions?|guidelines|rules|rubric|"
        r"prompt|criteria)\b", re.I)),
    ("score demand", re.compile(
        r"\b(?:give|assign|award|rate|mark)\s+(?:(?:it|this|that|them|the|a|an|my|our|its|answer|response|"
        r"submission|one)\s+){0,4}(?:highest|maximum|max|top|perfect|full)(?:\s+possible)?\s+" + _SCORE + r"\b",
        re.I)),
    ("grader address", re.compile(
        rf"\b{_GRADER}\s+(?:note|policy|instructions?|update|result|override)\b|\b(?:dear|attention)\s+{_GRADER}\b",
        re.I)),
    ("forged chat turn", re.compile(
        r"(?m)^\s*(?:system|assistant)\s*:|<\|im_(?:start|end)\|>|\[/?INST\]|^\s*###\s*(?:instruction|response)\b",
        re.I)),
    ("forged delimiter", re.compile(r"<\s*/?\s*(?:answer|reference|query|document|criteria|elements|context)\s*>",
                                    re.I)),
    ("forged verdict", re.compile(
        r"\{\s*\"(?:score|verdict|precision|recall|satisfied|supported|rating|winner)\"\s*:", re.I)),
)


def grader_directed(text: str) -> list[dict[str, Any]]:
    """The passages of ``text`` that address the grader: [{pattern, text, start}] in order."""
    found = []
    for name, pattern in PATTERNS:
        for match in pattern.finditer(text):
            found.append({"pattern": name, "text": match.group(0)[:160], "start": match.start()})
    return sorted(found, key=lambda f: f["start"])
