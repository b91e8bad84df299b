"""A run read back from its store: summaries and the result object of :func:`assay.evaluate`.

Depends on the store, the export and the judges' list prices only; the report imports it (and ``EvalResult.report``
imports the report lazily, as a convenience), so nothing here imports the engine.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.core.records import UnitResult
from assay.judge.prices import Price, list_price
from assay.store import Store

if TYPE_CHECKING:
    from assay.judge.runner import CallStats

__all__ = ["EvalResult", "run_list_price", "summarize"]


def run_list_price(manifest: dict[str, Any]) -> Price | None:
    """The list price of a stored run's judge (:func:`assay.judge.prices.list_price`), or None:
    unknown, or the model served from another address (``--judge-opt base_url`` / ``api_base``)."""
    identity = manifest.get("judge_identity")
    if isinstance(identity, dict) and (identity.get("base_url") or identity.get("api_base")):
        return None
    return list_price(str(manifest.get("judge") or ""))


def summarize(rows: list[UnitResult], metrics: Iterable[str]) -> dict[str, Any]:
    """Per metric: n scored, n unscored, mean, median, sd, min, max — overall and per system.
    Unscored results are excluded from the statistics and counted."""
    def block(subset: list[UnitResult]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for metric in metrics:
            values = [r.scores.get(metric) for r in subset]
            scored = [float(v) for v in values if v is not None]
            out[metric] = {
                "n": len(scored), "unscored": len(values) - len(scored),
                "mean": statistics.fmean(scored) if scored else None,
                "median": statistics.median(scored) if scored else None,
                "sd": statistics.stdev(scored) if len(scored) > 1 else None,
                "min": min(scored) if scored else None, "max": max(scored) if scored else None,
            }
        return out

    # Per system only for item units: a pair's scores belong to two systems at once, and
    # grouping it under its first system (as before) misled; pairwise methods rank systems
    # themselves (DICE's report and `assay tournament`).
    single = [r for r in rows if r.kind == "item"]
    systems = sorted({str(r.item.get("system")) for r in single if r.item.get("system")})
    return {"items": len(rows), "overall": block(rows),
            "by_system": {s: block([r for r in single if r.item.get("system") == s]) for s in systems}}


class EvalResult:
    """A finished (or interrupted) run, read back from the store."""

    def __init__(self, store: Store, run_id: str) -> None:
        self.store = store
        self.run_id = run_id
        self.run = store.run(run_id)
        self.method = self.run.method
        self.metrics: list[str] = list(self.run.manifest.get("metrics", []))
        if not self.metrics and self.run.manifest.get("session"):
            # a judge session's run (a rubric audit) names its scores in its units' results
            self.metrics = list(dict.fromkeys(m for r in store.results(run_id) for m in r.scores))
        self.client_stats: CallStats | None = None
        """Calls made by the invocation that produced this result (None when read back)."""
        self.resumed_with: int | None = None
        """Items already done when this invocation resumed the run; None for a new run."""
        self.wall_s: float | None = None
        self.was_finished = False
        """Whether the run was already finished in the store before this invocation (it made no call)."""
        self.notes: list[str] = []
        """What this invocation did that the user should know (a run dropped by ``fresh``, another
        version's run of the same work)."""

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """One dict per scored unit: its fields, scores, Unscored reasons and evidence."""
        return iter(self.records())

    def __repr__(self) -> str:
        summary = self.summary()
        def mean(block: dict[str, Any]) -> str:
            return "—" if block["mean"] is None else f"{block['mean']:.3f}"

        means = ", ".join(f"{m} {mean(v)}" for m, v in summary["overall"].items() if m in self.metrics)
        unscored = sum(v["unscored"] for m, v in summary["overall"].items() if m in self.metrics)
        return (f"<EvalResult {self.method} run {self.run_id} · {summary['status']} · {summary['items']} row(s)"
                + (f" · {means}" if means else "") + (f" · {unscored} unscored" if unscored else "") + ">")

    @property
    def rows(self) -> list[UnitResult]:
        return self.store.results(self.run_id)

    def summary(self) -> dict[str, Any]:
        rows = self.rows
        out = summarize(rows, self.metrics)
        out["run_id"] = self.run_id
        run = self.store.run(self.run_id)
        out["status"] = run.status
        out["judge"] = run.manifest.get("judge")
        out["pending"] = len(self.store.items(self.run_id)) - len(rows)
        keys = sorted({k for r in rows for k in r.call_keys})
        calls: dict[str, Any] = dict(self.store.call_stats(keys))
        price = run_list_price(run.manifest)
        # what the calls cost at the judge's list price, the cached prompt tokens at its cached rate
        calls["list_price"] = price.shown() if price is not None else None
        calls["list_price_usd"] = (price.cost(int(calls["prompt_tokens"]), int(calls["completion_tokens"]),
                                              int(calls["cached_prompt_tokens"])) if price is not None else None)
        out["judge_calls"] = calls
        return out

    def caveat(self) -> str | None:
        """None for a finished run; else one line saying what it is, how much of it is stored (a
        result whose judge calls failed is not counted: a resume asks them again) and what
        continues it — for the exports and the report, whose means are then those of a part. A
        finished run some of whose results rest on failed judge calls (unscored for that reason)
        gets a line too: the same evaluation asks those calls again."""
        status = self.run.status
        kept = len(self.store.done_indices(self.run_id, retry_failed_calls=True))
        failed = len(self.store.done_indices(self.run_id)) - kept
        if status == "finished":
            return None if not failed else (
                f"run {self.run_id} finished with {failed} result(s) whose judge calls failed (unscored for that "
                "reason, not for what the judge said); the same evaluation on this store asks them again")
        units = len(self.store.items(self.run_id))
        stored = (f"{kept} of {units} result(s) stored"
                  + (f", {failed} more whose judge calls failed" if failed else "")
                  + ("; its scores and means are those of the results stored so far" if kept else ""))
        if status == "running":
            return (f"run {self.run_id} has not finished (status running: still in progress, or its process "
                    f"ended without saying so, e.g. killed with -9): {stored}; once no process runs it, the same "
                    "evaluation on this store continues it")
        again = ("the same evaluation with a larger budget (--budget) continues it" if status.startswith("incomplete")
                 else "the same evaluation on this store continues it")
        return f"run {self.run_id} did not finish ({status}): {stored}; {again}"

    def records(self) -> list[dict[str, Any]]:
        from assay.exchange.export import export_rows
        return export_rows(self.store, self.run_id)

    def to_pandas(self) -> Any:
        import pandas as pd
        return pd.DataFrame(self.records())

    def report(self, path: str | Path) -> Path:
        from assay.view.report import write_report
        return write_report(self, Path(path))
