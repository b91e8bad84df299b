"""`assay rubric discover|audit`: PReMISE policy rubrics (Algorithm 1; audit axes of App. B.1)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import typer

from assay._files import atomic_write_text, check_output
from assay.backends import get_backend
from assay.cli._common import console, parse_options
from assay.cli.eval import JUDGE, JUDGE_OPT
from assay.errors import ConfigError
from assay.rubrics.audit import AXES, NOT_BUILT, Audit, AuditConfig
from assay.rubrics.discover import Discovery, DiscoveryConfig
from assay.rubrics.files import RubricSet, load_rubric, read_preference_pairs, save_rubric
from assay.runner import JudgeClient, RunnerConfig
from assay.store import Store

app = typer.Typer(help="PReMISE policy rubrics: discover, audit (structure, fit); repair is not built yet.",
                  no_args_is_help=True)


@app.command("discover")
def discover(
    pairs: Path = typer.Argument(..., help="preference pairs: HaluQuestQA TSV, SPEC §2.6 pairwise JSONL "
                                           "(a/b with human.winner) or JSONL with prompt/chosen/rejected"),
    output: Path = typer.Option(..., "--output", "-o", help="rubric to write (.yaml, or .json)"),
    k: int = typer.Option(20, "--k", help="target rubric size K"),
    cluster_size: int = typer.Option(8, "--cluster-size", help="target cluster size T"),
    min_support: int = typer.Option(2, "--min-support", help="n_min: raw candidates a criterion must consolidate"),
    min_sources: int = typer.Option(2, "--min-sources", help="genericity: distinct pairs a criterion must come from"),
    diversity: float = typer.Option(0.5, "--diversity", help="MMR diversity weight λ"),
    max_levels: int = typer.Option(10, "--max-levels"),
    limit: int | None = typer.Option(None, "--limit", help="use the first N pairs"),
    matcher: str = typer.Option("embeddings", "--matcher", help="embeddings (sentence-transformers) or lexical"),
    judge: str = JUDGE,
    judge_opt: list[str] | None = JUDGE_OPT,
    seed: int = typer.Option(0, "--seed", envvar="ASSAY_SEED"),
    store_path: Path = typer.Option(Path("assay-run.db"), "--store", envvar="ASSAY_OUT",
                                    help="store: the judge-call cache and the stages (a killed discovery resumes)"),
    trace: Path | None = typer.Option(None, "--trace", help="write the discovery trace (pool per level) as JSON"),
    force: bool = typer.Option(False, "--force", help="replace an existing output file that assay did not write"),
) -> None:
    """Discover a K-criterion policy rubric from preference pairs (PReMISE Algorithm 1)."""
    check_output(output, inputs=[pairs, store_path], force=force)
    if trace is not None:
        check_output(trace, inputs=[pairs, store_path, output], force=force)
    if matcher not in ("embeddings", "lexical"):
        raise ConfigError(f"--matcher must be embeddings or lexical, got {matcher!r}")
    config = DiscoveryConfig(k=k, cluster_size=cluster_size, min_support=min_support, min_sources=min_sources,
                             diversity=diversity, max_levels=max_levels, matcher=matcher,  # type: ignore[arg-type]
                             seed=seed)
    found, notes = read_preference_pairs(pairs)
    if limit is not None:
        found = found[:limit]
    backend = get_backend(judge, **parse_options(judge_opt))
    store = Store(store_path)
    discovery = Discovery(config)
    start = time.perf_counter()

    calls = {"made": 0}

    async def run() -> tuple[RubricSet, dict[str, Any]]:
        client = JudgeClient(backend, store, RunnerConfig(progress=False))
        try:
            return await discovery.run(found, client, store)
        finally:
            calls["made"] = client.stats.calls
            await backend.aclose()

    rubric, steps = asyncio.run(run())
    steps["judge_calls_made"] = calls["made"]
    steps["wall_s"] = time.perf_counter() - start
    for note in notes:
        console.print(note)
    sizes = " → ".join(str(level["pool"]) for level in steps["levels"])
    console.print(f"{len(found)} pair(s); pool per level {sizes}; stopped: {steps.get('stopped')}; "
                  f"{steps['eligible']} with support ≥ {min_support}; selected {len(rubric.criteria)}; "
                  f"{calls['made']} judge call(s) made")
    if steps["pairs_failed"]:
        console.print(f"[red]{len(steps['pairs_failed'])} pair(s) gave no criteria[/red]: "
                      + "; ".join(f"{p['pair']}: {p['reason']}" for p in steps["pairs_failed"][:3]))
    if not rubric.criteria:
        console.print("[red]no criterion passed the support and genericity filters: nothing written[/red]")
        raise typer.Exit(1)
    save_rubric(rubric, output)
    if trace is not None:
        atomic_write_text(trace, json.dumps(steps, indent=2, default=str) + "\n")
    console.print(f"wrote {len(rubric.criteria)} criteria to {output}")


@app.command("audit")
def audit(
    rubric_path: Path = typer.Argument(..., help="rubric set (.yaml or .json), from any source"),
    pairs: Path | None = typer.Option(None, "--pairs", help="preference pairs for the fit axis"),
    axes: str = typer.Option("structure,fit", "--axes", help="comma-separated: structure, fit"),
    votes: int = typer.Option(5, "--votes", help="fit: verdicts per pair, majority (1: one greedy verdict)"),
    limit: int | None = typer.Option(None, "--limit", help="fit: use the first N pairs"),
    judge: str = JUDGE,
    judge_opt: list[str] | None = JUDGE_OPT,
    seed: int = typer.Option(0, "--seed", envvar="ASSAY_SEED"),
    store_path: Path = typer.Option(Path("assay-run.db"), "--store", envvar="ASSAY_OUT",
                                    help="store: the judge-call cache (a re-run makes no call)"),
    out: Path | None = typer.Option(None, "--out", help="write the audit as JSON"),
    force: bool = typer.Option(False, "--force", help="replace an existing output file that assay did not write"),
) -> None:
    """Audit a rubric set: structural adequacy (F.9) and rubric-conditioned preference fit (F.10)."""
    chosen = [a.strip() for a in axes.split(",") if a.strip()]
    for axis in chosen:
        if axis in NOT_BUILT:
            raise ConfigError(f"--axes {axis}: this axis is not built yet (built: {', '.join(AXES)})")
        if axis not in AXES:
            raise ConfigError(f"--axes {axis!r} is not an axis: {', '.join(AXES + NOT_BUILT)}")
    if "fit" in chosen and pairs is None:
        raise ConfigError("--axes fit needs --pairs")
    if out is not None:
        check_output(out, inputs=[rubric_path, store_path, *([pairs] if pairs else [])], force=force)
    rubric = load_rubric(rubric_path)
    found = read_preference_pairs(pairs)[0] if pairs is not None and "fit" in chosen else []
    if limit is not None:
        found = found[:limit]
    backend = get_backend(judge, **parse_options(judge_opt))
    store = Store(store_path)
    auditor = Audit(AuditConfig(votes=votes, seed=seed))
    result: dict[str, Any] = {"rubric": str(rubric_path), "criteria": len(rubric.criteria), "judge": backend.name}
    start = time.perf_counter()

    async def run() -> None:
        client = JudgeClient(backend, store, RunnerConfig(progress=False))
        try:
            if "structure" in chosen:
                result["structure"] = await auditor.structure(rubric, client)
            if "fit" in chosen:
                result["fit"] = await auditor.fit(rubric, found, client)
        finally:
            await backend.aclose()
        result["judge_calls"] = client.stats.calls

    asyncio.run(run())
    result["wall_s"] = time.perf_counter() - start
    by_id: dict[str, dict[str, Any]] = {c.id: {"id": c.id} for c in rubric.criteria}
    if "structure" in result:
        for entry in result["structure"]["criteria"]:
            by_id[entry["id"]].update(structure=entry["structure"], flags=entry["flags"])
        console.print(f"structure: mean {result['structure']['mean']:.2f} of 5 over {len(rubric.criteria)} "
                      f"criteria ({result['structure']['judges']} judge(s))")
    if "fit" in result:
        fit = result["fit"]
        ci = fit["delta_ci"]
        console.print(f"fit on {fit['pairs']} pair(s), {votes} vote(s): accuracy with the rubric "
                      f"{fit['accuracy_rubric']:.3f}, without {fit['accuracy_no_rubric']:.3f}, Δ {fit['delta']:+.3f}"
                      + (f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else ""))
    summary = {"structure_mean": result.get("structure", {}).get("mean"),
               **{k: result.get("fit", {}).get(k) for k in ("accuracy_rubric", "accuracy_no_rubric", "delta",
                                                             "delta_ci")}}
    if out is not None:
        atomic_write_text(out, json.dumps({"rubrics": list(by_id.values()), "summary": summary, "detail": result},
                                          indent=2, default=str) + "\n")
        console.print(f"wrote {out}")
