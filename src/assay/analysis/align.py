"""Aligning a judge with its reviewers: fitted on labels a team already has, applied beside the raw scores.

``assay align RUN.db --labels FILE`` reads one run of a store (its scores and verdicts, no judge
call) and the reviewers' labels — a label file and/or the review UI's annotations in the store —
and fits, with cross-validation by item (scikit-learn ``GroupKFold`` on the item ``id``: an item's
answers and verdicts are never split between a training and a test fold):

* **calibration** of each kind of judged probability (the ``p_judge`` of DeCE's ``criteria`` and
  ``elements`` and of any method whose verdicts carry one): isotonic regression and Platt
  scaling (a logistic regression on logit p), the one with the lower out-of-fold log loss kept,
  so that ``p_calibrated`` reads as the chance a reviewer agrees the verdict holds;
* a **tie threshold** for pairwise runs (DICE): below this distance of the forced choice
  P(A) / (P(A) + P(B)) from 0.5 the two answers tie, chosen to agree most with the reviewers'
  A / B / tie labels;
* an **aligned score** over the run's scores and judge-free signals (ROUGE-L, MiniLM cosine),
  fitted to the reviewers' grades. Default (``combine="equal"``): the inputs that agree with the
  reviewers on the training data (positive Pearson r) are standardised and weighted equally, the
  others get weight 0; on grades, a least-squares line then puts the sum on the grades' scale.
  ``combine="ridge"``: a non-negative ridge regression (scikit-learn ``Ridge(positive=True)``, on
  standardised inputs). Both keep it monotone: a higher input never lowers it. With pair
  preferences instead of grades it is fitted on the two answers' differences.

  Why equal weights by default: with the tens of labels a team has, fitted weights follow the
  noise of the training folds. On RAGChecker dev pairs (DeCE direct on the embedded judge plus
  ROUGE-L and MiniLM, 38 pairs) out-of-fold Pearson r with the annotators' overall preference was
  0.59 with equal weights against 0.48 with the ridge (completeness 0.57 against 0.42,
  correctness 0.58 against 0.60), and on 140 judge-free pairs 0.57 against 0.56. This is the "improper linear model"
  result of Dawes (1979, "The robust beauty of improper linear models", American Psychologist):
  unit weights on standardised predictors that point the right way predict held-out data about
  as well as, and in small samples better than, fitted regression weights.

Every part reports its cross-validated agreement (out-of-fold predictions only) before and after,
with bootstrap CIs that resample items. The alignment file (JSON, :data:`FORMAT` version
:data:`VERSION`) names the method, its options and prompt hashes and the judge it was fitted for;
:func:`check_compatible` refuses it for any other. Applying it (:func:`aligned_fields`) adds
``p_calibrated``, ``aligned_score`` and ``aligned_verdict`` beside the raw values: the stored
results are never changed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from assay.analysis.align_fit import (  # noqa: F401  (re-exported: part of assay.analysis.align's API)
    COMBINERS,
    MIN_CLASS,
    RIDGE_ALPHA,
    _auroc,
    _best_threshold,
    _boot,
    _brier,
    _ece,
    _finite,
    _fit_equal,
    _fit_ridge,
    _folds,
    _informative,
    _log_loss,
    _logit,
    _pearson,
    aligned_value,
    calibrate,
    correlation_report,
    decide,
    fit_aligned_score,
    fit_calibration,
    fit_calibrator,
    fit_tie_threshold,
    probability_report,
)
from assay.analysis.align_labels import (  # noqa: F401  (re-exported: the labels are part of assay.analysis.align's API)
    GRADE_PATHS,
    VERDICT,
    Labels,
    _grade,
    _records,
    _text,
    merge,
    read_labels,
    store_labels,
)
from assay.core._load import reject_constant
from assay.core.errors import ConfigError, InputError
from assay.core.records import UnitResult
from assay.store import Store

FORMAT = "assay-alignment"
VERSION = 2
"""2: the aligned score keeps its out-of-fold predictions (``out_of_fold``) for the report's plot; 1 still reads."""
SIGNALS = ("rougeL", "semantic")
"""Judge-free signals an aligned score may combine with the method's scores."""
MIN_GRADES = 12
"""Graded answers (or labelled pairs) needed to fit an aligned score."""
MIN_VERDICTS = 24
"""Labelled verdicts of one kind needed to calibrate it, with at least :data:`MIN_CLASS` of each outcome."""
MIN_PAIRS = 12
"""Labelled pairs (A, B or tie) needed to fit a tie threshold, with at least :data:`MIN_CLASS` ties and non-ties."""



# --- the run's side ---------------------------------------------------------------------------------
def identity(manifest: dict[str, Any]) -> dict[str, Any]:
    """What an alignment is bound to: the method, its options and prompt hashes, and the judge."""
    method_manifest = manifest.get("method_manifest") or {}
    prompts: dict[str, Any] = {}
    for key, value in method_manifest.items():  # prompt_sha256 {name: hash}, domain_sha256, criteria_file_sha256
        if key.endswith("sha256"):
            prompts.update(value if isinstance(value, dict) else {key.removesuffix("_sha256"): value})
    return {"method": manifest.get("method"), "method_version": manifest.get("method_version"),
            "options": method_manifest.get("config") or {}, "prompts": prompts, "judge": manifest.get("judge"),
            "judge_identity": manifest.get("judge_identity") or {}}


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def check_method(alignment: dict[str, Any], name: str, method: Any, source: str) -> None:
    """Before a run: one ConfigError line when ``alignment`` was fitted for another method, method
    version, options or prompt than ``method`` (the judge is checked against the run's manifest)."""
    # an option whose default depends on the judge (DeCE's verdicts) is not settled yet: the method
    # passes if it matches as settled for a judge with or without label probabilities (the run's
    # own manifest, settled, is checked again after the run)
    settled = [method.for_judge(SimpleNamespace(label_probs=probs)) for probs in (True, False)]
    problems = []
    for candidate in dict.fromkeys([method, *settled]):
        manifest = {"method": name, "method_version": type(method).version, "method_manifest": candidate.manifest()}
        try:
            check_compatible(alignment, manifest, source, judge=False)
            return
        except ConfigError as exc:
            problems.append(exc)
    raise problems[1 if len(problems) > 1 else 0]  # as settled on a judge with label probabilities


def check_compatible(alignment: dict[str, Any], manifest: dict[str, Any], source: str, *, judge: bool = True) -> None:
    """One ConfigError line when ``alignment`` was fitted for another method, options, prompt or judge."""
    fitted, here = alignment["fitted_for"], identity(manifest)
    if fitted["method"] != here["method"]:
        raise ConfigError(f"--alignment {source}: fitted for method {fitted['method']}, this run is "
                          f"{here['method']}; fit one for it with assay align")
    other_model = _digest(fitted["judge_identity"]) != _digest(here["judge_identity"])
    if judge and (fitted["judge"] != here["judge"] or other_model):
        raise ConfigError(f"--alignment {source}: fitted for judge {fitted['judge']}, this run's judge is "
                          f"{here['judge']}{' (another model or version)' if fitted['judge'] == here['judge'] else ''}"
                          "; fit one for it with assay align")
    changed = sorted(k for k in {**fitted["prompts"], **here["prompts"]}
                     if fitted["prompts"].get(k) != here["prompts"].get(k))
    if changed or fitted["method_version"] != here["method_version"]:
        what = f"prompt {', '.join(changed)}" if changed else f"method version {fitted['method_version']}"
        raise ConfigError(f"--alignment {source}: fitted on another {what} than this run's; fit one for it "
                          "with assay align")
    options = sorted(k for k in {**fitted["options"], **here["options"]}
                     if fitted["options"].get(k) != here["options"].get(k))
    if options:
        shown = ", ".join(f"{k}={fitted['options'].get(k)!r} (this run: {here['options'].get(k)!r})" for k in options)
        raise ConfigError(f"--alignment {source}: fitted with other method options: {shown}")


def read_alignment(path: str | Path) -> dict[str, Any]:
    """An alignment file, checked: one ConfigError line when it is not one or from a newer assay."""
    path = Path(path)
    try:
        value = json.loads(path.read_text(encoding="utf-8"),
                           parse_constant=reject_constant)
    except FileNotFoundError:
        raise ConfigError(f"--alignment {path}: file not found") from None
    except OSError as exc:
        raise ConfigError(f"--alignment {path}: cannot be read ({exc.strerror or exc})") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--alignment {path}: not an alignment file written by assay align ({exc})") from None
    if not isinstance(value, dict) or value.get("format") != FORMAT or not isinstance(value.get("fitted_for"), dict):
        raise ConfigError(f"--alignment {path}: not an alignment file written by assay align")
    version = value.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ConfigError(f"--alignment {path}: version {version!r} is not a version assay align writes "
                          f"(a whole number; this assay writes {VERSION})")
    if version > VERSION:
        raise ConfigError(f"--alignment {path}: version {version} is newer than this assay reads "
                          f"({VERSION}); upgrade assay")
    from assay.analysis.align_file import parse

    return parse(value, str(path))


def signal_values(rows: list[UnitResult], names: Sequence[str]) -> dict[str, dict[str, float | None]]:
    """Judge-free signals of every answer (by result key): ROUGE-L, MiniLM cosine. No judge call."""
    from assay.core.registry import build_method
    from assay.core.types import Item

    out: dict[str, dict[str, float | None]] = {r.key: {} for r in rows}
    for name in names:
        method = build_method(name)
        for row in rows:
            if row.kind != "item":
                continue
            item = Item.model_validate(row.item)
            if method.check_item(item) is not None:
                out[row.key][name] = None
                continue
            result = asyncio.run(method.evaluate(item, None))  # type: ignore[arg-type]  # judge-free
            out[row.key][name] = _finite(result.scores.get(name))
    return out


def verdict_entries(row: UnitResult) -> Iterable[tuple[str, str, float]]:
    """(kind, address, p_judge) of each verdict of a result that carries a probability."""
    for kind, value in row.details.items():
        if isinstance(value, list):
            for i, entry in enumerate(value):
                if isinstance(entry, dict):
                    p = _finite(entry.get("p_judge"))
                    if p is not None and 0.0 <= p <= 1.0:
                        yield kind, f"{kind}[{i}]", p


def _named(item: str, *systems: str | None) -> str:
    """An answer (or a pair) as a label names it: its id and system(s)."""
    if len(systems) == 2:
        return f"id {item!r}, systems {systems[0]!r} and {systems[1]!r}"
    return f"id {item!r}, system {systems[0]!r}" if systems and systems[0] else f"id {item!r} (no system)"


def _need(what: str, have: int, need: int) -> str:
    return f"{have} {what} (need {need}: {need - have} more)" if have < need else ""


def fit(store: Store, run_id: str, labels: Labels, *, signals: Sequence[str] = ("rougeL",), folds: int = 5,
        resamples: int = 1000, seed: int = 0, source: str = "", combine: str = "equal") -> dict[str, Any]:
    """Fit every part the labels allow; InputError (one line, how many more labels) when none.
    ``combine``: how the aligned score weighs its inputs (:data:`COMBINERS`)."""
    if combine not in COMBINERS:  # before anything is read
        raise ConfigError(f"--combine {combine!r}: not one of {', '.join(COMBINERS)}")
    run = store.run(run_id)
    rows = [r for r in store.results(run_id) if r.status != "failed"]
    items = {r.key: r for r in rows if r.kind == "item"}
    by_pair = {(str(r.items[0]["id"]), str(r.items[0].get("system")), str(r.items[1].get("system"))): r
               for r in rows if r.kind != "item" and len(r.items) == 2}
    parts: dict[str, Any] = {}
    missing: list[str] = []
    unmatched = 0
    strays: list[str] = []  # labels naming no answer (or pair) of the run: counted, the first few shown

    def key_of(item: str, system: str | None) -> str:
        return f"{item}::{system}" if system else item

    def stray(count: int, item: str, *systems: str | None) -> None:
        strays.extend([_named(item, *systems)] * count)

    # calibration of each kind of verdict
    by_kind: dict[str, tuple[list[float], list[int], list[str]]] = {}
    for (item, system, address), values in labels.verdicts.items():
        row = items.get(key_of(item, system))
        entry = None
        if row is None:
            stray(len(values), item, system)
        else:
            try:
                entry = row.resolve(address)
            except (KeyError, IndexError, TypeError):
                entry = None
        p = _finite(entry.get("p_judge")) if isinstance(entry, dict) else None
        if p is None:
            unmatched += len(values)
            continue
        kind = address.partition("[")[0]
        ps, ys, gs = by_kind.setdefault(kind, ([], [], []))
        for value in values:
            ps.append(p)
            ys.append(value)
            gs.append(item)
    calibration = {}
    for kind, (ps, ys, gs) in sorted(by_kind.items()):
        short = _need(f"labelled {kind} verdicts", len(ys), MIN_VERDICTS) or \
            _need(f"labelled {kind} verdicts that hold", sum(ys), MIN_CLASS) or \
            _need(f"labelled {kind} verdicts that fail", len(ys) - sum(ys), MIN_CLASS)
        if short:
            missing.append(short)
            continue
        calibration[kind] = fit_calibration(ps, ys, gs, folds=folds, resamples=resamples, seed=seed)
    if calibration:
        parts["calibration"] = calibration
    # tie threshold of a pairwise run
    if labels.pairs and by_pair:
        fcs: list[float] = []
        wins: list[str] = []
        raws: list[str | None] = []
        pair_groups: list[str] = []
        for (item, a, b), winners in labels.pairs.items():
            row, flip = by_pair.get((item, a, b)), False
            if row is None:
                row, flip = by_pair.get((item, b, a)), True
            fc = _finite(row.details.get("forced_choice_a")) if row is not None else None
            if row is None:
                stray(len(winners), item, a, b)
            if row is None or fc is None:
                unmatched += len(winners)
                continue
            raw = row.details.get("verdict")
            for winner in winners:
                fcs.append(fc)
                wins.append({"A": "B", "B": "A"}.get(winner, winner) if flip else winner)
                raws.append(None if raw is None else str(raw))
                pair_groups.append(item)
        ties = wins.count("tie")
        short = _need("labelled pairs", len(wins), MIN_PAIRS) or _need("pairs labelled tie", ties, MIN_CLASS) or \
            _need("pairs labelled A or B", len(wins) - ties, MIN_CLASS)
        if short:
            missing.append(short)
        else:
            parts["tie_threshold"] = fit_tie_threshold(fcs, wins, raws, pair_groups, folds=folds, resamples=resamples,
                                                       seed=seed)
    elif labels.pairs:
        unmatched += sum(map(len, labels.pairs.values()))
        for (item, a, b), winners in labels.pairs.items():
            stray(len(winners), item, a, b)
    # aligned score of an item run
    metrics = [m for m in run.manifest.get("metrics", []) if any(_finite(r.scores.get(m)) is not None
                                                                  for r in items.values())]
    wanted = bool(labels.grades or labels.preferences) and bool(items)
    if wanted and metrics:
        # a signal the run already scores (ROUGE-L of a rougeL run) would enter the fit twice, as two equal inputs
        signals = [s for s in signals if s not in metrics]
        sig = signal_values(list(items.values()), signals) if signals else {k: {} for k in items}
        names = [*metrics, *signals]

        def inputs(key: str) -> list[float] | None:
            row = items[key]
            values = [_finite(row.scores.get(m)) for m in metrics] + [sig[key].get(s) for s in signals]
            return None if any(v is None for v in values) else [float(v) for v in values]  # type: ignore[arg-type]

        xs: list[list[float]] = []
        targets: list[float] = []
        score_groups: list[str] = []
        pairwise = not labels.grades
        if not pairwise:
            for (item, system), grades in labels.grades.items():
                key = key_of(item, system)
                x = inputs(key) if key in items else None
                if key not in items:
                    stray(len(grades), item, system)
                if x is None:
                    unmatched += len(grades)
                    continue
                xs.append(x)
                targets.append(float(np.mean(grades)))
                score_groups.append(item)
        else:
            for (item, a, b), preferences in labels.preferences.items():
                ka, kb = key_of(item, a), key_of(item, b)
                xa = inputs(ka) if ka in items else None
                xb = inputs(kb) if kb in items else None
                if ka not in items or kb not in items:
                    stray(len(preferences), item, a, b)
                if xa is None or xb is None:
                    unmatched += len(preferences)
                    continue
                xs.append([vb - va for va, vb in zip(xa, xb, strict=True)])
                targets.append(float(np.mean(preferences)))
                score_groups.append(item)
        short = _need("graded answers" if not pairwise else "labelled pairs", len(targets), MIN_GRADES)
        if short:
            missing.append(short)
        else:
            parts["aligned_score"] = fit_aligned_score(
                names, np.asarray(xs, dtype=float), np.asarray(targets, dtype=float), score_groups, pairwise=pairwise,
                folds=folds, resamples=resamples, seed=seed, combine=combine)
            parts["aligned_score"]["signals"] = list(signals)
            if not any(parts["aligned_score"]["weights"].values()):
                missing.append("aligned score: no input agrees with the reviewers (every weight is 0), so it "
                               "says nothing; label more answers or add a signal")
    elif wanted:
        missing.append("no scored answers in the run to fit an aligned score on")
    if not parts:
        counts = labels.counts()
        if not any(counts.values()):
            raise InputError(f"no labels: give --labels FILE or grade answers and verdicts in assay ui "
                             f"(run {run_id} has none)", source=source or None)
        total = sum(counts.values())
        if strays and len(strays) == total:  # not one label names an answer the run has
            answers = [_named(str(r.item["id"]), r.item.get("system")) for r in items.values()] or \
                [_named(item, a, b) for item, a, b in by_pair]
            shown = "; ".join(answers[:3]) + ("; ..." if len(answers) > 3 else "")
            raise InputError(f"{total} label(s) read, none matched an answer of run {run_id} by id and system: "
                             f"a label names {strays[0]}, and the run's {len(answers)} answer(s) are {shown}",
                             source=source or None)
        why = "; ".join(missing) or f"none of the {total} label(s) matches an answer of run {run_id}"
        if strays:
            why += f"; {len(strays)} of the {total} label(s) matched no answer of the run (e.g. {strays[0]})"
        raise InputError(f"too few labels to align: {why}", source=source or None)
    return {"format": FORMAT, "version": VERSION, "run": run_id, "fitted_for": identity(run.manifest),
            "fitted_on": {"labels": labels.sources, "counts": labels.counts(), "unmatched": unmatched,
                          "answers": len(items), "pairs": len(by_pair)},
            "cross_validation": {"splitter": "GroupKFold by item id", "folds": folds, "resamples": resamples,
                                 "seed": seed, "ci": 0.95},
            "not_fitted": missing, **parts}


# --- applying ---------------------------------------------------------------------------------------
def aligned_fields(alignment: dict[str, Any], store: Store, run_id: str,
                   rows: list[UnitResult] | None = None) -> dict[str, dict[str, Any]]:
    """Per result key, what the alignment adds beside the raw values: ``aligned_score``,
    ``aligned_verdict`` (pairs, at the fitted tie threshold) and ``p_calibrated`` per verdict
    (``{kind: [p or None, ...]}``). Refused (one line) for a run of another method, prompt or judge."""
    check_compatible(alignment, store.run(run_id).manifest, alignment.get("_source", "alignment"))
    rows = store.results(run_id) if rows is None else rows
    out: dict[str, dict[str, Any]] = {r.key: {} for r in rows}
    calibration = alignment.get("calibration") or {}
    for row in rows:
        found: dict[str, list[float | None]] = {}
        for kind, value in row.details.items():
            if kind in calibration and isinstance(value, list):
                mapping = calibration[kind]["map"]
                found[kind] = [float(calibrate(mapping, np.array([p]))[0]) if p is not None and 0 <= p <= 1 else None
                               for p in (_finite(e.get("p_judge")) if isinstance(e, dict) else None for e in value)]
        if found:
            out[row.key]["p_calibrated"] = found
    tie = alignment.get("tie_threshold")
    if tie is not None:
        for row in rows:
            fc = _finite(row.details.get("forced_choice_a"))
            if fc is not None:
                out[row.key]["aligned_verdict"] = {"A": "A", "B": "B", "tie": "Tie"}[decide(fc, tie["threshold"])]
    score = alignment.get("aligned_score")
    if score is not None:
        items = [r for r in rows if r.kind == "item"]
        sig = signal_values(items, score.get("signals", [])) if score.get("signals") else {}
        for row in items:
            values = {m: _finite(row.scores.get(m)) for m in score["inputs"]} | sig.get(row.key, {})
            out[row.key]["aligned_score"] = aligned_value(score, values)
    return out


def readings(alignment: dict[str, Any], store: Store, run_id: str) -> dict[str, dict[str, float | None]]:
    """Per result key, the aligned values a gate can hold a run to: ``aligned_score`` (None when an
    input is missing) and, per calibrated kind, ``p_calibrated.KIND`` = the mean calibrated P of the
    answer's verdicts (None when it has none). Refused (one line) for a run it does not fit."""
    out: dict[str, dict[str, float | None]] = {}
    rows = store.results(run_id)
    extra = aligned_fields(alignment, store, run_id, rows)
    kinds = list(alignment.get("calibration") or {})
    for row in rows:
        if row.kind != "item":
            continue
        values: dict[str, float | None] = {}
        if alignment.get("aligned_score") is not None:
            values["aligned_score"] = extra[row.key].get("aligned_score")
        for kind in kinds:
            ps = [p for p in (extra[row.key].get("p_calibrated") or {}).get(kind, []) if p is not None]
            values[f"p_calibrated.{kind}"] = float(np.mean(ps)) if ps else None
        out[row.key] = values
    return out


def decorate(record: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """An exported row with the alignment's values beside the raw ones: ``aligned_score``,
    ``aligned_verdict``, and ``p_calibrated`` in a copy of each verdict entry (``p_judge`` kept)."""
    for kind, probabilities in (extra.get("p_calibrated") or {}).items():
        entries = record.get(kind)
        if isinstance(entries, list):
            record[kind] = [{**e, "p_calibrated": p} if isinstance(e, dict) else e
                            for e, p in zip(entries, probabilities, strict=False)]
    for key in ("aligned_score", "aligned_verdict"):
        if key in extra:
            record[key] = extra[key]
    return record


def load_for(path: Path, store: Store, run_id: str) -> dict[str, Any]:
    """Read an alignment file and check it against the run (one ConfigError line if it does not fit)."""
    alignment = read_alignment(path)
    alignment["_source"] = str(path)
    check_compatible(alignment, store.run(run_id).manifest, str(path))
    return alignment


def summary_lines(alignment: dict[str, Any]) -> list[str]:
    """What the alignment rests on and how well it transfers, in a few lines."""
    def f(value: Any) -> str:
        return "—" if value is None else f"{value:.3f}"

    def ci(value: Any) -> str:
        return "" if not value else f" [{value[0]:.2f}, {value[1]:.2f}]"

    lines = []
    for kind, part in (alignment.get("calibration") or {}).items():
        b, a = part["before"], part["after_cv"]
        lines.append(f"calibration of {kind} ({part['n']} labelled verdicts, {part['items']} items, "
                     f"{part['chosen']}): ECE {f(b['ece'])}{ci(b['ece_ci'])} → {f(a['ece'])}{ci(a['ece_ci'])}, "
                     f"Brier {f(b['brier'])} → {f(a['brier'])}, AUROC {f(b['auroc'])} → {f(a['auroc'])} "
                     f"(held-out folds; reviewers agree {b['base_rate']:.2f}, mean P(yes) {b['mean_p']:.2f})")
    tie = alignment.get("tie_threshold")
    if tie is not None:
        lines.append(f"tie threshold {tie['threshold']:.3f} on the forced choice ({tie['n']} labelled pairs): "
                     f"agreement {f(tie['after_cv']['accuracy'])}{ci(tie['after_cv'].get('accuracy_ci'))} on held-out "
                     f"folds; the judge's own verdict {f(tie['judge_verdict']['accuracy'])}, the forced choice "
                     f"without ties {f(tie['forced_choice']['accuracy'])}")
    score = alignment.get("aligned_score")
    if score is not None:
        standardised = score.get("standardised_shares")
        shown = standardised or score["shares"]
        weights = ", ".join(f"{n} {shown[n]:.2f}" for n in score["inputs"])
        best = max(score["before"].items(), default=None,
                   key=lambda kv: -2 if kv[1]["pearson"] is None else kv[1]["pearson"])
        others = score.get("other_combiners_after_cv") or {}
        lines.append(f"aligned score ({score['n']} {score['fitted_to']}): Pearson r {f(score['after_cv']['pearson'])}"
                     f"{ci(score['after_cv']['pearson_ci'])} on held-out folds"
                     + (f"; best single input {best[0]} {f(best[1]['pearson'])}{ci(best[1]['pearson_ci'])}"
                        if best is not None else "")
                     + f"; weights: {score.get('combine', 'ridge')}, shares of the "
                     + ("standardised" if standardised else "raw") + f" weights {weights}"
                     + "".join(f" ({k} weights' held-out r {f(v)})" for k, v in others.items()))
    for line in alignment.get("not_fitted") or []:
        lines.append(f"not fitted: {line}")
    return lines


def show_aligned(alignment: dict[str, Any], store: Store, run_id: str, console: Any) -> None:
    """Print the run's raw and aligned readings side by side (``assay eval --alignment``)."""
    from rich.table import Table

    rows = store.results(run_id)
    extra = aligned_fields(alignment, store, run_id, rows)
    table = Table(title=f"aligned with the reviewers ({alignment.get('_source', 'alignment')})")
    for column in ("reading", "n", "raw", "aligned"):
        table.add_column(column, justify="left" if column == "reading" else "right")

    def mean(values: list[float]) -> str:
        return "—" if not values else f"{float(np.mean(values)):.3f}"

    score = alignment.get("aligned_score")
    if score is not None:
        primary = score["inputs"][0]
        pairs = [(_finite(r.scores.get(primary)), extra[r.key].get("aligned_score")) for r in rows]
        raw = [a for a, _ in pairs if a is not None]
        aligned = [b for _, b in pairs if b is not None]
        table.add_row(f"mean score ({primary} → aligned)", str(len(aligned)), mean(raw), mean(aligned))
    for kind in alignment.get("calibration") or {}:
        raw, cal = [], []
        for r in rows:
            entries = r.details.get(kind)
            for e, p in zip(entries if isinstance(entries, list) else [],
                            extra[r.key].get("p_calibrated", {}).get(kind, []), strict=False):
                if isinstance(e, dict) and _finite(e.get("p_judge")) is not None and p is not None:
                    raw.append(float(e["p_judge"]))
                    cal.append(p)
        table.add_row(f"{kind}: mean P(yes) → p_calibrated", str(len(cal)), mean(raw), mean(cal))
        table.add_row(f"{kind}: share ≥ 0.5", str(len(cal)), mean([float(v >= 0.5) for v in raw]),
                      mean([float(v >= 0.5) for v in cal]))
    if alignment.get("tie_threshold") is not None:
        for label in ("A", "B", "Tie"):
            raw_n = sum(1 for r in rows if r.details.get("verdict") == label)
            aligned_n = sum(1 for r in rows if extra[r.key].get("aligned_verdict") == label)
            table.add_row(f"verdicts {label} (judge → tie threshold "
                          f"{alignment['tie_threshold']['threshold']:.3f})", str(len(rows)), str(raw_n),
                          str(aligned_n))
    console.print(table)
    console.print("raw scores and verdicts are unchanged in the store; assay export --alignment writes both",
                  soft_wrap=True, highlight=False)


def write_alignment(alignment: dict[str, Any], path: Path) -> Path:
    from assay.core._files import write_json
    return write_json(path, {k: v for k, v in alignment.items() if not k.startswith("_")})
