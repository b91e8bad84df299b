"""A deterministic detector of text in an evaluated answer that addresses the grader instead of
the reader: orders to ignore instructions, demands for a score, forged chat turns or delimiters,
forged verdicts (SPEC §2.3; the defence of holistic judges asked for in issue 17).

Every run records, per unit, the passages that matched (``details.grader_directed_text``:
pattern name and the matched text), and the report and ``assay ui`` show them, so a reviewer
looks at those items first. With the run's ``guard="redact"`` (the default) the judge never sees
them either: :func:`redact` replaces each passage that holds a match — its paragraph when the
answer has several, else its line, else its sentence — with :data:`REMOVED`, before the run's
identity is computed, and the item's ``metadata.grader_directed_removed`` keeps what was taken
out. ``guard="flag"`` leaves the text as it is (flags only). An answer with no match is not
touched, so runs of clean data are the same either way. The patterns are deliberately
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


REMOVED = "[assay removed a passage addressed to the grader]"


def _units(text: str) -> list[tuple[int, int]]:
    """Spans of the text's paragraphs when it has several, else its lines, else its sentences."""
    for splitter in (r"\n[ \t]*\n", r"\n", r"(?<=[.!?])\s+"):
        spans, start = [], 0
        for match in re.finditer(splitter, text):
            spans.append((start, match.start()))
            start = match.end()
        spans.append((start, len(text)))
        spans = [(a, b) for a, b in spans if text[a:b].strip()]
        if len(spans) > 1:
            return spans
    return [(0, len(text))]


def redact(text: str) -> tuple[str, list[dict[str, Any]]]:
    """``text`` with every passage that addresses the grader replaced by :data:`REMOVED` (runs of
    removed passages by one marker), and the removed passages with the patterns they matched.
    Text without a match comes back unchanged."""
    flags = []
    for name, pattern in PATTERNS:
        flags += [(m.start(), m.end(), name) for m in pattern.finditer(text)]
    if not flags:
        return text, []
    removed: list[dict[str, Any]] = []
    pieces: list[str] = []
    cursor = 0
    for start, end in _units(text):
        hits = sorted({name for a, b, name in flags if a < end and b > start})
        if not hits:
            continue
        pieces.append(text[cursor:start])
        previous = "".join(pieces).rstrip()
        if not previous.endswith(REMOVED):
            pieces.append(REMOVED)
        else:
            pieces = [previous]
        removed.append({"patterns": hits, "text": text[start:end]})
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces).strip(), removed
