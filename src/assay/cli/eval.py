"""`assay eval METHOD DATA`: one command per registered method, generated from its config model.

Every method gets the same run options (judge, store, concurrency, budget, resume, dry run, ...)
and one option per field of its config model: ``--field-name`` with the field's docstring as
help, an ``ASSAY_FIELD_NAME`` variable and the TOML key ``field_name`` in ``[eval.METHOD]``.
Nothing here names a method; a plug-in's method gets its command the same way.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import types
import typing
from pathlib import Path
from typing import Any

import typer

from assay._eval import EvalResult, aevaluate, estimate
from assay.cli._common import console, err_console, parse_options, print_summary
from assay.cli._traces import TRACE_NAMES, TRACE_OPTIONS, after_run, load_items
from assay.errors import BudgetExhausted, ConfigError, JudgeUnreachable
from assay.methods import Method
from assay.registry import methods
from assay.runner import RunnerConfig
from assay.store import Store

app = typer.Typer(help="Evaluate a data file with a method.", no_args_is_help=True)

JUDGE = typer.Option("llamacpp/default", "--judge", "-j", envvar="ASSAY_JUDGE",
                     help="provider/model, e.g. llamacpp/default, openai/gpt-4o-mini, "
                          "openai/qwen@http://127.0.0.1:8080/v1")
JUDGE_OPT = typer.Option(None, "--judge-opt", envvar="ASSAY_JUDGE_OPT",
                         help="backend option key=value (repeatable), e.g. schema_mode=json_object")

STORE_OPT = typer.Option(Path("assay-run.db"), "--store", envvar=["ASSAY_STORE", "ASSAY_OUT"],
                         help="the SQLite run store: every judge call is cached there and the run can be resumed")
CONCURRENCY_OPT = typer.Option(None, "--concurrency", envvar="ASSAY_CONCURRENCY", min=1,
                               help="judge calls in flight (default: the backend's limit)")
BUDGET_OPT = typer.Option(None, "--budget", envvar="ASSAY_BUDGET", min=0,
                          help="stop making judge calls after this many tokens")
TIMEOUT_OPT = typer.Option(600.0, "--timeout", envvar="ASSAY_TIMEOUT", min=0.001, help="seconds per judge call")
RETRIES_OPT = typer.Option(4, "--retries", envvar="ASSAY_RETRIES", min=0, help="retries per judge call")
DRY_RUN_OPT = typer.Option(False, "--dry-run", help="estimate the judge calls; call no judge, write nothing")
PROGRESS_OPT = typer.Option(True, "--progress/--no-progress", envvar="ASSAY_PROGRESS",
                            help="a progress bar on the terminal while judge calls run")


def runner_config(concurrency: int | None, budget: int | None, timeout: float, retries: int,
                  progress: bool = False) -> RunnerConfig:
    """The runner policy of the engine options, the same in every command."""
    return RunnerConfig(concurrency=concurrency, budget_tokens=budget, timeout_s=timeout, max_retries=retries,
                        progress=progress)


# The run options every method's command has: (name, annotation, typer.Option).
RUN_OPTIONS: list[tuple[str, Any, Any]] = [
    ("judge", str, JUDGE),
    ("judge_opt", list[str] | None, JUDGE_OPT),
    ("store", Path, STORE_OPT),
    ("out", Path | None, typer.Option(None, "--out", hidden=True,
                                      help="the old name of --store (goes in the next release)")),
    ("output", Path | None, typer.Option(None, "--output", "-o",
                                         help="also write every score with its evidence to this file when the run "
                                              "ends: .csv, .jsonl, .json or .parquet (as `assay export`); the run "
                                              "itself is kept in --store")),
    ("force", bool, typer.Option(False, "--force", help="replace an existing --output file that assay did not "
                                                       "write (never a store or an input)")),
    ("alignment", Path | None, typer.Option(None, "--alignment", envvar="ASSAY_ALIGNMENT",
                                            help="alignment file from assay align: also show the calibrated "
                                                 "probabilities, the decisions at its tie threshold and the aligned "
                                                 "score beside the raw ones (refused for another judge, method or "
                                                 "prompt)")),
    ("concurrency", int | None, CONCURRENCY_OPT),
    ("budget", int | None, BUDGET_OPT),
    ("timeout", float, TIMEOUT_OPT),
    ("retries", int, RETRIES_OPT),
    ("limit", int | None, typer.Option(None, "--limit", min=1, help="evaluate only the first N items of the file")),
    ("fresh", bool, typer.Option(False, "--fresh", envvar="ASSAY_FRESH",
                                 help="drop this run's earlier results in --store and score it again (judge calls "
                                      "already cached there are reused). Without it the same command continues "
                                      "its run, or shows it when finished")),
    ("resume", bool, typer.Option(False, "--resume", envvar="ASSAY_RESUME",
                                  help="no longer needed, kept for old scripts: the same command always continues "
                                       "its run")),
    ("wait", bool, typer.Option(False, "--wait", envvar="ASSAY_WAIT",
                                help="if another process is writing this run, wait for it instead of failing")),
    ("dry_run", bool, DRY_RUN_OPT),
    ("price_in", float | None, typer.Option(None, "--price-in", envvar="ASSAY_PRICE_IN", min=0.0,
                                            help="USD per 1M prompt tokens, for --dry-run's cost (default: the "
                                                 "judge's list price, when known)")),
    ("price_out", float | None, typer.Option(None, "--price-out", envvar="ASSAY_PRICE_OUT", min=0.0,
                                             help="USD per 1M completion tokens, for --dry-run's cost")),
    ("progress", bool, PROGRESS_OPT),
    ("executor", str, typer.Option("local", "--executor", envvar="ASSAY_EXECUTOR",
                                   help="local, or ray: units go to Ray actors, each with its own judge "
                                        "(pip install 'assay[ray]')")),
    ("workers", int, typer.Option(2, "--workers", envvar="ASSAY_WORKERS", min=1,
                                  help="Ray actors (--executor ray)")),
    ("ray_address", str | None, typer.Option(None, "--ray-address", envvar="ASSAY_RAY_ADDRESS",
                                             help="Ray cluster: auto, ray://HOST:PORT, ... (default: start a "
                                                  "local one on 127.0.0.1)")),
    ("guard", str, typer.Option("redact", "--guard", envvar="ASSAY_GUARD",
                                help="redact: passages of an answer aimed at the grader (orders, forged turns, "
                                     "delimiters, verdicts) are removed before judging and flagged; flag: only "
                                     "flagged")),
]
_RUN_NAMES = {name for name, _, _ in RUN_OPTIONS}
JUDGE_ONLY = ("judge", "judge_opt", "concurrency", "budget", "timeout", "retries", "price_in", "price_out",
              "executor", "workers", "ray_address", "guard")
"""Run options that mean nothing to a method that calls no judge: its command does not list them."""
JUDGE_FREE_DEFAULTS: dict[str, Any] = {"judge": "none/none", "judge_opt": None, "concurrency": None, "budget": None,
                                       "timeout": 600.0, "retries": 4, "price_in": None, "price_out": None,
                                       "executor": "local", "workers": 2, "ray_address": None, "guard": "redact"}


def take_old_store_flag(run: dict[str, Any]) -> None:
    """``--out`` named the store before ``--store`` did: still read, with a notice. (``-o`` is
    ``--output`` now, the results file, as in every command.)"""
    old = run.pop("out", None)
    if old is not None:
        err_console.print("note: --out is now --store (the run store); the old name goes in the next release",
                          highlight=False, soft_wrap=True)
        run["store"] = old
    run.pop("resume", None)  # accepted for old scripts, changes nothing (its help says so)


def check_results_file(output: Path | None, *, data: Path | None, store: Path, force: bool) -> str | None:
    """The export format of ``eval -o FILE`` from its extension, checked before anything runs
    (None without ``-o``). A store's extension is refused with the flag that names a store."""
    if output is None:
        return None
    from assay._files import check_output, is_sqlite
    from assay.export import format_for

    if output.suffix.lower() in (".db", ".sqlite", ".sqlite3") or is_sqlite(output):
        raise ConfigError(f"-o/--output {output}: -o is the results file written (.csv, .jsonl, .json or "
                          f".parquet); the run store is --store {output}")
    fmt = format_for(output, None)
    check_output(output, inputs=[p for p in (data, store) if p is not None], force=force)
    return fmt


def user_help(text: str) -> str:
    """A docstring made into help for users: no reST markup, no references to our tracker."""
    text = re.sub(r":(?:mod|func|class|meth|data|attr):`~?([^`]+)`", r"\1", text)
    text = text.replace("``", "")
    text = re.sub(r"\s*\((?:issue \d+(?:, item \d+)?(?:: [^)]*)?)\)", "", text)
    text = re.sub(r"issue \d+(?:, item \d+)?(?::[^;,)]*)?[;,]?\s*", "", text)
    return " ".join(text.split())


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _cli_type(annotation: Any) -> tuple[Any, str]:
    """The command-line type of a config field, and a note for help: plain scalars keep their
    type; Literal choices, unions and containers are read as text (pydantic then validates it)."""
    origin = typing.get_origin(annotation)
    if annotation in (int, float, str, bool):
        return annotation, ""
    if origin is typing.Literal:
        return str, "one of: " + ", ".join(map(str, typing.get_args(annotation)))
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1 and args[0] in (int, float, str):
            return args[0] | None, ""
    return str, ""


def _method_params(cls: type[Method]) -> list[inspect.Parameter]:
    params = []
    fields = cls.config_model.model_fields if cls.config_model is not None else {}
    for name, field in fields.items():
        if name in _RUN_NAMES:
            raise TypeError(f"{cls.__name__}: option {name!r} clashes with a run option")
        kind, note = _cli_type(field.annotation)
        default = field.get_default(call_default_factory=True)
        if kind is bool:
            option = typer.Option(default, f"{_flag(name)}/--no-{name.replace('_', '-')}",
                                  envvar=f"ASSAY_{name.upper()}", help=user_help(field.description or ""))
        else:
            shown = default if isinstance(default, int | float | str) or default is None else json.dumps(default)
            help_text = user_help(" ".join(x for x in (field.description or "", note) if x))
            option = typer.Option(shown, _flag(name), envvar=f"ASSAY_{name.upper()}", help=help_text)
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=kind))
    for extra in cls.cli_options():
        kinds = {"str": str | None, "path": Path | None, "float": float | None, "int": int | None, "bool": bool,
                 "list": list[str] | None}
        flag = _flag(extra.name)
        envvar = f"ASSAY_{extra.name.upper()}" if extra.env else None
        option = typer.Option(extra.default if extra.type != "bool" else bool(extra.default),
                              f"{flag}/--no-{extra.name.replace('_', '-')}" if extra.type == "bool" else flag,
                              envvar=envvar, help=extra.help)
        params.append(inspect.Parameter(extra.name, inspect.Parameter.KEYWORD_ONLY, default=option,
                                        annotation=kinds[extra.type]))
    return params


def _coerce(cls: type[Method], values: dict[str, Any]) -> dict[str, Any]:
    """Text given for a container field (e.g. a dict) is read as JSON; other values as given."""
    fields = cls.config_model.model_fields if cls.config_model is not None else {}
    out = {}
    for name, value in values.items():
        if name in fields and isinstance(value, str) and value.strip()[:1] in ("{", "["):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{_flag(name)}: not valid JSON: {exc.msg}") from None
        out[name] = value
    return out


def make_command(cls: type[Method]) -> Any:
    """The ``assay eval NAME`` command of a method class."""
    extra_names = {o.name for o in cls.cli_options()}

    def command(**kwargs: Any) -> None:
        data: Path | None = kwargs.pop("data")
        tracing = {name: kwargs.pop(name) for name in list(kwargs) if name in TRACE_NAMES}
        run = {name: kwargs.pop(name) for name in list(kwargs) if name in _RUN_NAMES}
        run = {**JUDGE_FREE_DEFAULTS, **run}  # a method without a judge has no judge options
        take_old_store_flag(run)
        results_format = check_results_file(run["output"], data=data, store=run["store"], force=run["force"])
        method_values = {k: v for k, v in kwargs.items() if v is not None or k not in extra_names}
        options = cls.options_from_cli(_coerce(cls, method_values))
        alignment = None
        if run["alignment"] is not None:  # checked before any judge call: method, options and prompts
            from assay.align import check_method, read_alignment
            from assay.registry import build_method

            alignment = read_alignment(run["alignment"])
            alignment["_source"] = str(run["alignment"])
            check_method(alignment, cls.name, build_method(cls.name, **options), str(run["alignment"]))
        items, notes, source = load_items(data, tracing, cls.name, options, run["limit"])
        if notes:
            err_console.print(f"reading {source}: " + "; ".join(notes), highlight=False, soft_wrap=True)
        if run["dry_run"]:
            _dry_run(items, cls.name, options, run["price_in"], run["price_out"], run["judge"])
            return
        runner = RunnerConfig(concurrency=run["concurrency"], budget_tokens=run["budget"], timeout_s=run["timeout"],
                              max_retries=run["retries"], progress=run["progress"])
        if run["executor"] not in ("local", "ray"):
            raise typer.BadParameter(f"--executor {run['executor']!r}: local or ray")
        if run["guard"] not in ("redact", "flag"):
            raise typer.BadParameter(f"--guard {run['guard']!r}: redact or flag")
        run_id = _run(items, cls.name, options, judge=run["judge"], judge_opt=run["judge_opt"], out=run["store"],
                      data=data if data is not None else source, fresh=run["fresh"], wait=run["wait"],
                      runner=runner, executor={k: run[k] for k in ("executor", "workers", "ray_address", "guard")},
                      notes=notes, output=run["output"], output_format=results_format, alignment=alignment)
        after_run(run["store"], run_id, tracing)

    data_help = ("the answers to score: .jsonl, .json (an array), .csv or .parquet; field names of RAGAS and "
                 "DeepEval are read too")
    data_param = inspect.Parameter("data", inspect.Parameter.KEYWORD_ONLY, annotation=Path | None,
                                   default=typer.Argument(None, help=data_help + " (or --from-phoenix, "
                                                                                 "--from-traces)"))
    run_params = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation)
                  for name, annotation, option in RUN_OPTIONS
                  if cls.needs_judge or name not in JUDGE_ONLY]
    trace_params = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation)
                    for name, annotation, option in TRACE_OPTIONS]
    params = [data_param, *_method_params(cls), *run_params, *trace_params]
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    command.__doc__ = (cls.__doc__ or cls.name).strip().splitlines()[0]
    command.__name__ = f"eval_{cls.name}"
    return command


PRICES_PER_MILLION: dict[str, tuple[float, float]] = {
    # USD per 1M prompt / completion tokens, the providers' list prices (checked 2025); anything else
    # is priced only from --price-in / --price-out
    "openai/gpt-4o-mini": (0.15, 0.60), "openai/gpt-4o": (2.50, 10.00),
    "openai/gpt-4.1-mini": (0.40, 1.60), "openai/gpt-4.1": (2.00, 8.00), "openai/gpt-4.1-nano": (0.10, 0.40),
}
EMBEDDED_SPEED = (65.0, 12.0)
"""Prompt and generated tokens per second of the embedded judge (Qwen2.5-Coder-1.5B Q4_K_M) measured
on 2 CPU cores: reading ~65 tok/s, generating ~9–21 tok/s."""


def _dry_run(items: list, method: str, options: dict[str, Any], price_in: float | None, price_out: float | None,
             judge: str = "") -> None:
    est = estimate(items, method, **options)
    line = (f"dry run: {len(items)} item(s) → ≈{est.calls} judge calls, ≈{est.prompt_tokens} prompt + "
            f"≈{est.completion_tokens} completion tokens (≈4 characters per token)")
    known = PRICES_PER_MILLION.get(judge.split("@", 1)[0]) if "@" not in judge else None
    if est.calls == 0:
        console.print(f"dry run: {len(items)} item(s) → no judge call (this method needs no judge)", soft_wrap=True)
        return
    if price_in is not None or price_out is not None:
        cost = (est.prompt_tokens * (price_in or 0.0) + est.completion_tokens * (price_out or 0.0)) / 1_000_000
        line += f" → ≈${cost:.4f} at ${price_in or 0}/1M in, ${price_out or 0}/1M out"
    elif known is not None:
        cost = (est.prompt_tokens * known[0] + est.completion_tokens * known[1]) / 1_000_000
        line += f" → ≈${cost:.4f} at {judge}'s list price (${known[0]}/1M in, ${known[1]}/1M out)"
    elif judge.startswith("llamacpp/"):
        seconds = est.prompt_tokens / EMBEDDED_SPEED[0] + est.completion_tokens / EMBEDDED_SPEED[1]
        line += (f" → no cost (a local judge); ≈{seconds / 60:.1f} min on 2 CPU cores at ~{EMBEDDED_SPEED[0]:.0f} "
                 f"prompt and ~{EMBEDDED_SPEED[1]:.0f} generated tokens/s (less where prompts share a prefix)")
    else:
        line += " → no price known for this judge: give --price-in and --price-out (USD per 1M tokens)"
    console.print(line + "; cached calls cost nothing", soft_wrap=True)


def _run(items: list, method: str, options: dict, *, judge: str, judge_opt: list[str] | None, out: Path,
         data: Path | str, fresh: bool, wait: bool, runner: RunnerConfig, executor: dict[str, Any] | None = None,
         notes: list[str] | None = None, output: Path | None = None, output_format: str | None = None,
         alignment: dict[str, Any] | None = None) -> str:
    """Run, print the summary, and say where things are. Everything is validated (items,
    options, judge, the -o file) before the store is created or touched; a budget stop exits 3,
    an unreachable judge 4 (both through :func:`assay.cli.main`). The same command again
    continues the run, or shows it with no judge call when it is finished."""
    try:
        result = asyncio.run(aevaluate(items, method, judge, store=out, runner=runner, fresh=fresh,
                                       judge_options=parse_options(judge_opt), data_source=str(data),
                                       wait_s=float("inf") if wait else None, input_notes=notes,
                                       **(executor or {}), **options))
    except (BudgetExhausted, JudgeUnreachable) as exc:
        if exc.run_id is not None:
            partial = EvalResult(Store(out, create=False), exc.run_id)
            print_summary(partial.summary(), partial.metrics)
        if isinstance(exc, BudgetExhausted):
            console.print(f"[yellow]stopped: {exc}. Finished items are saved; the same command with a larger "
                          "--budget continues the run.[/yellow]")
        raise
    for note in result.notes:
        err_console.print(f"note: {note}", highlight=False, soft_wrap=True)
    print_summary(result.summary(), result.metrics)
    stats = result.client_stats
    assert stats is not None
    if result.was_finished:
        console.print(f"run {result.run_id} in {out} was already finished: these are its stored results; 0 judge "
                      "call(s) made (--fresh scores it again)", soft_wrap=True)
    else:
        if result.resumed_with is not None:
            console.print(f"resumed run {result.run_id}: {result.resumed_with} item(s) were already done")
        console.print(f"this invocation: {stats.calls} judge call(s) made, {stats.cache_hits} from cache, "
                      f"{stats.retries} retries, {stats.failures} failed, {result.wall_s:.1f} s")
    if alignment is not None:
        from assay.align import show_aligned

        show_aligned(alignment, result.store, result.run_id, console)
    if output is not None and output_format is not None:
        from assay.export import export_run

        count = export_run(result.store, result.run_id, output, output_format, alignment=alignment)
        console.print(f"wrote {count} row(s) to {output}")
    console.print(f"saved to {out} (run {result.run_id}). Next: assay export {out} -o scores.csv · "
                  f"assay report {out} -o report.html", soft_wrap=True)
    return result.run_id


for _cls in methods().values():
    if _cls.eval_command:
        app.command(_cls.name)(make_command(_cls))
