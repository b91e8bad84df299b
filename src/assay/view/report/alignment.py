"""The report's alignment section (``assay report RUN.db --alignment FILE``): the calibrated
probabilities, aligned score and tie-threshold decisions beside the raw values of each answer,
and three inline SVG plots drawn from the alignment file's own cross-validated data (held-out
folds only): a reliability diagram before and after calibration, the aligned score against the
reviewers' grades, and the weight of each input of the aligned score. A plot the file cannot
support (an older file, a part not fitted) is replaced by one line saying why."""

from __future__ import annotations

import math
from html import escape
from typing import Any

from jinja2 import Environment
from markupsafe import Markup

from assay.view.report.charts import PALETTE, _svg, scatter


def reliability_svg(kind: str, before: list[dict[str, Any]], after: list[dict[str, Any]], size: int = 320) -> str:
    """Reliability diagram: per bin of predicted probability, the mean predicted P (x) against the
    share of verdicts the reviewers agree with (y), before (raw P(yes)) and after calibration
    (held-out folds); each point is labelled with its count."""
    pad = 40
    inner = size - 2 * pad

    def px(v: float) -> float:
        return pad + v * inner

    def py(v: float) -> float:
        return size - pad - v * inner

    body = [f'<rect x="{pad}" y="{pad}" width="{inner}" height="{inner}" fill="none" stroke="#999"/>',
            f'<line x1="{px(0)}" y1="{py(0)}" x2="{px(1)}" y2="{py(1)}" stroke="#bbb" stroke-dasharray="4 3"/>',
            f'<text x="{size / 2}" y="{size - 8}" text-anchor="middle">mean predicted P ({escape(kind)})</text>',
            f'<text x="12" y="{size / 2}" text-anchor="middle" transform="rotate(-90 12 {size / 2})">'
            'share the reviewers agree with</text>',
            f'<text x="{px(0)}" y="{size - pad + 14}" text-anchor="middle">0</text>'
            f'<text x="{px(1)}" y="{size - pad + 14}" text-anchor="middle">1</text>'
            f'<text x="{pad - 4}" y="{py(0) + 4}" text-anchor="end">0</text>'
            f'<text x="{pad - 4}" y="{py(1) + 4}" text-anchor="end">1</text>']
    for index, (name, bins) in enumerate((("before", before), ("after (held-out)", after))):
        color = PALETTE[index]
        points = [(px(b["mean_p"]), py(b["agree_share"]), b) for b in bins]
        if len(points) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in points)
            body.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="1.5"/>')
        for x, y, b in points:
            body.append(f'<circle class="bin-{index}" cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{color}">'
                        f'<title>{name}: P {b["bin"][0]:.1f}–{b["bin"][1]:.1f}, n = {int(b["n"])}, mean P '
                        f'{b["mean_p"]:.2f}, agree {b["agree_share"]:.2f}</title></circle>'
                        f'<text x="{x + 5:.1f}" y="{y - 5:.1f}" fill="{color}" font-size="9">{int(b["n"])}</text>')
        body.append(f'<circle cx="{size - pad + 14}" cy="{pad + 14 * index}" r="4" fill="{color}"/>'
                    f'<text x="{size - pad + 22}" y="{pad + 14 * index + 4}">{name}</text>')
    return _svg(size + 120, size, body, f"reliability of {kind} before and after calibration")


def weights_svg(shares: dict[str, float], width: int = 420) -> str:
    """Horizontal bars: each input's share of the aligned score's weights (non-negative, sum 1)."""
    label, bar_h = 120, 22
    height = 20 + bar_h * len(shares)
    inner = width - label - 50
    body = []
    for i, (name, share) in enumerate(shares.items()):
        y = 10 + i * bar_h
        w = max(0.0, share) * inner
        body.append(f'<text x="{label - 6}" y="{y + 14}" text-anchor="end">{escape(name)}</text>'
                    f'<rect class="weight" x="{label}" y="{y + 3}" width="{w:.1f}" height="{bar_h - 6}" '
                    f'fill="{PALETTE[0]}"><title>{escape(name)}: {share:.3f}</title></rect>'
                    f'<text x="{label + w + 4:.1f}" y="{y + 14}">{share:.2f}</text>')
    return _svg(width, height, body, "share of each input in the aligned score")


def plots(alignment: dict[str, Any]) -> list[dict[str, Any]]:
    """Each plot of the section: a title, a caption and its SVG, or a one-line reason it is missing."""
    out: list[dict[str, Any]] = []
    calibration = alignment.get("calibration") or {}
    if not calibration:
        out.append({"title": "Reliability before and after calibration",
                    "missing": "no calibration in this alignment (too few labelled verdicts; see assay align)"})
    for kind, part in calibration.items():
        before, after = part["before"].get("reliability"), part["after_cv"].get("reliability")
        title = f"Reliability of {kind} before and after calibration ({part['chosen']})"
        if not before or not after:
            out.append({"title": title, "missing": "this alignment file holds no reliability bins; refit it with "
                                                   "assay align"})
            continue
        out.append({"title": title, "svg": Markup(reliability_svg(kind, before, after)),
                    "caption": f"{part['n']} labelled verdicts of {part['items']} items, 10 equal-width bins "
                               "(the number by each point is its count); after = out-of-fold calibrated P. "
                               "The dashed line is perfect calibration."})
    score = alignment.get("aligned_score")
    if score is None:
        out.append({"title": "Aligned score against the reviewers' grades",
                    "missing": "no aligned score in this alignment (too few graded answers; see assay align)"})
        return out
    oof = score.get("out_of_fold")
    grades = score["fitted_to"] == "grades"
    title = ("Aligned score against the reviewers' grades" if grades
             else "Aligned score difference against the reviewers' preferences")
    if not oof:
        out.append({"title": title, "missing": f"this alignment file (version {alignment.get('version')}) holds "
                                               "no out-of-fold predictions; refit it with assay align"})
    else:
        points = [(t, p, f"{item}: grade {t:.2f}, aligned {p:.2f}")
                  for p, t, item in zip(oof["predicted"], oof["target"], oof["items"], strict=True)]
        lo = math.floor(min(0.0, *(min(p, t) for t, p, _ in points)))  # [0, 1] for grades, whole numbers beyond
        hi = math.ceil(max(1.0, *(max(p, t) for t, p, _ in points)))
        svg = scatter({"held-out": points}, "reviewers' grade" if grades else "reviewers' preference",
                      "aligned score (out-of-fold)", x_range=(lo, hi), y_range=(lo, hi), diagonal=True)
        r = score["after_cv"].get("pearson")
        out.append({"title": title, "svg": Markup(svg),
                    "caption": f"{len(points)} {score['fitted_to']}, each predicted by a fit that never saw its "
                               f"item; Pearson r {'—' if r is None else f'{r:.3f}'}."})
    standardised = score.get("standardised_shares")
    if standardised:
        how = ("Equal weights on the standardised inputs that agree with the reviewers"
               if score.get("combine", "ridge") == "equal" else "Non-negative ridge weights on standardised inputs")
        caption = f"{how}, as shares of their sum (raw weights in the file)."
    else:
        caption = ("Shares of the raw weights (an alignment file from an older assay, which did not keep the "
                   "weights on standardised inputs): they depend on each input's scale.")
    out.append({"title": "Weight of each input in the aligned score",
                "svg": Markup(weights_svg(standardised or score["shares"])), "caption": caption})
    return out


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _table(alignment: dict[str, Any], rows: list[dict[str, Any]], results: list[Any],
           extra: dict[str, dict[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
    """Per answer: the raw inputs of the aligned score, the aligned score, each kind's mean raw
    P(yes) and mean calibrated P, and the judge's verdict beside the one at the tie threshold."""
    from assay.analysis.align import _finite

    score = alignment.get("aligned_score")
    raw_columns = [m for m in (score["inputs"] if score else []) if any(m in row for row in rows)]
    table = []
    for row, result in zip(rows, results, strict=True):
        values = extra.get(result.key, {})
        calibrated = []
        for kind, ps in (values.get("p_calibrated") or {}).items():
            entries = result.details.get(kind) or []
            raw = [p for p in (_finite(e.get("p_judge")) for e in entries if isinstance(e, dict)) if p is not None]
            calibrated.append((kind, _mean(raw), _mean([p for p in ps if p is not None])))
        table.append({"id": row.get("id"), "system": row.get("system"), "raw": [row.get(m) for m in raw_columns],
                      "aligned_score": values.get("aligned_score"), "calibrated": calibrated,
                      "verdict": result.details.get("verdict"), "aligned_verdict": values.get("aligned_verdict")})
    return raw_columns, table


def render(env: Environment, alignment: dict[str, Any], store: Any, run_id: str,
           rows: list[dict[str, Any]], extra: dict[str, dict[str, Any]] | None = None) -> tuple[Markup, list[Markup]]:
    """The section's HTML and, per report row (``rows`` in the order of ``store.results``), a
    short line of its aligned values beside the raw ones. ``extra``: the values of
    :func:`assay.analysis.align.aligned_fields` when the caller has them already."""
    from assay.analysis.align import aligned_fields, summary_lines

    results = store.results(run_id)
    if extra is None:
        extra = aligned_fields(alignment, store, run_id, results)
    raw_columns, table = _table(alignment, rows, results, extra)
    section = Markup(env.get_template("alignment.html.j2").render(
        alignment=alignment, source=alignment.get("_source", "alignment"), lines=summary_lines(alignment),
        plots=plots(alignment), raw_columns=raw_columns, table=table))
    item = env.get_template("alignment_item.html.j2")
    return section, [Markup(item.render(aligned=extra[r.key])) if extra.get(r.key) else Markup("") for r in results]
