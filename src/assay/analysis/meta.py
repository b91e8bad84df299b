"""Meta-evaluation: how far each automatic score agrees with human labels (DeCE Table 2 style).

For every method and each of its metrics, and every human label: Pearson and Spearman (each
with a p-value and a seeded bootstrap CI), Kendall (with p-value), n, and how many units could
not be used because a score was unscored.

* Pointwise sets: the score of each answer against the mean of its annotators' values.
* Pairwise sets (RAGChecker): the score difference second − first against each annotator's
  label, the difference repeated once per annotator, as RAGChecker's ``meta_eval.py`` does.
  Pairwise rows also carry ``agreement``: over (pair, annotator) labels that are not ties, the
  share where the score difference has the label's sign (a zero difference counts half).
  The bootstrap CIs resample pairs, not (pair, annotator) points: a pair's points share one score
  difference, and resampling them one by one would make the intervals too narrow. (scipy's
  p-values treat the points as independent, as RAGChecker's script does: read the CI.)

``human_agreement``: how far the annotators agree with each other (Krippendorff's alpha, and
Pearson r of the first two ratings of each unit), the ceiling a judge's correlation is read against.

``system_ranking`` (pairwise sets): Bradley–Terry ratings of the systems from the humans'
labels and from each metric, and Kendall τ between them: does the metric order the systems as
the humans do (a leaderboard question, not an answer-level one)?

``comparisons``: is one metric closer to the humans than another? For each human label, the
difference in Pearson r between a reference metric (``versus``; by default ``dece.f_beta`` when
DeCE ran, else the first metric) and every other metric, on the units both scored, with a paired
bootstrap CI over the same resampled units (the two correlations share the human labels, so their
separate CIs overlap even when one is reliably higher).

``meta.json`` keeps ``signature``, ``rows`` and ``items`` (each unit's scores and human labels
as read), so anyone can recompute the table.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import statistics
from pathlib import Path
from typing import Any

from assay.analysis.stats import Signature, bradley_terry, correlation, correlation_difference, krippendorff_alpha
from assay.core.errors import InputError
from assay.core.protocols import meta_evaluation
from assay.core.registry import build_method
from assay.core.report_models import MetaDataset, MetaReport, MetaRun, TypedReport
from assay.data.datasets.adapters import MetaSet
from assay.engine import aevaluate
from assay.judge.backends import JudgeBackend
from assay.judge.runner import RunnerConfig, canonical_json
from assay.store import Store


def metric_name(method: str, metric: str, metrics: tuple[str, ...]) -> str:
    """``rougeL`` for single-metric methods named like their metric, else ``dece.f_beta``."""
    return method if metrics == (method,) else f"{method}.{metric}"


def correlate(metaset: MetaSet, scores: dict[str, dict[str, float | None]], name: str, metric: str,
              resamples: int, seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Rows (one per human label) and per-unit records for one automatic metric."""
    records = []
    for unit in metaset.units:
        values = [scores.get(k, {}).get(metric) for k in unit.keys]
        record: dict[str, Any] = {"id": unit.id, "method": name, "human": unit.human}
        if metaset.pairwise:
            record["score_a"], record["score_b"] = values
        else:
            record["score"] = values[0]
        records.append(record)
    rows = []
    for label in metaset.labels:
        xs: list[float] = []
        ys: list[float] = []
        groups: list[str] = []
        unscored = 0
        for unit in metaset.units:
            human = unit.human.get(label) or []
            if not human:
                continue
            values = [scores.get(k, {}).get(metric) for k in unit.keys]
            if any(v is None for v in values):
                unscored += 1
                continue
            if metaset.pairwise:
                diff = float(values[1]) - float(values[0])  # type: ignore[arg-type]
                for value in human:
                    xs.append(diff)
                    ys.append(value)
                    groups.append(unit.id)
            else:
                xs.append(float(values[0]))  # type: ignore[arg-type]
                ys.append(statistics.fmean(human))
                groups.append(unit.id)
        agreement = None
        decided = [(x, y) for x, y in zip(xs, ys, strict=True) if y != 0]
        if metaset.pairwise and decided:
            # pairwise accuracy: the score difference points the annotator's way (a tie counts half)
            agreement = sum(1.0 if x * y > 0 else 0.5 if x == 0 else 0.0 for x, y in decided) / len(decided)
        pearson = correlation(xs, ys, "pearson", resamples=resamples, seed=seed, groups=groups)
        spearman = correlation(xs, ys, "spearman", resamples=resamples, seed=seed, groups=groups)
        kendall = correlation(xs, ys, "kendall", resamples=0)
        rows.append({"method": name, "human_label": label, "pearson": pearson.r, "pearson_p": pearson.p,
                     "pearson_ci": list(pearson.ci) if pearson.ci else None, "spearman": spearman.r,
                     "spearman_p": spearman.p, "spearman_ci": list(spearman.ci) if spearman.ci else None,
                     "kendall": kendall.r, "kendall_p": kendall.p,
                     "n": len(xs), "unscored": unscored, "agreement": agreement,
                     "agreement_n": len(decided) if metaset.pairwise else None, "note": pearson.note})
    return rows, records


def human_agreement(metaset: MetaSet, resamples: int = 1000, seed: int = 0) -> list[dict[str, Any]]:
    """How far the annotators agree with each other, per label: the ceiling a judge can be read
    against. Krippendorff's alpha (interval and ordinal) over the units with two or more values,
    and Pearson r between the first and second value of each unit (annotators in file order; the
    same position need not be the same person, which alpha does not assume and r does)."""
    rows = []
    for label in metaset.labels:
        multi = [u.human[label] for u in metaset.units if len(u.human.get(label) or []) >= 2]
        row: dict[str, Any] = {"human_label": label, "units": len(multi),
                               "raters_max": max((len(v) for v in multi), default=0), "alpha_interval": None,
                               "alpha_ordinal": None, "pearson_1v2": None, "pearson_1v2_ci": None, "note": None}
        values = sorted({v for vs in multi for v in vs})
        if len(multi) < 2 or len(values) < 2:
            row["note"] = "undefined: fewer than 2 units with two ratings, or a single value"
            rows.append(row)
            continue
        width = row["raters_max"]
        matrix = [[vs[i] if i < len(vs) else None for vs in multi] for i in range(width)]
        row["alpha_interval"] = krippendorff_alpha(matrix, "interval")
        row["alpha_ordinal"] = krippendorff_alpha(matrix, "ordinal")
        first_two = correlation([vs[0] for vs in multi], [vs[1] for vs in multi], "pearson", resamples=resamples,
                                seed=seed)
        row["pearson_1v2"] = first_two.r
        row["pearson_1v2_ci"] = list(first_two.ci) if first_two.ci else None
        row["note"] = first_two.note
        rows.append(row)
    return rows


def _sign_score(value: float) -> float:
    """The first side's match score from a second-minus-first value: 1 first better, 0 second, ½ tie."""
    return 0.5 if value == 0 else (0.0 if value > 0 else 1.0)


def system_rankings(metaset: MetaSet, per_metric: dict[str, tuple[dict[str, dict[str, float | None]], str]],
                    seed: int) -> dict[str, Any]:
    """Pairwise sets: do the metrics rank the *systems* as the humans do? Each annotator's label
    (by its sign) and each metric's score difference (by its sign) is a match between the pair's
    two systems; Bradley–Terry ratings of the systems from the humans' matches and from each
    metric's, over the units the metric scored, and Kendall τ between the two. Few systems make
    τ coarse: read it with its p-value and the number of systems."""
    from scipy import stats as sps

    systems_of = {item.key: str(item.system) for item in metaset.items}
    human: dict[str, Any] = {}
    rows = []
    for label in metaset.labels:
        human_matches = [(systems_of[u.keys[0]], systems_of[u.keys[1]], _sign_score(v))
                         for u in metaset.units for v in (u.human.get(label) or [])
                         if systems_of[u.keys[0]] != systems_of[u.keys[1]]]
        if not human_matches:
            continue
        fitted = bradley_terry(human_matches, resamples=0, seed=seed)
        human[label] = {"ratings": fitted.ratings, "matches": len(human_matches), "note": fitted.note}
        for name, (scores, metric) in per_metric.items():
            h_matches, m_matches = [], []
            for u in metaset.units:
                a, b = systems_of[u.keys[0]], systems_of[u.keys[1]]
                values = [scores.get(k, {}).get(metric) for k in u.keys]
                if a == b or any(v is None for v in values) or not u.human.get(label):
                    continue
                m_matches.append((a, b, _sign_score(float(values[1]) - float(values[0]))))  # type: ignore[arg-type]
                h_matches += [(a, b, _sign_score(v)) for v in u.human[label]]
            row: dict[str, Any] = {"method": name, "human_label": label, "kendall_tau": None, "p": None,
                                   "systems": 0, "matches": len(m_matches), "ratings": None, "note": None}
            if len(m_matches) >= 2:
                by_humans = bradley_terry(h_matches, resamples=0).ratings
                by_metric = bradley_terry(m_matches, resamples=0).ratings
                shared = sorted(set(by_humans) & set(by_metric))
                row["systems"], row["ratings"] = len(shared), by_metric
                h_values, m_values = [by_humans[s] for s in shared], [by_metric[s] for s in shared]
                if len(shared) < 3:
                    row["note"] = "undefined: fewer than 3 systems"
                elif max(h_values) - min(h_values) < 1e-6 or max(m_values) - min(m_values) < 1e-6:
                    row["note"] = "undefined: one side rates every system alike"
                else:
                    tau = sps.kendalltau(h_values, m_values)
                    row["kendall_tau"], row["p"] = float(tau.statistic), float(tau.pvalue)
            else:
                row["note"] = "undefined: fewer than 2 matches"
            rows.append(row)
    return {"human": human, "rows": rows}


def _points(metaset: MetaSet, scores: dict[str, dict[str, float | None]], metric: str,
            label: str) -> list[tuple[str, float | None, float]]:
    """(unit id, automatic value, human value) per point, as :func:`correlate` pairs them."""
    out: list[tuple[str, float | None, float]] = []
    for unit in metaset.units:
        human = unit.human.get(label) or []
        if not human:
            continue
        values = [scores.get(k, {}).get(metric) for k in unit.keys]
        if any(v is None for v in values):
            auto = None
        elif metaset.pairwise:
            auto = float(values[1]) - float(values[0])  # type: ignore[arg-type]
        else:
            auto = float(values[0])  # type: ignore[arg-type]
        if metaset.pairwise:
            out += [(unit.id, auto, value) for value in human]
        else:
            out.append((unit.id, auto, statistics.fmean(human)))
    return out


def compare_metrics(metaset: MetaSet, per_metric: dict[str, tuple[dict[str, dict[str, float | None]], str]],
                    versus: str, resamples: int, seed: int) -> list[dict[str, Any]]:
    """Pearson r of ``versus`` minus Pearson r of every other metric, per human label, on the
    units both scored, with a paired (unit-resampling) bootstrap CI and a bootstrap p."""
    if versus not in per_metric:
        raise InputError(f"--versus {versus!r} is not one of the metrics: {', '.join(per_metric)}")
    ref_scores, ref_metric = per_metric[versus]
    rows = []
    for label in metaset.labels:
        ref = _points(metaset, ref_scores, ref_metric, label)
        for name, (scores, metric) in per_metric.items():
            if name == versus:
                continue
            other = _points(metaset, scores, metric, label)
            diff = correlation_difference([p[1] for p in ref], [p[1] for p in other], [p[2] for p in ref],
                                          "pearson", resamples=resamples, seed=seed, groups=[p[0] for p in ref])
            rows.append({"versus": versus, "method": name, "human_label": label, "r_versus": diff.r1,
                         "r_method": diff.r2, "delta": diff.delta, "delta_ci": list(diff.ci) if diff.ci else None,
                         "p_boot": diff.p_boot, "n": diff.n, "note": diff.note})
    return rows


def _number(value: Any) -> float | None:
    """A detail kept as a metric: a real number, else unscored (None)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _item_key(item: dict[str, Any]) -> str:
    return f"{item['id']}::{item['system']}" if item.get("system") else str(item["id"])


def _majority(labels: list[float]) -> float | None:
    """The most frequent of −1 / 0 / +1; a tie between counts is a tie (0)."""
    if not labels:
        return None
    counts = {v: labels.count(v) for v in set(labels)}
    best = max(counts.values())
    winners = [v for v, c in counts.items() if c == best]
    return winners[0] if len(winners) == 1 else 0.0


majority = _majority  # its public name (the benchmarks)


def pair_agreement(metaset: MetaSet, rows: list[Any], method: Any) -> dict[str, Any] | None:
    """A pairwise method's verdicts (its ``pair_verdict`` of each row's evidence) against the
    humans' majority preference (−1 first better, 0 tie, +1 second better): see
    :func:`verdict_agreement`. Units whose first answer is the pair's ``b`` are read the other way
    round."""
    if "preference" not in metaset.labels:
        return None
    by_id = {u.id: u for u in metaset.units}
    pairs = []
    deciders: dict[str, list[int]] = {}
    for r in rows:
        unit = by_id.get(str(r.items[0]["id"]))
        found = method.pair_verdict(r.details)
        if unit is None or found is None:
            continue
        human = _majority(list(unit.human.get("preference") or []))
        if human is None:
            continue
        verdict, confidence, decision, decider = found
        flipped = _item_key(r.items[0]) != unit.keys[0]
        judge = {"A": -1.0, "B": 1.0, "Tie": 0.0}[verdict] * (-1.0 if flipped else 1.0)
        pairs.append((judge, human, decision, confidence))
        deciders.setdefault(str(decider or "judge"), []).append(int(judge == human))
    result = verdict_agreement(pairs)
    if result is not None:  # what decided each order (DICE: the class hierarchy or the judge's label)
        result["by_decider"] = {k: {"n": len(v), "accuracy": statistics.fmean(v)} for k, v in sorted(deciders.items())}
    return result


def threshold_agreement(metaset: MetaSet, scores: dict[str, dict[str, float | None]], metric: str,
                        span: float, delta: float = 0.15) -> dict[str, Any] | None:
    """The thresholded-scalar baseline of DICE §4.2: a pointwise score for each answer of a pair,
    turned into a verdict — Tie when the two scores differ by less than ``delta`` of the metric's
    range (``span``), else the higher one wins — and compared with the humans' majority as
    :func:`verdict_agreement` does (no decision kind, no confidence)."""
    if "preference" not in metaset.labels or not metaset.pairwise:
        return None
    pairs: list[tuple[float, float, str | None, float | None]] = []
    for unit in metaset.units:
        first, second = (scores.get(k, {}).get(metric) for k in unit.keys[:2])
        human = _majority(list(unit.human.get("preference") or []))
        if first is None or second is None or human is None:
            continue
        difference = (float(second) - float(first)) / span
        pairs.append((0.0 if abs(difference) < delta else math.copysign(1.0, difference), human, None, None))
    result = verdict_agreement(pairs)
    if result is not None:
        result["threshold"] = {"delta": delta, "range": span}
    return result


def verdict_agreement(pairs: list[tuple[float, float, str | None, float | None]]) -> dict[str, Any] | None:
    """Agreement of (judge verdict, human majority, decision kind, confidence) tuples, verdicts
    as −1 first better / 0 tie / +1 second better: accuracy, Cohen's kappa, the confusion matrix,
    accuracy of hard vs soft decisions, and calibration of the confidence (the probability of the
    verdict given) by ECE and Brier."""
    from assay.analysis.stats import brier, cohen_kappa, ece

    if not pairs:
        return None
    names = {-1.0: "first", 0.0: "tie", 1.0: "second"}
    judged = [names[j] for j, _, _, _ in pairs]
    humans = [names[h] for _, h, _, _ in pairs]
    correct = [int(j == h) for j, h in zip(judged, humans, strict=True)]
    confusion = {h: {j: sum(1 for a, b in zip(humans, judged, strict=True) if a == h and b == j)
                     for j in ("first", "tie", "second")} for h in ("first", "tie", "second")}
    split = {}
    for kind in ("hard", "soft"):
        hits = [c for c, (_, _, d, _) in zip(correct, pairs, strict=True) if d == kind]
        split[kind] = {"n": len(hits), "accuracy": statistics.fmean(hits) if hits else None}
    confident = [(float(c_), ok) for (_, _, _, c_), ok in zip(pairs, correct, strict=True) if c_ is not None]
    try:
        kappa: float | None = cohen_kappa(humans, judged)
    except ValueError:
        kappa = None
    if kappa is not None and math.isnan(kappa):
        kappa = None
    return {"n": len(pairs), "accuracy": statistics.fmean(correct), "cohen_kappa": kappa, "confusion": confusion,
            "by_decision": split, "human_majority_counts": {k: humans.count(k) for k in ("first", "tie", "second")},
            "judge_counts": {k: judged.count(k) for k in ("first", "tie", "second")},
            "ece": ece([c for c, _ in confident], [o for _, o in confident]) if confident else None,
            "brier": brier([c for c, _ in confident], [o for _, o in confident]) if confident else None}


def default_versus(built: dict[str, Any], per_metric: dict[str, Any]) -> str:
    """The metric the others are compared with by default: the primary metric of the first
    method that declares itself the reference (DeCE), else of the first method, else its first
    metric."""
    ordered = sorted(built.items(), key=lambda kv: not meta_evaluation(kv[1]).meta_reference)
    for method, obj in ordered:
        primary = obj.primary_metric
        if primary is not None:
            name = metric_name(method, primary, obj.metrics)
            if name in per_metric:
                return name
    return next(iter(per_metric))


async def ameta(metaset: MetaSet, methods: list[str], judge: str | JudgeBackend = "llamacpp/default", *,
                store: Store | str | Path | None = None, seed: int = 0, resamples: int = 1000,
                runner: RunnerConfig | None = None, method_options: dict[str, dict[str, Any]] | None = None,
                judge_options: dict[str, Any] | None = None,
                judge_for: dict[str, JudgeBackend] | None = None, versus: str | None = None,
                verdict_delta: float = 0.15,
                detail_metrics: dict[str, tuple[str, ...]] | None = None) -> MetaReport:
    """Score ``metaset`` with each method (one run each, resumable in ``store``) and correlate.
    ``judge_for`` gives a method its own backend instance (e.g. G-Eval on one with logprobs);
    ``versus`` names the metric the others are compared with (see the module docstring). On a
    pairwise set with a ``preference`` label, a pairwise method's verdicts and every pointwise
    metric thresholded at ``verdict_delta`` of its range (DICE §4.2) are scored as verdicts
    (``verdict_agreement``). ``detail_metrics`` correlates numbers a method keeps in its results'
    details beside its scores, e.g. ``{"dece@soft": ("f_beta_hard",)}``: the greedy verdicts of
    the same calls as a soft run, named ``dece@soft.f_beta_hard`` (a missing or non-numeric value
    is unscored)."""
    if not metaset.items:  # before the store is made: nothing to score leaves no file behind
        raise InputError(f"no labelled answers to score (read as {metaset.kind} data)", source=metaset.source)
    all_rows: list[dict[str, Any]] = []
    all_items: list[dict[str, Any]] = []
    manifests: dict[str, Any] = {}
    runs: dict[str, MetaRun] = {}
    judge_name = judge.name if isinstance(judge, JudgeBackend) else judge
    per_metric: dict[str, tuple[dict[str, dict[str, float | None]], str]] = {}
    pair_results: dict[str, Any] = {}
    # an entry "METHOD@VARIANT" runs METHOD under its own label with the options given for that
    # label (e.g. "dece" and "dece@soft" with method_options={"dece@soft": {"verdicts": "soft"}})
    built = {method: build_method(method.split("@", 1)[0], **(method_options or {}).get(method, {}))
             for method in methods}
    names = [metric_name(m, metric, obj.metrics) for m, obj in built.items() for metric in obj.metrics]
    unknown = sorted(set(detail_metrics or {}) - set(methods))
    if unknown:
        raise InputError(f"detail metrics for {', '.join(unknown)}, which this run does not have")
    names += [f"{m}.{d}" for m, ds in (detail_metrics or {}).items() for d in ds]
    if versus is not None and versus not in names:  # before any judge call
        raise InputError(f"--versus {versus!r} is not one of the metrics of this run: {', '.join(names)}")
    for method, obj in built.items():  # before any judge call
        if not meta_evaluation(obj).splits_units():
            raise InputError(f"{method} scores {obj.unit_kind}s as a whole and does not say which score is each "
                             "answer's, so its scores cannot be compared with labels of answers")
    store_obj = store if isinstance(store, Store) else Store(store or ":memory:")
    for method in methods:
        method_obj = built[method]
        method_judge = (judge_for or {}).get(method, (judge_for or {}).get(method.split("@", 1)[0], judge))
        result = await aevaluate(metaset.items, method_obj, method_judge, store=store_obj, resume=True,
                                 version_check=False, runner=runner or RunnerConfig(progress=False),
                                 judge_options=judge_options, data_source=f"{metaset.kind}:{metaset.source}")
        manifests[method] = result.run.manifest["method_manifest"]  # as run: defaults settled for the judge
        rows = result.rows
        scores = {r.key: r.scores for r in rows}
        metrics: tuple[str, ...] = method_obj.metrics
        if method_obj.unit_kind == "pair":
            # A pair's scores go to its two answers (the method says which: per_answer_scores), so a
            # pairwise set's units (first, second response) correlate as for pointwise methods:
            # score(second) − score(first).
            scores = {}
            for r in rows:
                split = meta_evaluation(method_obj).per_answer_scores(r.scores)
                if split is None or len(split) != len(r.items):
                    raise InputError(f"{method} gave no score for each of the {len(r.items)} answers of unit {r.key}")
                for answer, answer_scores in zip(r.items, split, strict=True):
                    scores[_item_key(answer)] = answer_scores
            metrics = tuple(dict.fromkeys(m for values in scores.values() for m in values))
            pair_results[method] = pair_agreement(metaset, rows, meta_evaluation(method_obj))
        runs[method] = MetaRun(run_id=result.run_id, judge="none" if not method_obj.needs_judge else judge_name,
                               unscored_items=sum(1 for r in rows if r.status != "scored"),
                               judge_calls=result.client_stats.calls if result.client_stats else None,
                               wall_s=result.wall_s)
        for metric in metrics:
            name = metric_name(method, metric, metrics)
            per_metric[name] = (scores, metric)
            if method_obj.unit_kind == "item":
                low, high = method_obj.metric_range(metric)
                thresholded = threshold_agreement(metaset, scores, metric, high - low, verdict_delta)
                if thresholded is not None:
                    pair_results[f"{name} (thresholded)"] = thresholded
            table, records = correlate(metaset, scores, name, metric, resamples, seed)
            all_rows += table
            all_items += records
        for detail in (detail_metrics or {}).get(method, ()):
            name = f"{method}.{detail}"
            kept = {r.key: {detail: _number(r.details.get(detail))} for r in rows}
            per_metric[name] = (kept, detail)
            table, records = correlate(metaset, kept, name, detail, resamples, seed)
            all_rows += table
            all_items += records
    if versus is None:
        versus = default_versus(built, per_metric)
    comparisons = compare_metrics(metaset, per_metric, versus, resamples, seed) if len(per_metric) > 1 else []
    prompt_hash = hashlib.sha256(canonical_json(manifests).encode()).hexdigest()
    used = sorted({run["judge"] for run in runs.values()})
    signature = Signature(method="+".join(methods), judge="+".join(used), n=len(metaset.units),
                          resamples=resamples, seed=seed, prompt_sha256=prompt_hash)
    return MetaReport(signature=signature.to_dict(),
                      dataset=MetaDataset(kind=metaset.kind, source=metaset.source, pairwise=metaset.pairwise,
                                          units=len(metaset.units), items=len(metaset.items), notes=metaset.notes),
                      runs=runs, methods=manifests, rows=all_rows, comparisons=comparisons,
                      human_agreement=human_agreement(metaset, resamples, seed),
                      system_ranking=system_rankings(metaset, per_metric, seed) if metaset.pairwise else None,
                      verdict_agreement=pair_results, items=all_items)


def meta(metaset: MetaSet, methods: list[str], judge: str | JudgeBackend = "llamacpp/default",
         **options: Any) -> MetaReport:
    """Synchronous :func:`ameta`."""
    return asyncio.run(ameta(metaset, methods, judge, **options))


def write_meta(result: TypedReport | dict[str, Any], path: Path) -> Path:
    """Write meta.json atomically."""
    from assay.core._files import write_json
    return write_json(path, result)


def markdown_table(result: MetaReport | dict[str, Any]) -> str:
    """The rows as a markdown table with the signature line under it."""
    def f(value: Any) -> str:
        return "–" if value is None else f"{value:.2f}"

    lines = ["| method | human label | Pearson r [95% CI] | p | Spearman ρ | Kendall τ | pairwise agreement | n "
             "| unscored |", "|---|---|---|---|---|---|---|---|---|"]
    for row in result["rows"]:
        ci = f" [{row['pearson_ci'][0]:.2f}, {row['pearson_ci'][1]:.2f}]" if row["pearson_ci"] else ""
        p = "–" if row["pearson_p"] is None else f"{row['pearson_p']:.3g}"
        lines.append(f"| {row['method']} | {row['human_label']} | {f(row['pearson'])}{ci} | {p} | "
                     f"{f(row['spearman'])} | {f(row['kendall'])} | {f(row.get('agreement'))} | {row['n']} | "
                     f"{row['unscored']} |")
    lines.append("")
    lines.append(f"`{result['signature']['line']}`")
    agreement = [row for row in result.get("human_agreement") or [] if row["alpha_interval"] is not None]
    if agreement:
        lines += ["", "Agreement between the annotators themselves (the ceiling to read the table against):", "",
                  "| human label | units with ≥2 ratings | Krippendorff α interval | α ordinal "
                  "| Pearson r 1st vs 2nd [95% CI] |", "|---|---|---|---|---|"]
        for row in agreement:
            ci = f" [{row['pearson_1v2_ci'][0]:.2f}, {row['pearson_1v2_ci'][1]:.2f}]" if row["pearson_1v2_ci"] else ""
            lines.append(f"| {row['human_label']} | {row['units']} | {f(row['alpha_interval'])} | "
                         f"{f(row['alpha_ordinal'])} | {f(row['pearson_1v2'])}{ci} |")
    ranking = [r for r in (result.get("system_ranking") or {}).get("rows", []) if r["kendall_tau"] is not None]
    if ranking:
        lines += ["", "System level: Kendall τ between the Bradley–Terry ranking of the systems by the humans "
                  "and by each metric (sign of each pair's difference as a match):", "",
                  "| metric | human label | Kendall τ | p | systems | matches |", "|---|---|---|---|---|---|"]
        for row in ranking:
            lines.append(f"| {row['method']} | {row['human_label']} | {f(row['kendall_tau'])} | {row['p']:.3g} | "
                         f"{row['systems']} | {row['matches']} |")
    verdicts = {name: v for name, v in (result.get("verdict_agreement") or {}).items() if v}
    if verdicts:
        lines += ["", "Verdicts (first better / tie / second better) against the annotators' majority; a pointwise "
                  "metric is thresholded (Tie when the scores differ by less than Δ of its range):", "",
                  "| judge | n | accuracy | Cohen's κ | hard n (acc.) | soft n (acc.) | ECE | judge first/tie/second |",
                  "|---|---|---|---|---|---|---|---|"]
        for name, v in verdicts.items():
            hard, soft = v["by_decision"]["hard"], v["by_decision"]["soft"]
            counts = v.get("judge_counts") or {}
            lines.append(f"| {name} | {v['n']} | {f(v['accuracy'])} | {f(v['cohen_kappa'])} | {hard['n']} "
                         f"({f(hard['accuracy'])}) | {soft['n']} ({f(soft['accuracy'])}) | {f(v['ece'])} | "
                         f"{counts.get('first', '–')}/{counts.get('tie', '–')}/{counts.get('second', '–')} |")
    comparisons = result.get("comparisons") or []
    if comparisons:
        lines += ["", f"Δ Pearson r, {comparisons[0]['versus']} minus each other metric (paired bootstrap over "
                  "units; positive = the reference agrees more with the humans):", "",
                  "| metric | human label | r (reference) | r (metric) | Δr [95% CI] | bootstrap p | n |",
                  "|---|---|---|---|---|---|---|"]
        for row in comparisons:
            ci = f" [{row['delta_ci'][0]:+.2f}, {row['delta_ci'][1]:+.2f}]" if row["delta_ci"] else ""
            delta = "–" if row["delta"] is None else f"{row['delta']:+.2f}"
            p = "–" if row["p_boot"] is None else f"{row['p_boot']:.3g}"
            lines.append(f"| {row['method']} | {row['human_label']} | {f(row['r_versus'])} | {f(row['r_method'])} "
                         f"| {delta}{ci} | {p} | {row['n']} |")
    return "\n".join(lines)
