"""`assay dece criteria extract`: the expert review workflow for DeCE criteria (paper §3.3.1)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import typer

from assay._files import atomic_write_text, check_output
from assay.backends import get_backend
from assay.cli._common import console, parse_options
from assay.cli.eval import JUDGE, JUDGE_OPT
from assay.datasets import read_items
from assay.errors import InputError
from assay.methods import build_method
from assay.methods.dece import CriteriaSet, DeCE
from assay.runner import JudgeClient, RunnerConfig
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
                               help="store whose judge-call cache to use"),
    force: bool = typer.Option(False, "--force", help="replace an existing output file that assay did not write"),
) -> None:
    """Extract each question's criteria once (per id) into a JSONL file an expert can edit.

    Edit the "criteria" lists (change, delete, add), keep "original" as it is, then run
    `assay eval dece DATA --criteria FILE`: the store marks which criteria were edited.
    """
    check_output(output, inputs=[data, cache], force=force)
    items = read_items(data)
    method = build_method("dece", domain=domain, seed=seed)
    assert isinstance(method, DeCE)
    questions: dict[str, Item] = {}
    for item in items:
        reason = method.check_item(item)
        if reason:
            raise InputError(f"item {item.id!r}: {reason}")
        questions.setdefault(item.id, item)

    backend = get_backend(judge, **parse_options(judge_opt))
    store = Store(cache)

    async def run() -> list[CriteriaSet | Unscored]:
        client = JudgeClient(backend, store, RunnerConfig())
        try:
            return [await method.extract_criteria(q, client) for q in questions.values()]
        finally:
            await backend.aclose()

    results = asyncio.run(run())
    failed = [(q, r) for q, r in zip(questions, results, strict=True) if isinstance(r, Unscored)]
    lines = [json.dumps(r.model_dump(), ensure_ascii=False) for r in results if isinstance(r, CriteriaSet)]
    atomic_write_text(output, "\n".join(lines) + "\n")
    console.print(f"wrote criteria for {len(lines)} question(s) to {output}")
    for qid, problem in failed:
        assert isinstance(problem, Unscored)
        console.print(f"[red]no criteria for {qid!r}: {problem.reason}[/red]")
    if failed:
        raise typer.Exit(1)
