"""`assay dece criteria extract`: the expert review workflow for DeCE criteria (paper §3.3.1)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import typer

from assay._files import atomic_write_text, check_output
from assay.backends import get_backend
from assay.cli._common import console, parse_options
from assay.cli.eval import JUDGE, JUDGE_OPT
from assay.datasets import read_items
from assay.errors import InputError
from assay.methods import build_method
from assay.runner import JudgeClient, RunnerConfig
from assay.stages import StageResult, run_stage
from assay.store import Store
from assay.types import Item, Unscored

app = typer.Typer(help="DeCE tools.", no_args_is_help=True)
criteria_app = typer.Typer(help="Extract criteria for expert review.", no_args_is_help=True)
app.add_typer(criteria_app, name="criteria")


@criteria_app.command("extract")
def extract(
    data: Path = typer.Argument(..., help="items with references"),
    output: Path = typer.Option(..., "--output", "-o", help="criteria JSONL to write"),
    judge: str = JUDGE,
    judge_opt: list[str] | None = JUDGE_OPT,
    domain: str = typer.Option("general", "--domain", envvar="ASSAY_DOMAIN"),
    seed: int = typer.Option(0, "--seed", envvar="ASSAY_SEED"),
    cache: Path = typer.Option(Path("assay-run.db"), "--cache", envvar="ASSAY_OUT",
                               help="store: the judge-call cache and the stage's record (a killed extraction "
                                    "resumes from it)"),
    force: bool = typer.Option(False, "--force", help="replace an existing output file that assay did not write"),
) -> None:
    """Extract each question's criteria once (per id) into a JSONL file an expert can edit.

    Edit the "criteria" lists (change, delete, add), keep "original" as it is, then run
    `assay eval dece DATA --criteria FILE`: the store marks which criteria were edited.
    """
    check_output(output, inputs=[data, cache], force=force)
    items = read_items(data)
    method: Any = build_method("dece", domain=domain, seed=seed)
    assert method.name == "dece"
    questions: dict[str, Item] = {}
    for item in items:
        reason = method.check_item(item)
        if reason:
            raise InputError(f"item {item.id!r}: {reason}")
        questions.setdefault(item.id, item)

    backend = get_backend(judge, **parse_options(judge_opt))
    store = Store(cache)
    manifest = {"method": method.manifest(), "method_version": method.version, "judge": backend.identity(),
                "questions": {qid: q.model_dump(mode="json") for qid, q in sorted(questions.items())}}

    async def run() -> StageResult:
        client = JudgeClient(backend, store, RunnerConfig(progress=False))

        def part(question: Item) -> Any:
            async def extract() -> dict[str, Any]:
                found = await method.extract_criteria(question, client)
                return {"unscored": found.model_dump()} if isinstance(found, Unscored) else found.model_dump()
            return extract

        try:
            return await run_stage(store, "dece.criteria", manifest, {qid: part(q) for qid, q in questions.items()},
                                   window=4 * client.concurrency)
        finally:
            await backend.aclose()

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
