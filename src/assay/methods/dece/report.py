"""DeCE in reports: the precision/recall scatter of the report section, and the lines that
explain one item's scores."""

from __future__ import annotations

from typing import Any


def section_context(rows: list[dict[str, Any]]) -> dict[str, Any]:
    from assay.view.report import charts

    def points(group: str) -> dict[str, list[tuple[float, float, str]]]:
        series: dict[str, list[tuple[float, float, str]]] = {}
        for r in rows:
            if r.get("precision") is None or r.get("recall") is None:
                continue
            value = r.get("system") if group == "system" else (r.get("metadata") or {}).get(group)
            key = f"(no {group})" if value is None else str(value)  # never the word None
            label = f"{r['id']} · {r['system']}" if r.get("system") is not None else str(r["id"])
            series.setdefault(key, []).append((r["recall"], r["precision"], label))
        return series

    plots = [("system", charts.scatter(points("system"), "recall", "precision", quadrants=(0.5, 0.5)))]
    fields = sorted({k for r in rows for k, v in (r.get("metadata") or {}).items() if isinstance(v, str)})
    for field in fields:
        distinct = {(r.get("metadata") or {}).get(field) for r in rows}
        if 1 < len(distinct) <= 8:
            plots.append((field, charts.scatter(points(field), "recall", "precision", quadrants=(0.5, 0.5))))
    def p_shown(entry: dict[str, Any], key: str) -> str:
        # the HTML's three decimals, more where three would cross the edge the mark was decided by
        if entry.get(key) is None:
            return "—"
        return shown_p(entry[key], _edges(entry) if key == "p_calibrated" else (0.5,), places=3)

    return {"plots": plots, "p_shown": p_shown}


ELEMENT_TEXT = {"✗": "not in the reference", "?": "unsure whether the reference says"}


def shown_p(p: Any, edges: tuple[float | None, ...] = (0.5,), places: int = 2) -> str:
    """A probability with two decimals (``places``), or more where two would put it on the other
    side of an edge its mark was decided by, or on the edge itself: 0.49939 beside "not met" is
    0.499, not 0.50, and a calibrated 0.7466 shown ? under a ✓ band from 0.75 is 0.747, not 0.75."""
    value = float(p)
    for shown_places in range(places, 8):
        text = f"{value:.{shown_places}f}"
        shown = float(text)
        if not any(e is not None and e != value and (value < e <= shown or shown <= e < value) for e in edges):
            return text
    return text


def _edges(entry: dict[str, Any]) -> tuple[float | None, ...]:
    """The edges a direct verdict's calibrated P was marked by: the shipped map's bands (and 0.5)."""
    from assay.judge.calibration import default

    cal = default()
    return (0.5,) if cal is None or entry.get("calibration") != cal.name else (0.5, cal.yes_from, cal.no_to)


def explain(details: dict[str, Any]) -> list[str]:
    """A line per criterion the answer misses and per element the reference does not support (or,
    on a calibrated judge, that it cannot tell: shown ?)."""
    def mark(entry: dict[str, Any], counted: Any) -> str:
        if entry.get("shown") in ("✓", "✗", "?"):  # a direct verdict: by its calibrated bands
            return str(entry["shown"])
        return "?" if counted is None else "✓" if float(counted) >= 0.5 else "✗"

    def why(entry: dict[str, Any]) -> str:
        # a written reason when the judge gave one; a direct verdict has its probability instead
        # (calibrated beside the judge's own where a map applies), and a verdict a deterministic
        # check overruled says so
        parts = [str(entry.get("reasoning") or "").strip()[:140]]
        if entry.get("p_judge") is not None and not parts[0]:
            parts[0] = f"P(yes) {shown_p(entry['p_judge'])}"
            if entry.get("p_calibrated") is not None:
                parts[0] = (f"P(yes) {shown_p(entry['p_calibrated'], _edges(entry))} calibrated, "
                            f"{shown_p(entry['p_judge'])} raw")
        if entry.get("downgraded"):
            parts.append(f"not counted: {entry['downgraded']}")
        text = "; ".join(p for p in parts if p)
        return f" — {text}" if text else ""

    lines = []
    for c in details.get("criteria") or []:
        shown = mark(c, c.get("satisfied"))
        lines.append(f"{shown} criterion: {c.get('criterion')}" + (why(c) if shown != "✓" else ""))
    for e in details.get("elements") or []:
        shown = mark(e, e.get("supported"))
        if shown != "✓":
            lines.append(f"{shown} {ELEMENT_TEXT[shown]}: {e.get('element')}" + why(e))
    return lines
