"""`assay rubric discover`: a policy rubric from preference pairs (PReMISE, Algorithm 1)."""

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
from assay.rubrics.discover import Discovery, DiscoveryConfig
from assay.rubrics.files import RubricSet, read_preference_pairs, save_rubric
from assay.runner import JudgeClient, RunnerConfig
from assay.store import Store

app = typer.Typer(help="PReMISE policy rubrics: discover (audit and repair are not built yet).",
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

    async def run() -> tuple[RubricSet, dict[str, Any]]:
        client = JudgeClient(backend, store, RunnerConfig(progress=False))
        try:
            return await discovery.run(found, client, store)
        finally:
            await backend.aclose()

    rubric, steps = asyncio.run(run())
    steps["wall_s"] = time.perf_counter() - start
    for note in notes:
        console.print(note)
    sizes = " → ".join(str(level["pool"]) for level in steps["levels"])
    console.print(f"{len(found)} pair(s); pool per level {sizes}; stopped: {steps.get('stopped')}; "
                  f"{steps['eligible']} with support ≥ {min_support}; selected {len(rubric.criteria)}")
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
