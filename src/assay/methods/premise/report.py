"""The PReMISE section of the report (issue 15, item 5): ``assay rubric report``.

A self-contained HTML page (no script, inline SVG) built from the files the rubric commands write:
audit JSONs (``rubric audit --output``) give the Table-1-style audit table and per-criterion rows,
and the applicability map of Fig. 4a (each criterion's firing rate on out-of-domain prompts
against in-domain ones; the diagonal is "no source specificity") when the audit had
``--out-of-domain``; refinement reports (``rubric repair --mode vfr --report``) give the
refinement cost/benefit of Fig. 5 (ΔVFR against Δreliability per criterion, with the operators
chosen); rubric files give the discovered criteria with their support σ and source pairs, and
the discovery trace. Every string from a file is escaped by the template's autoescape.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from assay._version import __version__
from assay.core.errors import InputError
from assay.methods.premise.files import RubricSet, load_rubric
from assay.view.report import _fmt, read_json_object
from assay.view.report.charts import scatter

# Table-1 columns: summary key, header, format
COLUMNS = (("structure_mean", "structure /5", ".2f"), ("alpha", "α", ".3f"), ("flip_rate", "flip", ".3f"),
           ("rho", "para ρ", ".3f"), ("accuracy_rubric", "acc rubric", ".3f"),
           ("accuracy_no_rubric", "acc none", ".3f"), ("delta", "Δacc", "+.3f"), ("app_in", "App_in", ".3f"),
           ("app_out", "App_out", ".3f"), ("delta_app", "ΔApp", "+.3f"), ("t_per_prompt", "T/p", ".2f"),
           ("eff_dim", "EffDim", ".2f"), ("mean_abs_rho", "|ρ|", ".3f"), ("bt_cv_accuracy", "BT acc", ".3f"),
           ("bt_entropy", "BT H", ".3f"), ("vfr", "VFR", ".3f"))


def read_json(path: Path, kind: str, required: tuple[str, ...]) -> dict[str, Any]:
    data = read_json_object(path, kind)
    missing = [k for k in required if k not in data]
    if missing:
        raise InputError(f"not {kind}: no {', '.join(repr(k) for k in missing)}", source=str(path))
    return data


def _delta(after: float | None, before: float | None) -> float | None:
    return None if after is None or before is None else after - before


def _refine_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for c in doc["criteria"]:
        before, chosen = c.get("before") or {}, c.get("chosen")
        after = chosen["metrics"] if chosen else before
        rel_before = before.get("alpha") if before.get("alpha") is not None else (
            None if before.get("flip_rate") is None else 1 - before["flip_rate"])
        rel_after = after.get("alpha") if after.get("alpha") is not None else (
            None if after.get("flip_rate") is None else 1 - after["flip_rate"])
        statuses: dict[str, int] = {}
        for cand in c.get("candidates", []):
            statuses[cand["status"]] = statuses.get(cand["status"], 0) + 1
        changed = chosen is not None  # an unchanged criterion has no delta to show (not +0)
        rows.append({"id": c["id"], "before": before, "after": after,
                     "operators": "+".join(chosen["operators"]) if chosen else "—",
                     "d_vfr": _delta(after.get("vfr"), before.get("vfr")) if changed else None,
                     "d_rel": _delta(rel_after, rel_before) if changed else None,
                     "d_fit": _delta(after.get("pref_fit"), before.get("pref_fit")) if changed else None,
                     "rel_name": "α" if before.get("alpha") is not None else "1 − flip",
                     "candidates": statuses, "reason": c.get("reason", "")})
    return rows


def render_rubric_report(audits: list[Path], refines: list[Path], rubrics: list[Path]) -> str:
    if not (audits or refines or rubrics):
        raise InputError("nothing to report: give --audit, --refine or --rubric files")
    audit_docs = [(p.name, read_json(p, "an audit JSON written by `assay rubric audit --output`",
                                     ("rubrics", "summary"))) for p in audits]
    refine_docs = [(p.name, read_json(p, "a refinement report written by `assay rubric repair --mode vfr --report`",
                                      ("criteria", "config"))) for p in refines]
    rubric_sets: list[tuple[str, RubricSet]] = [(p.name, load_rubric(p)) for p in rubrics]
    shown = [c for c in COLUMNS if any(d["summary"].get(c[0]) is not None for _, d in audit_docs)]
    table = [{"source": name, "k": len(d["rubrics"]), "judge": d.get("detail", {}).get("judge"),
              "cells": [format(d["summary"][k], f) if d["summary"].get(k) is not None else "—" for k, _, f in shown]}
             for name, d in audit_docs]
    app_series = {name: [(float(r["applicability_out"]), float(r["applicability"]), r["id"]) for r in d["rubrics"]
                         if r.get("applicability") is not None and r.get("applicability_out") is not None]
                  for name, d in audit_docs}
    app_series = {k: v for k, v in app_series.items() if v}
    app_map = Markup(scatter(app_series, "firing rate out of domain", "firing rate in domain", diagonal=True)) \
        if app_series else None
    refine_tables = []
    for name, d in refine_docs:
        rows = _refine_rows(d)
        points = [(r["d_rel"], r["d_vfr"], f"{r['id']}: {r['operators']}") for r in rows
                  if r["d_rel"] is not None and r["d_vfr"] is not None]
        chart = None
        if points:
            span = max(0.1, *(abs(x) for x, _, _ in points), *(abs(y) for _, y, _ in points))
            chart = Markup(scatter({name: points}, "Δ reliability (α, or 1 − flip)", "Δ VFR",
                                   x_range=(-span, span), y_range=(-span, span), quadrants=(0.0, 0.0)))
        delta = d["config"].get("delta")
        refine_tables.append({"name": name, "delta": delta, "epsilon": d["config"].get("epsilon"), "rows": rows,
                              "chart": chart, "wall_s": d.get("wall_s"),
                              "revised": sum(r["operators"] != "—" for r in rows)})
    env = Environment(loader=PackageLoader("assay.methods.premise", "templates"),
                      autoescape=select_autoescape(["j2", "html"]))
    env.filters["fmt"] = _fmt
    env.filters["signed"] = lambda v: "—" if v is None else f"{v:+.3f}"
    return env.get_template("rubric_report.html.j2").render(
        columns=[h for _, h, _ in shown], table=table, audits=audit_docs, app_map=app_map, refines=refine_tables,
        rubrics=rubric_sets, version=__version__)

