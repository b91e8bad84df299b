"""Comparing runs at conversation level, judge robustness, and the release gate
(Case-Aware LLM-as-a-Judge Evaluation for Enterprise-Scale RAG Systems, §8.3–8.4, Tables 2, 3, 6).

A run is read from its store as per-conversation means of each metric (turns grouped by
``metadata.conversation_id``, unscored turns left out and counted). Two systems are compared on
the conversations both were scored on: paired Wilcoxon signed-rank, paired t and a seeded
bootstrap CI of the mean difference (A − B).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.analysis.stats import correlation, paired_bootstrap, paired_t, wilcoxon
from assay.core.errors import ConfigError
from assay.methods.caseaware.conversations import conversation_of
from assay.store import Store


@dataclass
class RunScores:
    """Per-conversation mean of each metric for one run."""

    path: str
    run_id: str
    method: str
    metrics: list[str]
    conversations: dict[str, dict[str, float]]
    unscored_turns: dict[str, int] = field(default_factory=dict)
    turns: int = 0
    status: str = "finished"
    """The run's status in its store: a gate refuses to pass a run that did not finish."""

    def metric_means(self) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for metric in self.metrics:
            values = [c[metric] for c in self.conversations.values() if metric in c]
            out[metric] = statistics.fmean(values) if values else None
        return out


def load_run(path: str | Path, run_id: str | None = None) -> RunScores:
    """Read a run's per-conversation means from its store (the latest run unless ``run_id``)."""
    path = Path(path)
    store = Store(path, create=False)
    rid = store.resolve_run(run_id)
    run = store.run(rid)
    metrics = list(run.manifest.get("metrics", []))
    grouped: dict[str, dict[str, list[float]]] = {}
    unscored = dict.fromkeys(metrics, 0)
    rows = store.results(rid)
    for row in rows:
        conversation = conversation_of(row.item)
        slot = grouped.setdefault(conversation, {})
        for metric in metrics:
            value = row.scores.get(metric)
            if value is None:
                unscored[metric] += 1
            else:
                slot.setdefault(metric, []).append(float(value))
    conversations = {c: {m: statistics.fmean(v) for m, v in values.items()} for c, values in grouped.items()}
    return RunScores(str(path), rid, run.method, metrics, conversations, unscored, len(rows), status=run.status)


def add_readings(run: RunScores, values: dict[str, dict[str, float | None]]) -> RunScores:
    """``run`` with more per-answer values (by result key, e.g. :func:`assay.analysis.align.readings`) as
    metrics: their per-conversation means, an answer without a value counted as unscored."""
    names = list(dict.fromkeys(name for v in values.values() for name in v))
    grouped: dict[str, dict[str, list[float]]] = {}
    unscored = dict.fromkeys(names, 0)
    for row in Store(Path(run.path), create=False).results(run.run_id):
        for name in names:
            value = values.get(row.key, {}).get(name)
            if value is None:
                unscored[name] += 1
            else:
                grouped.setdefault(conversation_of(row.item), {}).setdefault(name, []).append(float(value))
    conversations = {c: dict(m) for c, m in run.conversations.items()}
    for c, by_name in grouped.items():
        conversations.setdefault(c, {}).update({n: statistics.fmean(v) for n, v in by_name.items()})
    return RunScores(run.path, run.run_id, run.method, [*run.metrics, *names], conversations,
                     {**run.unscored_turns, **unscored}, run.turns, status=run.status)


def _paired_values(a: RunScores, b: RunScores, metric: str) -> tuple[list[str], list[float], list[float]]:
    ids = sorted(c for c in a.conversations if c in b.conversations
                 and metric in a.conversations[c] and metric in b.conversations[c])
    return ids, [a.conversations[c][metric] for c in ids], [b.conversations[c][metric] for c in ids]


def compare_runs(a: RunScores, b: RunScores, *, resamples: int = 10000, seed: int = 0) -> dict[str, Any]:
    """Per metric: conversation-level means, mean difference A − B, Wilcoxon, paired t and the
    bootstrap 95% CI, on the conversations scored in both runs."""
    if a.method != b.method:
        raise ConfigError(f"{a.path} holds a {a.method} run and {b.path} a {b.method} run; compare runs of the "
                          "same method")
    if a.metrics != b.metrics:
        raise ConfigError(f"the runs have different metrics ({a.method}: {len(a.metrics)}, "
                          f"{b.method}: {len(b.metrics)}); compare runs of the same method")
    only_a = sorted(set(a.conversations) - set(b.conversations))
    only_b = sorted(set(b.conversations) - set(a.conversations))
    rows = []
    for metric in a.metrics:
        ids, xs, ys = _paired_values(a, b, metric)
        w, t, boot = wilcoxon(xs, ys), paired_t(xs, ys), paired_bootstrap(xs, ys, resamples=resamples, seed=seed)
        rows.append({"metric": metric, "n": len(ids), "mean_a": statistics.fmean(xs) if xs else None,
                     "mean_b": statistics.fmean(ys) if ys else None, "mean_diff": boot.mean_diff if ids else None,
                     "wilcoxon_stat": w.statistic, "wilcoxon_p": w.p, "t_stat": t.statistic, "t_p": t.p,
                     "bootstrap_ci": list(boot.ci) if boot.ci else None, "note": w.note or t.note})
    return {"a": {"path": a.path, "run_id": a.run_id, "conversations": len(a.conversations),
                  "unscored_turns": a.unscored_turns},
            "b": {"path": b.path, "run_id": b.run_id, "conversations": len(b.conversations),
                  "unscored_turns": b.unscored_turns},
            "unpaired": {"only_a": only_a, "only_b": only_b}, "resamples": resamples, "seed": seed, "rows": rows}


def judge_robustness(first: RunScores, second: RunScores, metric: str = "s_final") -> dict[str, Any]:
    """The same system scored by two judges: Spearman ρ of conversation-level ``metric``."""
    ids, xs, ys = _paired_values(first, second, metric)
    result = correlation(xs, ys, "spearman", resamples=0)
    return {"metric": metric, "n": len(ids), "spearman": result.r, "p": result.p, "note": result.note}


@dataclass
class GateResult:
    passed: bool
    reasons: list[str]
    checks: list[dict[str, Any]]


def gate(run: RunScores, *, min_final: float | None = None, minimums: dict[str, float] | None = None,
         baseline: RunScores | None = None, max_drop: float | None = None) -> GateResult:
    """Release gate on conversation-level means. Fails when S_final or a metric is below its
    threshold, when the run has unscored turns for a gated metric, or when a metric regresses
    by more than ``max_drop`` against the baseline run (mean over the same conversations)."""
    means = run.metric_means()
    wanted: dict[str, float] = dict(minimums or {})
    if min_final is not None:
        wanted["s_final"] = min_final
    unknown = sorted(set(wanted) - set(run.metrics))
    if unknown:
        raise ConfigError(f"gate: unknown metric(s) {', '.join(unknown)}; this run has {', '.join(run.metrics)}")
    if not wanted and baseline is None:
        raise ConfigError("gate: give --min-final, --min METRIC=V or --baseline with --max-drop")
    if baseline is not None and baseline.method != run.method:
        raise ConfigError(f"gate: --baseline {baseline.path} (run {baseline.run_id}) is a {baseline.method} run and "
                          f"{run.path} a {run.method} run; a baseline must be a run of the same method")
    if baseline is not None and max_drop is None:
        raise ConfigError("gate: --baseline needs --max-drop")
    if max_drop is not None and baseline is None:
        raise ConfigError("gate: --max-drop needs --baseline (the run to compare against)")
    reasons, checks = [], []
    if run.status != "finished":  # its means are those of the answers scored so far: not the release's
        reasons.append(f"the run is {run.status}, with {run.turns} answer(s) stored: finish it (the same command "
                       "continues it) before gating")
    for metric, threshold in wanted.items():
        value = means.get(metric)
        ok = value is not None and value >= threshold and not run.unscored_turns.get(metric)
        checks.append({"check": "minimum", "metric": metric, "value": value, "threshold": threshold, "passed": ok})
        if value is None:
            reasons.append(f"{metric}: no scored conversation")
        elif value < threshold:
            reasons.append(f"{metric} = {value:.3f} is below the minimum {threshold:.3f}")
        if run.unscored_turns.get(metric):
            reasons.append(f"{metric}: {run.unscored_turns[metric]} turn(s) unscored (fix or re-run before release)")
    if baseline is not None:
        if max_drop is None:
            raise ConfigError("gate: --baseline needs --max-drop")
        for metric in wanted or {"s_final": 0.0}:
            ids, now, before = _paired_values(run, baseline, metric)
            if not ids:
                shared = [c for c in run.conversations if c in baseline.conversations]
                reasons.append(f"{metric}: no conversation scored in both runs ({len(shared)} in both, "
                               f"none with {metric} scored in each)" if shared
                               else f"{metric}: no conversation in common with the baseline")
                checks.append({"check": "regression", "metric": metric, "passed": False, "n": 0,
                               "max_drop": max_drop})
                continue
            was, now_mean = statistics.fmean(before), statistics.fmean(now)
            drop = was - now_mean
            ok = drop <= max_drop + 1e-12
            checks.append({"check": "regression", "metric": metric, "n": len(ids), "baseline": was,
                           "value": now_mean, "drop": drop, "max_drop": max_drop, "passed": ok})
            if not ok:
                reasons.append(f"{metric} dropped by {drop:.3f} against the baseline ({was:.3f} → {now_mean:.3f} "
                               f"over {len(ids)} conversation(s)), more than {max_drop:.3f}")
    return GateResult(not reasons, reasons, checks)
