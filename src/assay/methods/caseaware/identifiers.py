"""The identifier check: identifiers in the answer (error codes, versions, IDs, paths) that no
input of the turn contains."""

from __future__ import annotations

import re

from assay.core.types import Item

_TOKEN = re.compile(r"[/\\]?[A-Za-z0-9_][A-Za-z0-9_.\-:/\\*]*")
_LIST_MARKER = re.compile(r"^\s*\d+[.)]\s", re.M)
_NUMERIC_RANGE = re.compile(r"^\d+(?:\.\d+)?(?:[-–/]\d+(?:\.\d+)?)+$")  # "1-3", "3-3.5", "24/7": amounts, not IDs


def identifiers(text: str) -> list[str]:
    """Identifier-like tokens: with a digit and either 3+ characters or a non-digit character
    (error codes, versions, IDs, "E-7731", "3.2.1", "806"), or paths with 2+ separators.
    Numeric ranges and ratios ("1-3", "3-3.5", "24/7") are amounts, not identifiers."""
    found = []
    for token in _TOKEN.findall(_LIST_MARKER.sub(" ", text)):
        token = token.rstrip(".:,;-")
        has_digit = any(ch.isdigit() for ch in token)
        is_path = token.count("/") + token.count("\\") >= 2
        if _NUMERIC_RANGE.match(token):
            continue
        if (has_digit and (len(token) >= 3 or not token.isdigit())) or is_path:
            if token not in found:
                found.append(token)
    return found


def unsupported_identifiers(item: Item) -> list[str]:
    """The answer's identifiers that occur nowhere in the turn's inputs (case-insensitive;
    whole tokens for pure numbers, substrings otherwise)."""
    parts = [item.query, *(t.content for t in item.history), *(c.text for c in item.contexts)]
    if item.case is not None:
        parts += [item.case.subject, item.case.description]
    if item.reference is not None:
        parts.append(item.reference.full_text())
    haystack = "\n".join(parts).lower()
    missing = []
    for token in identifiers(item.response):
        needle = token.lower().rstrip("*")
        if token.isdigit():
            present = re.search(rf"(?<![0-9]){re.escape(needle)}(?![0-9])", haystack) is not None
        else:
            present = needle in haystack
        if not present:
            missing.append(token)
    return missing
