"""`assay eval METHOD DATA`."""

from __future__ import annotations

from pathlib import Path

import typer

from assay._eval import EvalResult, aevaluate, estimate
from assay.cli._common import console, parse_options, print_summary
from assay.datasets import read_items
from assay.errors import BudgetExhausted, JudgeUnreachable
from assay.methods.dece import load_criteria_file
from assay.runner import RunnerConfig
from assay.store import Store

app = typer.Typer(help="Evaluate a data file with a method.", no_args_is_help=True)

JUDGE = typer.Option("llamacpp/default", "--judge", "-j", envvar="ASSAY_JUDGE",
                     help="provider/model, e.g. llamacpp/default, openai/gpt-4o-mini, "
                          "openai/qwen@http://127.0.0.1:8080/v1")
WAIT = typer.Option(False, "--wait", envvar="ASSAY_WAIT",
                    help="if another process is writing this run, wait for it to finish instead of failing")
JUDGE_OPT = typer.Option(None, "--judge-opt", envvar="ASSAY_JUDGE_OPT",
                         help="backend option key=value (repeatable), e.g. schema_mode=json_object")


@app.command("dece")
def eval_dece(
    data: Path = typer.Argument(..., help="items: .jsonl, .csv or .parquet (SPEC §2.6)"),
    judge: str = JUDGE,
    judge_opt: list[str] | None = JUDGE_OPT,
    out: Path = typer.Option(Path("assay-run.db"), "--out", "-o", envvar="ASSAY_OUT",
                             help="SQLite run store to write (and resume from)"),
    criteria: Path | None = typer.Option(None, "--criteria", envvar="ASSAY_CRITERIA",
                                         help="frozen criteria JSONL (from `assay dece criteria extract`)"),
    domain: str = typer.Option("general", "--domain", envvar="ASSAY_DOMAIN",
                               help="domain pack: general, legal, medical, financial"),
    beta: float = typer.Option(2.0, "--beta", envvar="ASSAY_BETA", help="F-beta weight (paper: F2)"),
    seed: int = typer.Option(0, "--seed", envvar="ASSAY_SEED", help="sampling seed"),
    quote_policy: str = typer.Option("require", "--quote-policy", envvar="ASSAY_QUOTE_POLICY",
                                     help="require: a positive verdict counts only if it cites evidence and its "
                                          "figures occur in the judged text; flag: the paper's reading, "
                                          "failed checks only flagged"),
    concurrency: int | None = typer.Option(None, "--concurrency", envvar="ASSAY_CONCURRENCY", min=1,
                                           help="judge calls in flight (default: the backend's limit)"),
    budget: int | None = typer.Option(None, "--budget", envvar="ASSAY_BUDGET", min=0,
                                      help="stop making judge calls after this many tokens"),
    timeout: float = typer.Option(600.0, "--timeout", envvar="ASSAY_TIMEOUT", min=0.001, help="seconds per call"),
    retries: int = typer.Option(4, "--retries", envvar="ASSAY_RETRIES", min=0, help="retries per call"),
    resume: bool = typer.Option(False, "--resume", envvar="ASSAY_RESUME",
                                help="continue the same run in --out (repeats no finished call)"),
    wait: bool = WAIT,
    dry_run: bool = typer.Option(False, "--dry-run", help="estimate calls and tokens; call no judge"),
    progress: bool = typer.Option(True, "--progress/--no-progress", envvar="ASSAY_PROGRESS"),
) -> None:
    """DeCE: precision and recall of answers against criteria from a gold answer."""
    items = read_items(data)
    frozen = load_criteria_file(criteria) if criteria else None
    options = {"domain": domain, "beta": beta, "seed": seed, "criteria": frozen, "quote_policy": quote_policy}
    if dry_run:
        est = estimate(items, "dece", **options)
        console.print(f"dry run: {len(items)} item(s) → ≈{est.calls} judge calls, "
                      f"≈{est.prompt_tokens} prompt + ≈{est.completion_tokens} completion tokens "
                      "(≈4 characters per token; 5 criteria and 8 elements per answer assumed; "
                      "cached calls will cost nothing)")
        return
    _run(items, "dece", options, judge=judge, judge_opt=judge_opt, out=out, data=data, resume=resume, wait=wait,
         runner=RunnerConfig(concurrency=concurrency, budget_tokens=budget, timeout_s=timeout, max_retries=retries,
                             progress=progress))


def _run(items: list, method: str, options: dict, *, judge: str, judge_opt: list[str] | None, out: Path,
         data: Path, resume: bool, wait: bool, runner: RunnerConfig) -> None:
    """Run, print the summary, and say where things are. Everything is validated (items,
    options, judge) before the store is created or touched; a budget stop exits 3, an
    unreachable judge 4 (both through :func:`assay.cli.main`)."""
    import asyncio
    try:
        result = asyncio.run(aevaluate(items, method, judge, store=out, runner=runner, resume=resume,
                                       judge_options=parse_options(judge_opt), data_source=str(data),
                                       wait_s=float("inf") if wait else None, **options))
    except (BudgetExhausted, JudgeUnreachable) as exc:
        if exc.run_id is not None:
            partial = EvalResult(Store(out, create=False), exc.run_id)
            print_summary(partial.summary(), partial.metrics)
        if isinstance(exc, BudgetExhausted):
            console.print(f"[yellow]stopped: {exc}. Finished items are saved; continue with --resume "
                          "and a larger --budget.[/yellow]")
        raise
    print_summary(result.summary(), result.metrics)
    stats = result.client_stats
    assert stats is not None
    if result.resumed_with is not None:
        console.print(f"resumed run {result.run_id}: {result.resumed_with} item(s) were already done")
    elif resume:
        console.print(f"--resume: {out} held no run with these items, options and judge; started run "
                      f"{result.run_id}")
    console.print(f"this invocation: {stats.calls} judge call(s) made, {stats.cache_hits} from cache, "
                  f"{stats.retries} retries, {stats.failures} failed, {result.wall_s:.1f} s")
    console.print(f"saved to {out} (run {result.run_id}). Next: assay export {out} --format jsonl · "
                  f"assay report {out} -o report.html")


@app.command("caseaware")
def eval_caseaware(
    data: Path = typer.Argument(..., help="turns: .jsonl, .csv or .parquet (SPEC §2.6) with contexts, history, case"),
    judge: str = JUDGE,
    judge_opt: list[str] | None = JUDGE_OPT,
    out: Path = typer.Option(Path("assay-run.db"), "--out", "-o", envvar="ASSAY_OUT",
                             help="SQLite run store to write (and resume from)"),
    weights: str = typer.Option("default", "--weights", envvar="ASSAY_WEIGHTS",
                                help="S_final weights: default, uniform, retrieval-heavy, or a .toml file"),
    weight: list[str] | None = typer.Option(None, "--weight",
                                            help="custom weight METRIC=W (repeat for all 8; must sum to 1)"),
    seed: int = typer.Option(0, "--seed", envvar="ASSAY_SEED"),
    concurrency: int | None = typer.Option(None, "--concurrency", envvar="ASSAY_CONCURRENCY", min=1),
    budget: int | None = typer.Option(None, "--budget", envvar="ASSAY_BUDGET", min=0,
                                      help="stop making judge calls after this many tokens"),
    timeout: float = typer.Option(600.0, "--timeout", envvar="ASSAY_TIMEOUT", min=0.001, help="seconds per call"),
    retries: int = typer.Option(4, "--retries", envvar="ASSAY_RETRIES", min=0, help="retries per call"),
    resume: bool = typer.Option(False, "--resume", envvar="ASSAY_RESUME"),
    wait: bool = WAIT,
    dry_run: bool = typer.Option(False, "--dry-run", help="estimate calls, tokens and cost; call no judge"),
    price_in: float = typer.Option(3.0, "--price-in", envvar="ASSAY_PRICE_IN",
                                   help="USD per 1M prompt tokens for --dry-run (paper §6.1: gpt-4.1, $3)"),
    price_out: float = typer.Option(12.0, "--price-out", envvar="ASSAY_PRICE_OUT",
                                    help="USD per 1M completion tokens for --dry-run (paper §6.1: $12)"),
    progress: bool = typer.Option(True, "--progress/--no-progress", envvar="ASSAY_PROGRESS"),
) -> None:
    """Case-aware RAG judge: 8 metrics per turn with severity bands, and S_final."""
    from assay.methods.caseaware import cost_usd

    items = read_items(data)
    chosen: str | dict[str, float] = weights
    if weight:
        chosen = {}
        for entry in weight:
            key, sep, value = entry.partition("=")
            try:
                chosen[key.strip()] = float(value)
            except ValueError:
                raise typer.BadParameter(f"--weight {entry!r}: expected METRIC=NUMBER") from None
            if not sep:
                raise typer.BadParameter(f"--weight {entry!r}: expected METRIC=NUMBER")
    options = {"weights": chosen, "seed": seed}
    if dry_run:
        est = estimate(items, "caseaware", **options)
        cost = cost_usd(est.prompt_tokens, est.completion_tokens, price_in, price_out)
        console.print(f"dry run: {len(items)} turn(s) → {est.calls} judge calls, ≈{est.prompt_tokens} prompt + "
                      f"≈{est.completion_tokens} completion tokens (≈4 characters per token) → ≈${cost:.4f} at "
                      f"${price_in}/1M in, ${price_out}/1M out; cached calls cost nothing")
        return
    _run(items, "caseaware", options, judge=judge, judge_opt=judge_opt, out=out, data=data, resume=resume, wait=wait,
         runner=RunnerConfig(concurrency=concurrency, budget_tokens=budget, timeout_s=timeout, max_retries=retries,
                             progress=progress))


def _baseline_command(method: str, doc: str, takes_domain: bool) -> None:
    def command(
        data: Path = typer.Argument(..., help="items: .jsonl, .csv or .parquet (SPEC §2.6) with a reference"),
        judge: str = JUDGE,
        judge_opt: list[str] | None = JUDGE_OPT,
        out: Path = typer.Option(Path("assay-run.db"), "--out", "-o", envvar="ASSAY_OUT"),
        domain: str = typer.Option("general", "--domain", envvar="ASSAY_DOMAIN",
                                   help="domain pack (LLM baselines): general, legal, medical, financial"),
        seed: int = typer.Option(0, "--seed", envvar="ASSAY_SEED"),
        concurrency: int | None = typer.Option(None, "--concurrency", envvar="ASSAY_CONCURRENCY", min=1),
        budget: int | None = typer.Option(None, "--budget", envvar="ASSAY_BUDGET", min=0),
        timeout: float = typer.Option(600.0, "--timeout", envvar="ASSAY_TIMEOUT", min=0.001),
        retries: int = typer.Option(4, "--retries", envvar="ASSAY_RETRIES", min=0),
        resume: bool = typer.Option(False, "--resume", envvar="ASSAY_RESUME"),
        wait: bool = WAIT,
    dry_run: bool = typer.Option(False, "--dry-run", help="estimate calls and tokens; call no judge"),
        progress: bool = typer.Option(True, "--progress/--no-progress", envvar="ASSAY_PROGRESS"),
    ) -> None:
        items = read_items(data)
        options: dict = {"domain": domain, "seed": seed} if takes_domain else {}
        if dry_run:
            est = estimate(items, method, **options)
            console.print(f"dry run: {len(items)} item(s) → ≈{est.calls} judge calls, ≈{est.prompt_tokens} prompt + "
                          f"≈{est.completion_tokens} completion tokens")
            return
        _run(items, method, options, judge=judge, judge_opt=judge_opt, out=out, data=data, resume=resume, wait=wait,
             runner=RunnerConfig(concurrency=concurrency, budget_tokens=budget, timeout_s=timeout,
                                 max_retries=retries, progress=progress))

    command.__doc__ = doc
    app.command(method)(command)


_baseline_command("pointwise", "Baseline: pointwise 0–4 grade against the reference (DeCE App. C.1–C.3).", True)
_baseline_command("geval", "Baseline: G-Eval-style precision and recall 1–5 (logprob-weighted when available).", True)
_baseline_command("claims", "Baseline: RAGChecker-style claim precision and recall by bidirectional entailment.", True)
_baseline_command("rougeL", "Lexical baseline: ROUGE-L F-measure against the reference (no judge).", False)
_baseline_command("bleu", "Lexical baseline: sentence BLEU against the reference (no judge).", False)
