"""`assay align RUN.db --labels FILE -o alignment.json`: fit the judge to its reviewers' labels."""

from __future__ import annotations

from pathlib import Path

import typer

from assay.cli.kit import console
from assay.core._files import check_output
from assay.core.errors import ConfigError
from assay.store import Store


def align(
    run: Path = typer.Argument(..., help="run store (.db) holding the judged run (no judge is called)"),
    labels: list[Path] | None = typer.Option(None, "--labels", "-l", metavar="FILE",
                                             help="label file (.jsonl or .csv, repeatable): one label a line — "
                                                  "id, system and a grade (0–1 or 1–5), a verdict (criteria[0]) "
                                                  "with label 1/0, or a and b with winner A/B/tie or a preference "
                                                  "(see the docs' page Aligning the judge)"),
    reviews: bool = typer.Option(True, "--reviews/--no-reviews",
                                 help="also use the reviewers' grades and verdict corrections made in assay ui"),
    run_id: str | None = typer.Option(None, "--run", help="which run of the store (an id or its prefix; "
                                                          "default: the latest)"),
    signal: list[str] | None = typer.Option(None, "--signal", metavar="NAME",
                                            help="judge-free signal the aligned score may use (repeatable): "
                                                 "rougeL, semantic (MiniLM cosine); default: rougeL"),
    no_signals: bool = typer.Option(False, "--no-signals", help="the aligned score uses the run's scores only"),
    combine: str = typer.Option("equal", "--combine", metavar="equal|ridge",
                                help="how the aligned score weighs its inputs: equal weights on the standardised "
                                     "inputs that agree with the reviewers (default; steadier with few labels), "
                                     "or a non-negative ridge regression"),
    folds: int = typer.Option(5, "--folds", min=2, help="cross-validation folds (by item id)"),
    resamples: int = typer.Option(1000, "--resamples", min=0,
                                  help="bootstrap resamples of items for the CIs (at most 1,000,000)"),
    seed: int = typer.Option(0, "--seed", help="seed of the bootstrap"),
    output: Path = typer.Option(Path("alignment.json"), "--output", "-o", help="the alignment file written"),
    force: bool = typer.Option(False, "--force", help="replace an existing --output file that assay did not write"),
) -> None:
    """Fit the judge to its reviewers: calibrated verdict probabilities, a tie threshold for pairs and an
    aligned score over the run's scores and judge-free signals, cross-validated by item (no judge call)."""
    from assay.analysis import align as al

    signals = [] if no_signals else list(signal or ["rougeL"])
    unknown = [s for s in signals if s not in al.SIGNALS]
    if unknown:
        raise typer.BadParameter(f"--signal {unknown[0]}: use one of {', '.join(al.SIGNALS)}")
    if combine not in al.COMBINERS:
        raise typer.BadParameter(f"--combine {combine}: use one of {', '.join(al.COMBINERS)}")
    check_output(output, inputs=[run, *(labels or [])], force=force)
    store = Store(run, create=False)
    rid = store.resolve_run(run_id)
    parts = [al.read_labels(path) for path in labels or []]
    if reviews:
        parts.append(al.store_labels(store, rid, store.results(rid)))
    if not parts:
        raise ConfigError("no labels: give --labels FILE, or leave --reviews on to use the grades made in assay ui")
    merged = al.merge(*parts)
    source = str(labels[0]) if labels and len(labels) == 1 else ""
    alignment = al.fit(store, rid, merged, signals=signals, folds=folds, resamples=resamples, seed=seed,
                       source=source, combine=combine)
    counts = alignment["fitted_on"]["counts"]
    console.print(f"run {rid} ({alignment['fitted_for']['method']}, judge {alignment['fitted_for']['judge']}): "
                  f"{counts['grades']} grade(s), {counts['verdicts']} verdict label(s), {counts['pairs']} pair "
                  f"label(s), {counts['preferences']} preference(s); {alignment['fitted_on']['unmatched']} "
                  "matched no result", soft_wrap=True, highlight=False)
    for line in al.summary_lines(alignment):
        console.print(line, soft_wrap=True, highlight=False)
    al.write_alignment(alignment, output)
    console.print(f"wrote {output}. Use it: assay export {run} --alignment {output} -o scores.csv", soft_wrap=True,
                  highlight=False)
