"""Self-contained HTML report of a run. Every model-written string is escaped."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from assay._version import __version__
from assay.core._files import atomic_write_text
from assay.core.protocols import run_presentation

if TYPE_CHECKING:  # the one result type; EvalResult.report() imports this module when called
    from assay.engine.results import EvalResult


def _fmt(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _human_table(rows: list[dict[str, Any]], metrics: list[str]) -> list[dict[str, Any]]:
    """Agreement of each metric with each human label carried by the items (mean of raters)."""
    from assay.analysis.stats import correlation

    def numeric(value: Any) -> bool:
        values = value if isinstance(value, list) else [value]
        return any(isinstance(v, int | float) and not isinstance(v, bool) for v in values)

    # numeric labels only: a categorical one (a pairwise "winner") has no correlation to show
    labels = sorted({label for r in rows for label, value in (r.get("human") or {}).items() if numeric(value)})
    table = []
    for metric in metrics:
        for label in labels:
            xs, ys = [], []
            for r in rows:
                value = (r.get("human") or {}).get(label)
                values = value if isinstance(value, list) else [value]
                numbers = [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
                if r.get(metric) is not None and numbers:
                    xs.append(float(r[metric]))
                    ys.append(sum(numbers) / len(numbers))
            pearson = correlation(xs, ys, "pearson", resamples=1000, seed=0)
            spearman = correlation(xs, ys, "spearman", resamples=0)
            table.append({"metric": metric, "label": label, "n": len(xs), "pearson": pearson.r,
                          "ci": pearson.ci, "p": pearson.p, "spearman": spearman.r, "note": pearson.note})
    return table


def read_json_object(path: Path, kind: str) -> dict[str, Any]:
    """A JSON object from ``path``; one clear error naming the file and ``kind`` if not."""
    from assay.core._load import load_json

    data: dict[str, Any] = load_json(path, dict, kind=f"not {kind}")
    return data


def read_meta_json(path: Path) -> dict[str, Any]:
    """A meta.json written by ``assay meta``, checked enough to render (one clear error if not)."""
    from assay.core.errors import InputError

    data = read_json_object(path, "a meta.json")
    for key, kind in (("signature", dict), ("dataset", dict), ("rows", list)):
        if not isinstance(data.get(key), kind):
            raise InputError(f"not a meta.json written by assay meta: no '{key}'", source=str(path), field=key)
    data.setdefault("comparisons", [])
    data.setdefault("human_agreement", [])
    return data


def environment() -> Environment:
    """The report's templates and filters (also used by the review UI for the alignment section)."""
    env = Environment(loader=PackageLoader("assay.view", "report"), autoescape=select_autoescape(["j2", "html"]))
    env.filters["fmt"] = _fmt
    env.filters["pval"] = lambda v: _fmt(v) if v is None or v >= 0.001 else f"{v:.1e}"
    env.filters["tojson_pretty"] = lambda v: json.dumps(v, indent=2, ensure_ascii=False, sort_keys=True)
    return env


EDITS_SECTION = """<p class="edits"><b>Reviewer edits:</b> {{ edited }} of {{ total }} answer(s) carry reviewers'
changes of the judge's scores or verdicts ({{ count }} edit(s)). The scores, verdicts and means in this report are
the judge's; each answer lists its edits below it (<code>assay export --annotations</code> writes them beside the
judge's values).</p>"""

EDITS_ITEM = """<p class="edits"><b>Reviewer edits</b> (each reviewer's latest per place; the judge's value stays
above):</p>
<ul class="edits">{% for e in edits %}<li>{{ e.path }}: {{ e.previous }} → <b>{{ e.value }}</b> by {{ e.author }}
{%- if e.reason %} — {{ e.reason }}{% endif %} ({{ e.when }})</li>{% endfor %}</ul>"""


def _reviewer_edits(env: Environment, result: EvalResult, n_rows: int) -> tuple[Markup, list[Markup]]:
    """What reviewers did in the UI (each reviewer's latest edit per address: a judge's score or verdict
    changed, and what they added under ``human.``, their grades and comments, with their reasons): a line
    at the top saying the report's numbers are the judge's, and each edited answer's edits below it.
    Two reviewers' edits of one place are both shown. Without edits, nothing."""
    from assay.store.human import latest

    none = (Markup(""), [Markup("") for _ in range(n_rows)])
    records = result.store.results(result.run.run_id)
    annotations = list(result.store.annotations(result.run.run_id))
    if not annotations or len(records) != n_rows:
        return none
    by_unit: dict[str, list[Any]] = {}
    for a in annotations:
        by_unit.setdefault(a.unit_key, []).append(a)
    item = env.from_string(EDITS_ITEM)
    items = []
    for record in records:
        mine = by_unit.get(record.key, [])
        edits = sorted((e for who in dict.fromkeys(a.author for a in mine) for e in latest(mine, who).values()),
                       key=lambda e: (e.path, e.author))
        items.append(Markup(item.render(edits=[
            {"path": e.path, "previous": _fmt(e.previous) if e.previous is not None else "—",
             "value": _fmt(e.value) if e.value is not None else "no verdict", "author": e.author, "reason": e.reason,
             "when": dt.datetime.fromtimestamp(e.created_at, tz=dt.UTC).strftime("%Y-%m-%d %H:%M UTC")}
            for e in edits])) if edits else Markup(""))
    edited = sum(1 for record in records if record.key in by_unit)
    section = Markup(env.from_string(EDITS_SECTION).render(edited=edited, total=n_rows, count=len(annotations)))
    return section, items


def render_report(result: EvalResult, meta: Path | None = None, alignment: dict[str, Any] | None = None) -> str:
    """The report page of a run's result as a string; ``meta`` adds the Table-2-style
    meta-evaluation of an ``assay meta`` result (a pairwise set's labels live there, not on the
    items); ``alignment`` (checked with :func:`assay.analysis.align.load_for`) adds the alignment section
    (:mod:`assay.view.report.alignment`)."""
    env = environment()
    template = env.get_template("report.html.j2")
    run = result.run
    created = dt.datetime.fromtimestamp(run.created_at, tz=dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    rows = result.records()
    section_html, item_html = Markup(""), [Markup("") for _ in rows]
    shown = run_presentation(result.method)
    if shown is not None:
        section = shown.report_section(rows)
        if section is not None:
            if section.section:
                section_html = Markup(env.from_string(section.section).render(rows=rows, **section.context))
            if section.item:
                partial = env.from_string(section.item)
                item_html = [Markup(partial.render(row=row, **section.context)) for row in rows]
    if alignment is not None:
        from assay.view.report.alignment import render as render_alignment

        aligned, aligned_items = render_alignment(env, alignment, result.store, result.run.run_id, rows)
        section_html = Markup(section_html + aligned)
        item_html = [a + b for a, b in zip(item_html, aligned_items, strict=True)]
    edits_section, edits_items = _reviewer_edits(env, result, len(rows))
    section_html = Markup(edits_section + section_html)
    item_html = [a + b for a, b in zip(item_html, edits_items, strict=True)]
    human = _human_table(rows, result.metrics) if any(r.get("human") for r in rows) else []
    meta_data = read_meta_json(meta) if meta is not None else None
    store_runs = [{"run_id": r.run_id, "method": r.method, "judge": r.manifest.get("judge"), "status": r.status,
                   "results": len(result.store.results(r.run_id)),
                   "created": dt.datetime.fromtimestamp(r.created_at, tz=dt.UTC).strftime("%Y-%m-%d %H:%M UTC")}
                  for r in result.store.list_runs()]
    return template.render(run=run, created=created, summary=result.summary(), rows=rows, store_runs=store_runs,
                           metrics=result.metrics, section_html=section_html, item_html=item_html, human=human,
                           meta=meta_data, caveat=result.caveat(),
                           meta_source=meta.name if meta is not None else None, version=__version__)


def write_report(result: EvalResult, out: Path, meta: Path | None = None,
                 alignment: dict[str, Any] | None = None) -> Path:
    """Write the report to ``out`` (atomically) and return the path. The caller checks ``out``
    first with ``check_output``."""
    return atomic_write_text(out, render_report(result, meta, alignment))
