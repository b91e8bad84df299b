"""LeMAJ in the HTML report: tag counts per system, the triage split, and each answer cut into
its Legal Data Points for colouring in place."""

from __future__ import annotations

from collections import Counter
from typing import Any

from assay.methods.lemaj.scores import TAGS


def lemaj_section(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Tag counts per system, the triage split at the paper's thresholds, and each answer cut
    into its LDPs for colouring in place."""
    from assay.methods.lemaj.triage import triage

    per_system: dict[str, Counter[str]] = {}
    for r in rows:
        tally = per_system.setdefault(str(r.get("system") or "—"), Counter())
        for d in r.get("ldps") or []:
            tally[d["tag"]] += 1
    pieces = {}
    for r in rows:
        pieces[f"{r.get('id')}::{r.get('system')}"] = answer_pieces(str(r.get("response") or ""), r.get("ldps") or [])
    split = triage(rows)
    return {"tags": TAGS, "per_system": {s: {t: c[t] for t in TAGS} for s, c in sorted(per_system.items())},
            "triage": split, "pieces": pieces}


def answer_pieces(response: str, ldps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The answer as consecutive pieces, each plain or one LDP's span with its tag (overlapping
    spans: the earlier wins), for colouring in place."""
    spans = sorted((d for d in ldps if d.get("start") is not None), key=lambda d: (d["start"], -d["end"]))
    pieces, cursor = [], 0
    for d in spans:
        start, end = max(d["start"], cursor), d["end"]
        if end <= start:
            continue
        if start > cursor:
            pieces.append({"text": response[cursor:start], "tag": None})
        pieces.append({"text": response[start:end], "tag": d["tag"], "reason": d.get("reason"),
                       "citation": d.get("citation")})
        cursor = end
    if cursor < len(response):
        pieces.append({"text": response[cursor:], "tag": None})
    return pieces



# --- agreement with experts (§4.2.2, §4.3, App. B) -------------------------------------------------
