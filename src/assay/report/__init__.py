"""Self-contained HTML report of a run (SPEC §4). Every model-written string is escaped."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from assay._eval import EvalResult
from assay.store import Store


def _fmt(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def render_report(store: Store, run_id: str) -> str:
    """The report page as a string."""
    result = EvalResult(store, run_id)
    env = Environment(loader=PackageLoader("assay", "report"), autoescape=select_autoescape(["j2", "html"]))
    env.filters["fmt"] = _fmt
    env.filters["tojson_pretty"] = lambda v: json.dumps(v, indent=2, ensure_ascii=False, sort_keys=True)
    template = env.get_template("report.html.j2")
    run = result.run
    created = dt.datetime.fromtimestamp(run["created_at"], tz=dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return template.render(run=run, created=created, summary=result.summary(), rows=result.records(),
                           metrics=result.metrics)


def write_report(store: Store, run_id: str, out: Path) -> Path:
    """Write the report to ``out`` (via a temporary file) and return the path."""
    html = render_report(store, run_id)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(out)
    return out
