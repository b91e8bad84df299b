"""`assay triage RUN`: LeMAJ's triage (§5, App. H) of a run — cleared vs needs-review answers and
the review time saved — from its store (.db) or from an exported JSONL file."""

from __future__ import annotations

import math
from pathlib import Path

import typer

from assay.cli.kit import console
from assay.core._files import check_output, write_json
from assay.core.errors import InputError
from assay.methods.lemaj.triage import triage


def _check_scores(row: dict, source: str, line: int | None) -> None:
    """correctness and relevance are absent, null (Unscored) or a finite number in [0, 1]."""
    for name in ("correctness", "relevance"):
        value = row.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
                or not 0.0 <= value <= 1.0:
            raise InputError(f"{name} must be a number in [0, 1] or null, got {value!r}", source=source, line=line,
                             field=name)


def _rows(run: Path, run_id: str | None) -> list[dict]:
    if run.suffix.lower() in (".jsonl", ".ndjson"):
        from assay.core._load import jsonl_records

        rows = []
        for n, row in jsonl_records(run, dict, kind="an exported row"):
            _check_scores(row, str(run), n)
            rows.append(row)
        return rows
    from assay.exchange.export import export_rows
    from assay.store import Store

    store = Store(run, create=False)
    chosen = store.resolve_run(run_id)
    method = store.run(chosen).method
    if method != "lemaj":  # say which run was read, and where the LeMAJ runs are
        lemaj = [r.run_id for r in store.list_runs() if r.method == "lemaj"]
        which = "the latest run" if run_id is None else "run"
        raise InputError(f"{which} {chosen} is a {method} run, not a LeMAJ run; "
                         + (f"the store's LeMAJ run(s): {', '.join(lemaj)} (give --run ID)" if lemaj
                            else "the store holds no LeMAJ run"), source=str(run))
    rows = export_rows(store, chosen)
    for row in rows:
        _check_scores(row, f"{run} (id {row.get('id')!r})", None)
    return rows


def triage_command(
    run: Path = typer.Argument(..., help="a LeMAJ run: its store (.db) or an exported .jsonl"),
    run_id: str | None = typer.Option(None, "--run", help="which run of the store (an id or its prefix; "
                                                                      "default: the latest)"),
    min_correctness: float = typer.Option(1.0, "--min-correctness", min=0.0, max=1.0,
                                          help="clear only answers with at least this correctness"),
    min_relevance: float = typer.Option(0.8, "--min-relevance", min=0.0, max=1.0,
                                        help="… and at least this relevance (F1 / F_beta)"),
    minutes_per_item: float = typer.Option(3.5, "--minutes-per-item", min=0.0,
                                           help="expert review minutes an answer takes"),
    out: Path | None = typer.Option(None, "--output", "-o", help="write cleared / needs-review lists as JSON"),
    force: bool = typer.Option(False, "--force", help="replace an --output file assay did not write"),
) -> None:
    """LeMAJ triage: which answers an expert still has to review, and the time saved."""
    if out is not None:
        check_output(out, inputs=[run], force=force, option="--output")
    rows = _rows(run, run_id)
    missing = [str(r.get("id")) for r in rows if "correctness" not in r or "relevance" not in r]
    if missing or not rows:
        raise InputError(f"not a LeMAJ run: {len(missing)} row(s) without correctness/relevance "
                         f"(e.g. id {missing[0]})" if missing else "no rows", source=str(run))
    result = triage(rows, min_correctness=min_correctness, min_relevance=min_relevance,
                    minutes_per_item=minutes_per_item)
    share = result["share_saved"]
    line = (f"{len(result['cleared'])} of {result['answers']} answer(s) cleared, "
            f"{len(result['needs_review'])} need review")
    if share is not None:  # a triage is a reading, not a check: nothing cleared is exit 0, said in this line
        line += (f"; review time {result['minutes_without_triage']:.1f} → "
                 f"{result['minutes_without_triage'] - result['minutes_saved']:.1f} minutes "
                 f"(saved {result['minutes_saved']:.1f}, {100 * share:.0f}%)")
    console.print(line)
    if out is not None:
        write_json(out, result)
        console.print(f"wrote {out}")
