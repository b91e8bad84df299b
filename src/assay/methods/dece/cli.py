"""`assay dece criteria extract`: the expert review workflow for DeCE criteria (paper §3.3.1)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import typer

from assay.cli.kit import (
    BUDGET_OPT,
    CONCURRENCY_OPT,
    DRY_RUN_OPT,
    JUDGE,
    JUDGE_OPT,
    PROGRESS_OPT,
    RETRIES_OPT,
    TIMEOUT_OPT,
    console,
    parse_options,
    runner_config,
)
from assay.core._files import atomic_write_text, check_output
from assay.core.errors import InputError
from assay.core.types import Item, Unscored
from assay.data import load_items
from assay.engine.session import JudgeSession
from assay.engine.stages import StageResult, run_stage
from assay.methods import build_method
from assay.methods.dece.criteria import is_criteria_record

app = typer.Typer(help="DeCE tools.", no_args_is_help=True)
criteria_app = typer.Typer(help="Extract criteria for expert review.", no_args_is_help=True)
app.add_typer(criteria_app, name="criteria")


@criteria_app.command("extract")
def extract(
    data: Path = typer.Argument(..., help="items with references"),
    output: Path = typer.Option(..., "--output", "-o", help="criteria JSONL to write"),
    judge: str = JUDGE,
    judge_opt: list[str] | None = JUDGE_OPT,
    domain: str = typer.Option("general", "--domain", envvar="ASSAY_DOMAIN",
                               help="domain pack of the prompts: general, legal, medical or financial"),
    seed: int = typer.Option(0, "--seed", envvar="ASSAY_SEED", help="sampling seed of the extraction"),
    cache: Path = typer.Option(Path("assay-run.db"), "--store", envvar=["ASSAY_STORE", "ASSAY_OUT"],
                               help="the run store: the judge-call cache and the stage's record (a killed "
                                    "extraction resumes from it)"),
    limit: int | None = typer.Option(None, "--limit", help="only the first N items"),
    concurrency: int | None = CONCURRENCY_OPT,
    budget: int | None = BUDGET_OPT,
    timeout: float = TIMEOUT_OPT,
    retries: int = RETRIES_OPT,
    dry_run: bool = DRY_RUN_OPT,
    progress: bool = PROGRESS_OPT,
    force: bool = typer.Option(False, "--force", help="replace an existing output file that assay did not write"),
) -> None:
    """Extract each question's criteria once (per id) into a JSONL file an expert can edit.

    Edit the "criteria" lists (change, delete, add), keep "original" as it is, then run
    `assay eval dece DATA --criteria FILE`: the store marks which criteria were edited.
    """
    check_output(output, inputs=[data, cache], force=force, recognise=is_criteria_record)
    items = load_items(data, limit=limit).items
    method: Any = build_method("dece", domain=domain, seed=seed)
    assert method.name == "dece"
    questions: dict[str, Item] = {}
    for item in items:
        reason = method.check_item(item)
        if reason:
            raise InputError(f"item {item.id!r}: {reason}")
        questions.setdefault(item.id, item)

    if dry_run:
        console.print(f"dry run: {len(questions)} question(s) → ≈{len(questions)} judge call(s), one extraction each "
                      "(cached ones cost nothing); call no judge, write nothing")
        return
    base = {"method": method.manifest(), "method_version": method.version,
            "questions": {qid: q.model_dump(mode="json") for qid, q in sorted(questions.items())}}

    async def run() -> StageResult:
        async with JudgeSession("dece-criteria", judge, store=cache, judge_options=parse_options(judge_opt),
                                runner=runner_config(concurrency, budget, timeout, retries, progress=progress),
                                manifest=base) as session:
            client = session.client

            def part(question: Item) -> Any:
                async def extract() -> dict[str, Any]:
                    found = await method.extract_criteria(question, client)
                    return {"unscored": found.model_dump()} if isinstance(found, Unscored) else found.model_dump()
                return extract

            # the stage's id keeps hashing the judge's identity, as before (a finished extraction is found again)
            manifest = {**base, "judge": client.backend.identity()}
            manifest = {k: manifest[k] for k in ("method", "method_version", "judge", "questions")}
            return await run_stage(session.store, "dece.criteria", manifest,
                                   {qid: part(q) for qid, q in questions.items()}, window=4 * client.concurrency)

    result = asyncio.run(run())
    failed = [(qid, value["unscored"]) for qid, value in result.parts.items() if "unscored" in value]
    lines = [json.dumps(value, ensure_ascii=False) for value in result.parts.values() if "unscored" not in value]
    atomic_write_text(output, "\n".join(lines) + "\n")
    console.print(f"stage dece.criteria {result.stage_id} in {cache}: {result.resumed_with} question(s) were already "
                  f"done, {result.computed} extracted now; output sha256 {result.output_sha256[:16]}")
    console.print(f"wrote criteria for {len(lines)} question(s) to {output}")
    for qid, problem in failed:
        console.print(f"[red]no criteria for {qid!r}: {problem['reason']}[/red]")
    if failed:
        raise typer.Exit(1)
