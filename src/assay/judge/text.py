"""Text helpers shared by the methods: sentences a judge can cite by number, and the figures a
statement asserts (for DeCE's and the claims baseline's evidence checks)."""

from __future__ import annotations

import re

__all__ = ["figures", "numbered_text", "split_sentences", "unsupported_figures", "unsupported_names"]

_HEADING = re.compile(r"^[^.!?:]{1,40}:$")


def _segments(text: str) -> list[tuple[bool, str]]:
    """A text as (is_sentence, text) pieces in order: sentences and list lines, plus short
    headings ending in ':' (e.g. "Required Information:"), which are shown but not citable.
    Splits after . ! ? before a capital, digit or bracket; list markers are dropped."""
    pieces: list[tuple[bool, str]] = []
    for line in text.splitlines():
        line = re.sub(r"^\s*(?:[-*•]|\d+[.)])\s+", "", line).strip()
        if _HEADING.match(line):
            pieces.append((False, line))
            continue
        for piece in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'“‘\[])", line):
            if piece.strip():
                pieces.append((True, piece.strip()))
    return pieces


def split_sentences(text: str) -> list[str]:
    """The citable sentences of a text, in order (see :func:`numbered_text`)."""
    return [piece for citable, piece in _segments(text) if citable]


def numbered_text(text: str) -> str:
    """The text as the judge sees it: each citable sentence on its own line as ``[n] ...``,
    headings unnumbered."""
    lines, n = [], 0
    for citable, piece in _segments(text):
        if citable:
            n += 1
            lines.append(f"[{n}] {piece}")
        else:
            lines.append(piece)
    return "\n".join(lines)


_NUMBER_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
                 "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
                 "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
                 "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
                 "hundred": 100, "thousand": 1000, "twice": 2, "dozen": 12}
# "one", "once", "single" and "half" are left out: too often not figures ("one of", "once you").
_FIGURE = re.compile(r"(?:\d+(?:[.,]\d+)*|\b(?:" + "|".join(_NUMBER_WORDS) + r")\b)"
                     r"(?P<pct>\s*(?:%|percent\b|per\s+cent\b))?", re.I)


def figures(text: str, *, percent: bool = False) -> set[str]:
    """The figures a text states, normalised: digits as written without thousands separators
    (``1,000`` -> ``1000``), number words as digits (``three`` -> ``3``). With ``percent``, a
    percentage keeps its sign (``4%``, ``4 per cent`` and ``four percent`` -> ``4%``)."""
    found = set()
    for match in _FIGURE.finditer(text):
        token = match.group(0)[: match.start("pct") - match.start()] if match.group("pct") else match.group(0)
        token = token.lower()
        if token in _NUMBER_WORDS:
            token = str(_NUMBER_WORDS[token])
        else:
            token = re.sub(r",(?=\d{3}\b)", "", token)
            token = re.sub(r"\.0+$", "", token)
        found.add(token + "%" if percent and match.group("pct") else token)
    return found


def unsupported_figures(statement: str, source: str) -> list[str]:
    """The figures ``statement`` states that ``source`` does not: a plain figure is supported by
    the same number anywhere in the source (with or without a percent sign), a percentage only
    by the same percentage ("2%" is not supported by a paragraph numbered 2)."""
    have = figures(source, percent=True)
    plain = {f.rstrip("%") for f in have}
    return sorted(f for f in figures(statement, percent=True)
                  if (f not in have if f.endswith("%") else f not in plain))


_WORD = re.compile(r"[A-Za-z][A-Za-z&'-]*")
_OPENERS = frozenset("""a an the this that these those each every any all both either neither no not only
in on at by to for from with under upon as if when where while since after before per of and or but
however also moreover furthermore therefore thus yes""".split())


def unsupported_names(statement: str, source: str) -> list[str]:
    """Capitalised words of ``statement`` that nothing in ``source`` resembles: no word of the
    source starts with the same four letters (case ignored), so "English" is taken as "England"
    and "Providers" as "Provider", but a changed party name ("Southwind" for "Northwind") or an
    outside entity is returned. A sentence's first word counts only when the next word is
    capitalised too (a name such as "Greenfield Retail"), and common openers ("The", "Under")
    never do."""
    stems = {w[:4].lower() for w in _WORD.findall(source)}
    words = list(_WORD.finditer(statement))
    out: list[str] = []
    for k, match in enumerate(words):
        word = match.group(0)
        if not word[0].isupper() or len(word) < 3 or word.lower() in _OPENERS:
            continue
        before = statement[:match.start()].rstrip()
        initial = not before or before[-1] in ".!?:;"
        if initial and not (k + 1 < len(words) and words[k + 1].group(0)[0].isupper()
                            and statement[match.end():words[k + 1].start()].strip() == ""):
            continue
        if word[:4].lower() not in stems and word not in out:
            out.append(word)
    return out
