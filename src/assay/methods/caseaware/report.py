"""The case-aware judge in reports: per-system metric profiles, histograms, the metrics'
correlations, helpfulness against S_final and the worst turns."""

from __future__ import annotations

from typing import Any

from assay.methods.caseaware.scoring import METRICS


def _numbers(rows: list[dict[str, Any]], metric: str) -> list[float]:
    return [float(r[metric]) for r in rows if r.get(metric) is not None]


def section_context(rows: list[dict[str, Any]]) -> dict[str, Any]:
    from scipy import stats as sps

    from assay.view.report import charts

    scored = [r for r in rows if r.get("s_final") is not None]
    names = [f"{m}_score" for m in METRICS]
    systems = sorted({str(r.get("system")) for r in rows})
    profiles = {}
    for system in systems:
        subset = [r for r in scored if str(r.get("system")) == system]
        profiles[system] = {m: (sum(_numbers(subset, f"{m}_score")) / len(subset)) if subset else None
                            for m in METRICS}
    matrix: list[list[float | None]] = []
    for a in names:
        line: list[float | None] = []
        for b in names:
            xs, ys = _numbers(scored, a), _numbers(scored, b)
            if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
                line.append(None)
            else:
                line.append(float(sps.spearmanr(xs, ys).statistic))
        matrix.append(line)
    helpful = {system: [(r["answer_helpfulness_score"], r["s_final"], f"{r['id']} · {system}")
                        for r in scored if str(r.get("system")) == system] for system in systems}
    worst = sorted(scored, key=lambda r: r["s_final"])[:10]
    worst_view = [{"id": r["id"], "system": r.get("system"), "s_final": r["s_final"],
                   "problems": [(m, r.get(f"{m}_band"), r.get(f"{m}_score"), r.get(f"{m}_justification"))
                                for m in METRICS if r.get(f"{m}_band") in ("severe", "moderate")]} for r in worst]
    return {"metrics": list(METRICS), "profiles": profiles, "radar": charts.radar(profiles, list(METRICS)),
            "histograms": charts.histograms({m: _numbers(scored, f"{m}_score") for m in METRICS}
                                            | {"s_final": _numbers(scored, "s_final")}),
            "heatmap": charts.heatmap(list(METRICS), matrix),
            "helpfulness": charts.scatter(helpful, "answer_helpfulness", "S_final"), "worst": worst_view}
