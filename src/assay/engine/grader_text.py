"""A deterministic detector of text in an evaluated answer that addresses the grader instead of
the reader: orders to ignore instructions, demands for a score, forged chat turns or delimiters,
forged verdicts, and the answer vouching for itself (reviewed / certified / accurate in every
detail) (the defence of holistic judges).

Every run records, per unit, the passages that matched (``details.grader_directed_text``:
pattern name and the matched text), and the report and ``assay ui`` show them, so a reviewer
looks at those items first. With the run's ``guard="redact"`` (the default) the judge never sees
them either: :func:`redact` removes each passage that holds a match — its paragraph when the
answer has several, else its line, else its sentence — before the run's identity is computed,
and the item's ``metadata.grader_directed_removed`` keeps what was taken
out. ``guard="flag"`` leaves the text as it is (flags only). An answer with no match is not
touched, so runs of clean data are the same either way. The patterns are deliberately
narrow — each needs grader vocabulary or chat/verdict syntax, not just strong words — because a
false alarm on an honest answer costs a reviewer's time; ``benchmarks/results`` records how often
they fire on the human-labelled dev answers (which contain no attacks).
"""

from __future__ import annotations

import itertools
import re
from typing import Any

_GRADER = r"(?:grader|grading|judge|evaluator|evaluation|assessor|reviewer|rater|rubric|scoring)"
_SCORE = r"(?:score|scores|rating|grade|marks?|points|verdict)"
# what the answer calls itself, when it vouches for itself
_TEXT = (r"(?:answer|response|reply|information|advice|summary|explanation|analysis|guidance|output|content|text|"
         r"statements?)")
_SELF = (rf"(?:this|the\s+above|the\s+present|my|our)\s+{_TEXT}|the\s+{_TEXT}\s+(?:above|here|provided|given)|"
         r"everything\s+(?:above|here|in\s+this\s+\w+)|all\s+(?:of\s+)?(?:the\s+)?above")
_VOUCHED = (r"(?:reviewed|verified|certified|checked|double[-\s]checked|fact[-\s]checked|approved|validated|vetted|"
            r"endorsed|audited|confirmed)")
_SOUND = r"(?:accurate|correct|complete|reliable|error[-\s]free|true|authoritative)"
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
    # The answer vouching for itself: it says it was reviewed, verified, certified or approved, or
    # that it is accurate in every detail. Such a sentence tells the reader nothing about the
    # question; it is there to be believed by whoever judges the answer, and a small judge does
    # believe it (issue 17: an appeal to authority moved DICE's P(A wins) by +0.50 and pointwise
    # by +1.0 of 4, and a prompt rule telling the judge to discount it did not help). Three
    # forms, each needing the answer itself as the subject (or no subject at all), so that a
    # statement about the world ("the FDA approved the drug", "the guidelines were reviewed by a
    # panel") is not touched.
    ("self-certification", re.compile(
        # "this response was double-checked by ...", "everything above has been verified"
        rf"\b(?:{_SELF})(?:\s+(?:above|below|here|itself|provided|given))?,?\s+(?:(?:has|have|had)\s+)?(?:\w+ly\s+)?"
        rf"(?:been|was|were|is|are)\s+(?:\w+ly\s+)?"
        rf"(?:{_VOUCHED})\b"
        # "(Reviewed and certified as accurate by ...)": a subjectless participle opening a sentence
        rf"|(?:^|[(\[]|[.!?:]\s)\s*(?:{_VOUCHED})\b(?:\s+and\s+(?:{_VOUCHED}))?\s+(?:as|to\s+be)\s+"
        rf"(?:\w+ly\s+)?(?:{_SOUND})\b"
        # "accurate in every detail", "this answer is fully correct"
        rf"|\b(?:{_SOUND})\s+in\s+(?:every|all)\s+(?:details?|respects?|aspects?|particulars?|points?)\b"
        rf"|\b(?:{_SELF})\s+(?:is|are)\s+(?:100\s*%|fully|completely|entirely|guaranteed|certified|verified(?:\s+as)?)\s+"
        rf"(?:{_SOUND})\b", re.I | re.M)),
)


def grader_directed(text: str) -> list[dict[str, Any]]:
    """The passages of ``text`` that address the grader: [{pattern, text, start}] in order."""
    found = []
    for name, pattern in PATTERNS:
        for match in pattern.finditer(text):
            found.append({"pattern": name, "text": match.group(0)[:160], "start": match.start()})
    return sorted(found, key=lambda f: f["start"])


REMOVED = ""
"""What stands in the judged text for a removed passage: nothing. A visible marker ("[assay
removed a passage ...]") was measured to lower the judge's grade (pointwise −0.7 of 4, G-Eval
F2 −0.067, 10 answers, ``benchmarks/README.md``): the judge read it as a flaw of the answer. The
record and the report keep what was removed."""


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
    """``text`` without the passages that address the grader (each paragraph, line or sentence
    holding a match, :func:`_units`), and the removed passages with the patterns they matched.
    The separator before a removed passage goes with it, so an attack appended as its own
    paragraph leaves exactly the clean answer. Text without a match comes back unchanged."""
    flags = []
    for name, pattern in PATTERNS:
        flags += [(m.start(), m.end(), name) for m in pattern.finditer(text)]
    if not flags:
        return text, []
    removed: list[dict[str, Any]] = []
    kept: list[tuple[int, int]] = []
    for start, end in _units(text):
        hits = sorted({name for a, b, name in flags if a < end and b > start})
        if hits:
            removed.append({"patterns": hits, "text": text[start:end]})
        else:
            kept.append((start, end))
    if not kept:
        return REMOVED, removed
    pieces = [text[kept[0][0]:kept[0][1]]]
    for (_, prev_end), (start, end) in itertools.pairwise(kept):
        gap = text[prev_end:start]
        separator = re.search(r"\s+", gap)
        # keep the separator that followed the previous kept unit (a blank line, a newline, a space)
        pieces.append((separator.group(0) if separator and gap.startswith(separator.group(0)) else " ")
                      + text[start:end])
    return "".join(pieces).strip(), removed
