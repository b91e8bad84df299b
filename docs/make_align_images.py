"""Make the alignment pictures of docs/align.md (docs/img/align-*.svg) from real alignments:
python docs/make_align_images.py

* ``align-score.svg`` and ``align-weights.svg``: a judge-free alignment fitted by
  :func:`assay.analysis.align.fit` exactly as ``assay align`` does — ROUGE-L runs on a seeded subset of
  RAGChecker's human-labelled dev pairs (``ragchecker_human_labeled_dev.json``, the data of
  ``benchmarks/align_ragchecker.py``), its aligned score combines ROUGE-L with MiniLM cosine
  (``--signal semantic``), fitted to the annotators' ``overall`` preference of each pair (no judge,
  no model but MiniLM). The plot is the out-of-fold aligned score difference (second answer minus
  first) against the annotators' mean preference.
* ``align-reliability.svg``: the reliability bins before and after calibration of the embedded
  judge's direct P(yes) on ExpertQA claims, read from ``benchmarks/results/align_expertqa.json``
  (written by ``benchmarks/align_expertqa.py``; a judge-free alignment has no verdict
  probabilities to calibrate).

The SVGs are the report's own charts (:mod:`assay.view.report.alignment`). Also writes the judge-free
alignment to ``benchmarks/results/align_ragchecker_judge_free.alignment.json``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import assay
from assay.analysis import align as al
from assay.data.datasets.adapters import read_ragchecker
from assay.judge.runner import RunnerConfig
from assay.store import Store
from assay.view.report.alignment import plots, reliability_svg

ROOT = Path(__file__).resolve().parents[1]
IMG = ROOT / "docs" / "img"
DATA = ROOT.parent / "shared" / "data" / "ragchecker_human_labeled_dev.json"
EXPERTQA = ROOT / "benchmarks" / "results" / "align_expertqa.json"
OUT = ROOT / "benchmarks" / "results" / "align_ragchecker_judge_free.alignment.json"


def judge_free_alignment(data: Path, pairs: int, seed: int, label: str = "overall") -> dict[str, Any]:
    """ROUGE-L on the pairs' answers in a fresh store, the annotators' preferences as a label file,
    and :func:`assay.analysis.align.fit` with the MiniLM signal (what ``assay align --signal semantic`` runs)."""
    metaset = read_ragchecker(data).subset(pairs, seed)
    work = Path(tempfile.mkdtemp(prefix="assay-align-images-"))
    result = assay.evaluate(metaset.items, "rougeL", store=work / "runs.db", runner=RunnerConfig(progress=False))
    assert isinstance(result, assay.EvalResult)  # one method: one run
    by_key = {item.key: item for item in metaset.items}
    lines = []
    for unit in metaset.units:
        first, second = (by_key[k] for k in unit.keys)
        for value in unit.human.get(label) or []:  # one line per annotator; positive: the second is better
            lines.append(json.dumps({"id": first.id, "a": first.system, "b": second.system, "preference": value}))
    (work / "labels.jsonl").write_text("\n".join(lines) + "\n")
    store = Store(work / "runs.db", create=False)
    return al.fit(store, result.run_id, al.read_labels(work / "labels.jsonl"), signals=("semantic",),
                  resamples=1000, seed=seed, source=str(data))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--redraw", action="store_true", help="draw from the alignment file written last time")
    args = parser.parse_args()
    IMG.mkdir(parents=True, exist_ok=True)
    if args.redraw:
        alignment = al.read_alignment(OUT)
    else:
        alignment = judge_free_alignment(args.data, args.pairs, args.seed)
        al.write_alignment(alignment, OUT)
    for line in al.summary_lines(alignment):
        print(line)
    drawn = {p["title"]: p for p in plots(alignment) if "svg" in p}
    score = next(p for t, p in drawn.items() if t.startswith("Aligned score"))
    weights = drawn["Weight of each input in the aligned score"]
    (IMG / "align-score.svg").write_text(str(score["svg"]) + "\n")
    (IMG / "align-weights.svg").write_text(str(weights["svg"]) + "\n")
    calibration = json.loads(EXPERTQA.read_text())["calibration"]
    svg = reliability_svg("direct P(yes)", calibration["before"]["reliability"], calibration["after_cv"]["reliability"])
    (IMG / "align-reliability.svg").write_text(svg + "\n")
    print("wrote docs/img/align-score.svg, align-weights.svg, align-reliability.svg")


if __name__ == "__main__":
    main()
