"""The kit of the command line: the run options, the helpers and the help panels that every
command shares, the built-in ones and a plug-in's alike.

A leaf: importing it builds no command and loads no method, so a method's own command module
imports it at the top (``from assay.cli.kit import JUDGE, runner_config``) without pulling in the
``assay`` command tree. The command line hands it to each method's
``register_commands(app, kit)`` hook as :data:`KIT` (as simonw/llm hands ``cli`` to a plug-in's
``register_commands``); :mod:`assay.cli` builds the tree when it runs.

What is here: the options (:data:`JUDGE`, :data:`STORE_OPT`, ..., :data:`RUN_OPTIONS`), the help
panels (:data:`PANELS`, :data:`PANEL`), the consoles and :func:`print_summary`,
:func:`parse_options`, :func:`runner_config`, the tracing options of ``assay eval``
(:data:`TRACE_OPTIONS`, :func:`load_items`, :func:`plan_finish`, :func:`send_run`), and
``assay eval NAME``'s command maker (:func:`make_command`) with its parts: :func:`method_params`,
:func:`coerce`, :func:`check_results_file`, :func:`dry_run` (from :mod:`assay.cli.dry_run`),
:func:`run_method`.
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
from rich.table import Table

from assay.cli._console import console, err_console
from assay.cli._help import EXPERT, HELP_ALL_SEP, help_all_option
from assay.cli.dry_run import dry_run
from assay.core._files import same_file
from assay.core.errors import BudgetExhausted, ConfigError, JudgeUnreachable
from assay.core.method import Method
from assay.core.protocols import command_line, presentation
from assay.core.registry import method_class
from assay.core.types import Item
from assay.engine import EvalResult, aevaluate
from assay.judge.backends import check_judge
from assay.judge.prices import (
    PRICES_PER_MILLION,  # noqa: F401  (kit.PRICES_PER_MILLION, for plug-ins)
    Price,
    given_price,
)
from assay.judge.runner import RunnerConfig
from assay.store import Store

PANELS = ("Evaluate", "Inspect and export", "Compare and gate", "Rubrics", "Model and tools")
"""The groups of the top-level help; a method's own commands name one of them."""
EVALUATE, INSPECT, COMPARE, RUBRICS, TOOLS = PANELS
PANEL = dict(zip(("evaluate", "inspect", "compare", "rubrics", "tools"), PANELS, strict=True))
"""The help panels by key: ``kit.panels["inspect"]`` in a method's ``register_commands``."""



def parse_options(pairs: list[str] | None, what: str = "--judge-opt") -> dict[str, Any]:
    """``["key=value", ...]`` to a dict (values stay strings; backends convert)."""
    options: dict[str, Any] = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise ConfigError(f"{what} takes key=value, got {pair!r}")
        key, value = pair.split("=", 1)
        options[key.strip()] = value.strip()
    return options


def print_summary(summary: dict[str, Any], metrics: list[str], price: Price | None = None) -> None:
    """The summary table of a run, overall and per system, and the judge calls behind it: their
    tokens and their cost, at ``price`` (``--price-in`` / ``--price-cached`` / ``--price-out``)
    or else at the judge's list price when it has one."""
    table = Table(title=f"run {summary['run_id']} · {summary['status']}")
    table.add_column("system")
    for metric in metrics:
        table.add_column(f"{metric} mean", justify="right")
    table.add_column("n", justify="right")
    table.add_column("unscored", justify="right")

    def add(name: str, block: dict[str, Any]) -> None:
        cells = [f"{block[m]['mean']:.3f}" if block[m]["mean"] is not None else "—" for m in metrics]
        # The per-metric counts go under the table: in a cell they were cut off at normal widths.
        worst = max((block[m]["unscored"] for m in metrics), default=0)
        table.add_row(name, *cells, str(max(block[m]["n"] for m in metrics)), str(worst))

    for system, block in summary["by_system"].items():
        add(system, block)
    add("[bold]all[/bold]", summary["overall"])
    console.print(table)
    overall = summary["overall"]
    unscored = [f"{m} {overall[m]['unscored']}" for m in metrics if overall[m]["unscored"]]
    if unscored:
        console.print("unscored per metric (all systems): " + ", ".join(unscored) + " — reasons in the export's "
                      "unscored_reason column")
    calls = summary["judge_calls"]
    pending = f", {summary['pending']} item(s) pending" if summary.get("pending") else ""
    if not calls["calls"]:  # a judge-free method (or nothing scored yet): no line of zeros
        console.print(f"{summary['items']} item(s){pending}; no judge call behind them")
        return
    cached = calls.get("cached_prompt_tokens", 0)
    line = (f"{summary['items']} item(s){pending}; judge calls behind them: {calls['calls']} "
            f"({calls['prompt_tokens']} prompt + {calls['completion_tokens']} completion tokens"
            + (f", of which {cached} prompt tokens cached" if cached else "") + ")")
    if price is not None:
        cost = price.cost(calls["prompt_tokens"], calls["completion_tokens"], cached)
        line += f"; ${cost:.4f} at the given price ({price.shown()})"
    elif calls.get("list_price_usd") is not None:
        line += f"; ${calls['list_price_usd']:.4f} at {summary['judge']}'s list price ({calls['list_price']})"
    console.print(line, soft_wrap=True)


JUDGE_PANEL, RUN_PANEL, OUTPUT_PANEL, TRACES_PANEL = "Judge", "Run", "Output", "Traces"
"""The help groups of the options every method's command shares (:data:`EXPERT`: hidden from ``-h``)."""

JUDGE = typer.Option("llamacpp/default", "--judge", "-j", envvar="ASSAY_JUDGE", rich_help_panel=JUDGE_PANEL,
                     metavar="PROVIDER/MODEL",
                     help="the judge model: llamacpp/default (embedded), openai/gpt-4o-mini, or any "
                          "OpenAI-compatible server: openai/NAME@http://HOST:PORT/v1")
JUDGE_OPT = typer.Option(None, "--judge-opt", envvar="ASSAY_JUDGE_OPT", rich_help_panel=EXPERT, hidden=True,
                         metavar="KEY=VALUE",
                         help="backend option key=value (repeatable), e.g. schema_mode=json_object")

STORE_OPT = typer.Option(Path("assay-run.db"), "--store", envvar=["ASSAY_STORE", "ASSAY_OUT"],
                         rich_help_panel=RUN_PANEL, metavar="FILE.db",
                         help="the run store (SQLite): results and every judge call, cached")
CONCURRENCY_OPT = typer.Option(None, "--concurrency", envvar="ASSAY_CONCURRENCY", min=1, max=4096,
                               rich_help_panel=JUDGE_PANEL,
                               help="judge calls in flight (default: the backend's limit)")
BUDGET_OPT = typer.Option(None, "--budget", envvar="ASSAY_BUDGET", min=0, rich_help_panel=JUDGE_PANEL,
                          help="stop making judge calls after this many tokens")
TIMEOUT_OPT = typer.Option(600.0, "--timeout", envvar="ASSAY_TIMEOUT", min=0.001,
                           rich_help_panel=EXPERT, hidden=True, help="seconds a judge call may take")
RETRIES_OPT = typer.Option(4, "--retries", envvar="ASSAY_RETRIES", min=0, max=100,
                           rich_help_panel=EXPERT, hidden=True,
                           help="times a failed judge call is tried again")
DRY_RUN_OPT = typer.Option(False, "--dry-run", rich_help_panel=RUN_PANEL,
                           help="estimate the judge calls; call no judge, write nothing")
PROGRESS_OPT = typer.Option(True, "--progress/--no-progress", envvar="ASSAY_PROGRESS",
                            rich_help_panel=RUN_PANEL,
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
    ("output", Path | None, typer.Option(None, "--output", "-o", rich_help_panel=OUTPUT_PANEL,
                                         help="also write the scores and their evidence to this file: .csv, "
                                              ".jsonl, .json or .parquet (as assay export)")),
    ("force", bool, typer.Option(False, "--force", rich_help_panel=OUTPUT_PANEL,
                                 help="replace an existing --output file that assay did not write (never a store "
                                      "or an input)")),
    ("alignment", Path | None, typer.Option(None, "--alignment", envvar="ASSAY_ALIGNMENT",
                                            rich_help_panel=OUTPUT_PANEL, metavar="FILE",
                                            help="alignment file from assay align: also show calibrated "
                                                 "scores beside the raw ones (same judge, method and prompt)")),
    ("concurrency", int | None, CONCURRENCY_OPT),
    ("budget", int | None, BUDGET_OPT),
    ("timeout", float, TIMEOUT_OPT),
    ("retries", int, RETRIES_OPT),
    ("limit", int | None, typer.Option(None, "--limit", min=1, rich_help_panel=RUN_PANEL,
                                       help="evaluate only the first N items of the file")),
    ("fresh", bool, typer.Option(False, "--fresh", envvar="ASSAY_FRESH", rich_help_panel=RUN_PANEL,
                                 help="score the run again (cached judge calls are reused); without it the same "
                                      "command continues its run, or shows it when finished")),
    ("resume", bool, typer.Option(False, "--resume", envvar="ASSAY_RESUME", hidden=True,
                                  help="no longer needed, kept for old scripts: the same command always continues "
                                       "its run")),
    ("wait", bool, typer.Option(False, "--wait", envvar="ASSAY_WAIT", rich_help_panel=RUN_PANEL,
                                help="if another process is writing this run, wait for it instead of failing")),
    ("dry_run", bool, DRY_RUN_OPT),
    ("price_in", float | None, typer.Option(None, "--price-in", rich_help_panel=EXPERT, hidden=True,
                                            envvar="ASSAY_PRICE_IN", min=0.0,
                                            help="USD per 1M prompt tokens, for the cost of --dry-run and of the "
                                                 "run (default: the judge's list price, when known)")),
    ("price_cached", float | None, typer.Option(None, "--price-cached", rich_help_panel=EXPERT, hidden=True,
                                                envvar="ASSAY_PRICE_CACHED", min=0.0,
                                                help="USD per 1M prompt tokens the provider bills as cached (a "
                                                     "repeated prompt start; default: the --price-in, i.e. no "
                                                     "discount)")),
    ("price_out", float | None, typer.Option(None, "--price-out", rich_help_panel=EXPERT, hidden=True,
                                             envvar="ASSAY_PRICE_OUT", min=0.0,
                                             help="USD per 1M completion tokens, for the cost of --dry-run and "
                                                  "of the run")),
    ("progress", bool, PROGRESS_OPT),
    ("executor", str, typer.Option("local", "--executor", rich_help_panel=EXPERT, hidden=True, envvar="ASSAY_EXECUTOR",
                                   help="local, or ray: units go to Ray actors, each with its own judge "
                                        "(pip install 'assay[ray]')")),
    ("workers", int, typer.Option(2, "--workers", rich_help_panel=EXPERT, hidden=True, envvar="ASSAY_WORKERS", min=1,
                                  help="Ray actors (--executor ray)")),
    ("ray_address", str | None, typer.Option(None, "--ray-address", rich_help_panel=EXPERT, hidden=True,
                                             envvar="ASSAY_RAY_ADDRESS",
                                             help="Ray cluster: auto, ray://HOST:PORT, ... (default: start a "
                                                  "local one on 127.0.0.1)")),
    ("guard", str, typer.Option("redact", "--guard", rich_help_panel=EXPERT, hidden=True, envvar="ASSAY_GUARD",
                                help="redact: passages of an answer aimed at the grader (orders, forged turns, "
                                     "delimiters, verdicts) are removed before judging and flagged; flag: only "
                                     "flagged")),
]
RUN_NAMES = {name for name, _, _ in RUN_OPTIONS}
JUDGE_ONLY = ("judge", "judge_opt", "concurrency", "budget", "timeout", "retries", "price_in", "price_cached",
              "price_out", "executor", "workers", "ray_address", "guard")
"""Run options that mean nothing to a method that calls no judge: its command does not list them."""
JUDGE_FREE_DEFAULTS: dict[str, Any] = {"judge": "none/none", "judge_opt": None, "concurrency": None, "budget": None,
                                       "timeout": 600.0, "retries": 4, "price_in": None,
                                       "price_cached": None, "price_out": None,
                                       "executor": "local", "workers": 2, "ray_address": None, "guard": "redact"}


# The tracing options of ``assay eval``: items from traces (Phoenix, an OTLP/JSON file) and the
# verdicts out again (OpenTelemetry events, Phoenix annotations) once the run is saved.
TRACE_OPTIONS: list[tuple[str, Any, Any]] = [
    ("from_phoenix", str | None, typer.Option(
        None, "--from-phoenix", rich_help_panel=TRACES_PANEL, envvar="ASSAY_FROM_PHOENIX", metavar="URL",
        help="read the answers from the traces of this Arize Phoenix server instead of a file (with --project)")),
    ("project", str | None, typer.Option(None, "--project", rich_help_panel=TRACES_PANEL, envvar="ASSAY_PROJECT",
                                         help="the Phoenix project to read (--from-phoenix)")),
    ("since", str | None, typer.Option(None, "--since", rich_help_panel=TRACES_PANEL,
                                       help="only traces started since: an ISO time or a duration back from now "
                                            "(30m, 6h, 2d)")),
    ("from_traces", Path | None, typer.Option(None, "--from-traces", rich_help_panel=TRACES_PANEL, metavar="FILE",
                                              help="read the answers from an OTLP/JSON trace export (OpenInference "
                                                   "spans) instead of a data file")),
    ("phoenix_annotate", bool, typer.Option(False, "--phoenix-annotate", rich_help_panel=TRACES_PANEL,
                                            envvar="ASSAY_PHOENIX_ANNOTATE",
                                            help="write each score and failed verdict back to the Phoenix of "
                                                 "--from-phoenix as span annotations")),
    ("otel", bool, typer.Option(False, "--otel", rich_help_panel=TRACES_PANEL, envvar="ASSAY_OTEL",
                                help="send every verdict as an OpenTelemetry event to OTEL_EXPORTER_OTLP_ENDPOINT")),
    ("gate", list[str] | None, typer.Option(None, "--gate", rich_help_panel=TRACES_PANEL, metavar="METRIC=MIN",
                                            help="label events and annotations pass/fail: the metric passes at or "
                                                 "above MIN (repeatable)")),
]
TRACE_NAMES = {name for name, _, _ in TRACE_OPTIONS}


def load_items(data: Path | None, options: dict[str, Any], method: str, method_options: dict[str, Any],
               limit: int | None) -> tuple[list[Item], list[str], str]:
    """The items of DATA, of ``--from-phoenix`` or of ``--from-traces``, read by the one item path
    (:func:`assay.data.load_items`): (items, notes, source). The options are checked here, where
    their flags are known; traces that give no item, and items the method cannot evaluate, are
    reported and left out."""
    from assay.data import PhoenixTraces, TraceExport
    from assay.data import load_items as load

    sources = [s for s in (data, options["from_phoenix"], options["from_traces"]) if s is not None]
    if not sources:
        raise ConfigError("Missing argument 'data': the answers to score (a file), or --from-phoenix URL, or "
                          "--from-traces FILE")
    if len(sources) > 1:
        raise ConfigError("give one source of answers: a DATA file, --from-phoenix URL or --from-traces FILE")
    if options["phoenix_annotate"] and not options["from_phoenix"]:
        raise ConfigError("--phoenix-annotate writes back to the Phoenix of --from-phoenix; for a saved run use "
                          "assay export RUN.db --phoenix URL")
    if data is not None:
        if options["project"] or options["since"]:
            raise ConfigError("--project and --since go with --from-phoenix")
        loaded = load(data, limit=limit)
        return loaded.items, loaded.notes, loaded.source
    if options["from_phoenix"]:
        if not options["project"]:
            raise ConfigError("--from-phoenix needs --project NAME (the Phoenix project to read)")
        source: Any = PhoenixTraces(options["from_phoenix"], options["project"], since=options["since"])
    else:
        source = TraceExport(options["from_traces"])
    from assay.core.registry import build_method

    loaded = load(source, limit=limit, method=build_method(method, **method_options),
                  on_skip=lambda line: err_console.print(f"skipped {line}", highlight=False, soft_wrap=True))
    return loaded.items, loaded.notes, loaded.source


def say(line: str, ok: bool) -> None:
    """A post-run step's line (:mod:`assay.exchange.finish`): on stdout, or stderr if it failed."""
    (console if ok else err_console).print(line, highlight=False, soft_wrap=True)


def plan_finish(run: dict[str, Any], tracing: dict[str, Any], data: Path | None, method: str,
                options: dict[str, Any]) -> Any:
    """``assay eval``'s post-run steps, checked before anything runs (:func:`assay.exchange.finish.plan`):
    ``-o``/``--force``, ``--alignment``, ``--otel``, ``--phoenix-annotate`` and ``--gate``."""
    from assay.exchange.finish import plan

    built = None
    if run["alignment"] is not None or tracing["gate"]:  # an alignment is the method's, a gate names its metrics
        from assay.core.registry import build_method

        built = build_method(method, **options)
    phoenix = tracing["from_phoenix"] if tracing["phoenix_annotate"] else None
    if phoenix is not None and not phoenix.startswith(("http://", "https://")):
        phoenix = None  # reading --from-phoenix refuses it first, naming that flag
    return plan(output=run["output"], force=run["force"], alignment=run["alignment"], method=built,
                otel=tracing["otel"], phoenix=phoenix, gate=tracing["gate"], inputs=[data, run["store"]])


def check_phoenix_url(phoenix: str | None) -> None:
    """``--phoenix URL``: one line unless it is an http(s) URL (checked before any store is opened)."""
    from assay.exchange.finish import check_phoenix_url as check

    check(phoenix)


def send_run(store: Any, store_path: Path, run_id: str, *, otel: bool, phoenix: str | None,
             gate: list[str] | None) -> bool:
    """Send a saved run's verdicts as OpenTelemetry events and/or Phoenix annotations, one line
    each (:func:`assay.exchange.finish.send`); False when something was not delivered."""
    from assay.exchange.finish import send

    return send(store, store_path, run_id, otel=otel, phoenix=phoenix, gate=gate, say=say)


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
    (None without ``-o``; :func:`assay.exchange.finish.results_format`)."""
    from assay.exchange.finish import results_format

    return results_format(output, inputs=[data, store], force=force)


def user_help(text: str) -> str:
    """A docstring made into help for users: no reST markup, no references to our tracker."""
    text = re.sub(r":(?:mod|func|class|meth|data|attr):`~?([^`]+)`", r"\1", text)
    text = text.replace("``", "")
    text = re.sub(r"\s*\((?:issue \d+(?:, item \d+)?(?:: [^)]*)?)\)", "", text)
    text = re.sub(r"issue \d+(?:, item \d+)?(?::[^;,)]*)?[;,]?\s*", "", text)
    return " ".join(text.split())


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


FLAG_NAMES: dict[str, str] = {
    "max_reasoning_chars": "max-reason-chars", "max_justification_chars": "max-reason-chars",
    "k": "elo-k",
}
"""One flag per concept across methods: a config field whose name differs is given this flag, and
the field's own spelling stays a hidden alias (old scripts keep working)."""

COMMON_HELP: dict[str, str] = {
    "seed": "sampling seed of the judge calls made at a temperature above 0",
    "temperature": "sampling temperature of the judge calls (0: greedy)",
    "max_reasks": "times the judge is asked again when its reply breaks the expected format",
    "top_logprobs": "candidate tokens read at each verdict (soft verdicts)",
    "max_reasoning_chars": "longest reason a verdict may give, in characters",
    "max_reason_chars": "longest reason a verdict may give, in characters",
    "max_justification_chars": "longest reason a verdict may give, in characters",
    "domain": "domain pack of the prompts: general, legal, medical or financial",
    "extraction_temperature": "sampling temperature when criteria and elements are extracted",
    "verification_temperature": "sampling temperature of the verdicts (0: greedy)",
    "max_claims": "most claims taken from one text",
    "max_claim_chars": "longest claim, in characters",
    "max_analysis_chars": "longest written comparison before a verdict, in characters",
    "initial": "every system's starting Elo rating",
}
"""Help of config fields that carry no description of their own (shared names, no method named)."""

SHORT_HELP: dict[str, str] = {
    "domain": "domain pack of the prompts: general, legal, medical or financial",
    "beta": "how much more recall counts than precision in the F-beta score (2: twice)",
    "verdicts": "hard: the judge's 0/1 label; soft: its probability, from logprobs; direct: each verdict "
                "asked alone, its label probability read in one forward pass (embedded judge, servers with "
                "logprobs)",
    "max_criteria": "most criteria taken from one gold answer",
    "reasoning": "hard and soft verdicts: each writes a short reason before its score (--no-reasoning: "
                 "faster, the cited sentences only)",
    "evidence": "each verdict cites the passage's sentences it rests on, with a short reason",
    "samples": "ask the judge this many times",
    "hierarchy": "analysis verdicts: enforce: the answers' classes decide when they differ; advise: the "
                 "decision alone",
    "stringency": "how strictly the judge counts a point of the answer as relevant",
    "without_document": "an item with no document: refuse it, or judge against the gold answer and knowledge",
    "long_documents": "a document too long for the judge: keep its most relevant paragraphs, or refuse it",
}
"""Help of the main options in ``-h``, in a user's words; ``--help-all`` shows the full description."""

SHORT_HELP_OF: dict[tuple[str, str], str] = {
    ("dece", "verdicts"): "auto (the default): direct on a judge that gives label probabilities, else hard; hard: "
                          "the judge writes each 0/1 verdict; soft: its probability, from logprobs; direct: each "
                          "verdict asked alone, its label probability read in one forward pass",
    ("dice", "verdicts"): "auto (the default): direct (the decision read in one forward pass per order) on a "
                          "judge with label probabilities, else analysis (written, then decided)",
    ("caseaware", "verdicts"): "hard: the judge writes each metric's band and score; soft: the score expected under "
                               "the band's probabilities, from logprobs; direct: each metric's band read in one "
                               "forward pass (label probabilities)",
    ("pointwise", "verdicts"): "hard: the judge's written 0-4 grade; soft: the grade expected under its "
                               "probabilities, from logprobs; direct: the grade's probabilities read in one forward "
                               "pass",
    ("dice", "samples"): "decisions sampled per order when the probabilities come from samples (their shares)",
    ("lemaj", "samples"): "jurors: >1 samples the judge that many times and aggregates each data point",
}
"""``-h`` help of an option whose meaning differs by method: (method, field) first, then SHORT_HELP."""


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _method_flag(cls: type[Method], name: str) -> str:
    fields = cls.config_model.model_fields if cls.config_model is not None else {}
    new = FLAG_NAMES.get(name)
    if new is None or any(_flag(other) == "--" + new for other in fields if other != name):
        return _flag(name)
    return "--" + new


def check_method_options(cls: type[Method], options: dict[str, Any]) -> None:
    """The method's options as its configuration checks them, before any file is read: a bad value
    is one line naming its flag (``--verdicts: Input should be ...``), not the configuration's field."""
    if cls.config_model is None:
        return
    from pydantic import ValidationError

    fields = cls.config_model.model_fields
    try:
        cls.config_model(**{k: v for k, v in options.items() if k in fields})
    except ValidationError as exc:
        def where(loc: tuple[Any, ...]) -> str:  # the flag, then where inside its value (weights.hallucination)
            return ".".join([_method_flag(cls, str(loc[0])), *map(str, loc[1:])])

        raise ConfigError("; ".join(f"{where(e['loc'])}: {e['msg']}" if e["loc"] else e["msg"]
                                    for e in exc.errors())) from None


def _panel(cls: type[Method], name: str) -> dict[str, Any]:
    """Listed in ``-h`` (the method's main options) or an expert option (``--help-all``)."""
    main = command_line(cls).cli_main
    if main is None or name in main:
        return {}
    return {"rich_help_panel": EXPERT, "hidden": True}


def method_params(cls: type[Method]) -> list[inspect.Parameter]:
    params = []
    fields = cls.config_model.model_fields if cls.config_model is not None else {}
    for name, field in fields.items():
        if name in RUN_NAMES:
            raise TypeError(f"{cls.__name__}: option {name!r} clashes with a run option")
        kind, note = _cli_type(field.annotation)
        default = field.get_default(call_default_factory=True)
        flag = _method_flag(cls, name)
        described = user_help(field.description or COMMON_HELP.get(name, ""))
        # a method's own help, or that of the method it extends (the tournament is DICE's), else the common one
        short = next((SHORT_HELP_OF[(str(getattr(base, "name", "")), name)] for base in cls.__mro__
                      if (str(getattr(base, "name", "")), name) in SHORT_HELP_OF), SHORT_HELP.get(name))
        if short is not None and described != short:
            described = short + HELP_ALL_SEP + described
        if kind is bool:
            option = typer.Option(default, f"{flag}/--no-{flag[2:]}", envvar=f"ASSAY_{name.upper()}",
                                  help=described, **_panel(cls, name))
        else:
            shown = default if isinstance(default, int | float | str) or default is None else json.dumps(default)
            metavar = note.removeprefix("one of: ").replace(", ", "|") if note else None
            if metavar is not None and len(metavar) > 24:
                metavar, described = None, user_help(" ".join(x for x in (described, note) if x))
            option = typer.Option(shown, flag, envvar=f"ASSAY_{name.upper()}", help=described, metavar=metavar,
                                  **_panel(cls, name))
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=kind))
        if flag != _flag(name) and kind is not bool:  # the field's own spelling, kept as a hidden alias
            alias = typer.Option(None, _flag(name), hidden=True, help=f"the old name of {flag}")
            params.append(inspect.Parameter(ALIAS_PREFIX + name, inspect.Parameter.KEYWORD_ONLY, default=alias,
                                            annotation=kind | None))
    for extra in command_line(cls).cli_options():
        kinds = {"str": str | None, "path": Path | None, "float": float | None, "int": int | None, "bool": bool,
                 "list": list[str] | None}
        flag = _flag(extra.name)
        envvar = f"ASSAY_{extra.name.upper()}" if extra.env else None
        option = typer.Option(extra.default if extra.type != "bool" else bool(extra.default),
                              f"{flag}/--no-{extra.name.replace('_', '-')}" if extra.type == "bool" else flag,
                              envvar=envvar, help=extra.help, **_panel(cls, extra.name))
        params.append(inspect.Parameter(extra.name, inspect.Parameter.KEYWORD_ONLY, default=option,
                                        annotation=kinds[extra.type]))
    params.append(inspect.Parameter("help_all", inspect.Parameter.KEYWORD_ONLY, default=help_all_option(),
                                    annotation=bool))
    return params


ALIAS_PREFIX = "alias__"


def take_aliases(values: dict[str, Any]) -> dict[str, Any]:
    """The values given under a field's old flag spelling, moved to the field."""
    out = {k: v for k, v in values.items() if not k.startswith(ALIAS_PREFIX) and k != "help_all"}
    for key, value in values.items():
        if key.startswith(ALIAS_PREFIX) and value is not None:
            out[key.removeprefix(ALIAS_PREFIX)] = value
    return out


def coerce(cls: type[Method], values: dict[str, Any]) -> dict[str, Any]:
    """Text given for a container field (e.g. a dict) is read as JSON; text for a list of strings
    that is not JSON as comma-separated values (``--tiers high,medium,low``); other values as given."""
    fields = cls.config_model.model_fields if cls.config_model is not None else {}
    out = {}
    for name, value in values.items():
        if name in fields and isinstance(value, str) and value.strip()[:1] in ("{", "["):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{_flag(name)}: not valid JSON: {exc.msg}") from None
        elif name in fields and isinstance(value, str) and fields[name].annotation == list[str]:
            value = [part.strip() for part in value.split(",") if part.strip()]
        out[name] = value
    return out


def make_command(cls: type[Method]) -> Any:
    """The ``assay eval NAME`` command of a method class."""
    extra_names = {o.name for o in command_line(cls).cli_options()}

    def command(**kwargs: Any) -> None:
        data: Path | None = kwargs.pop("data")
        tracing = {name: kwargs.pop(name) for name in list(kwargs) if name in TRACE_NAMES}
        run = {name: kwargs.pop(name) for name in list(kwargs) if name in RUN_NAMES}
        run = {**JUDGE_FREE_DEFAULTS, **run}  # a method without a judge has no judge options
        take_old_store_flag(run)
        price = given_price(run["price_in"], run["price_cached"], run["price_out"])  # checked before any work
        if data is not None and same_file(run["store"], data):  # the store would be written over the answers
            raise ConfigError(f"--store {run['store']}: that is the data file this command reads; choose another "
                              "store path")
        method_values = {k: v for k, v in take_aliases(kwargs).items() if v is not None or k not in extra_names}
        options = command_line(cls).options_from_cli(coerce(cls, method_values))
        check_method_options(cls, options)
        # the post-run steps, checked before any judge call: -o, --alignment (method, options and
        # prompts), --gate, --otel, --phoenix-annotate
        finish = plan_finish(run, tracing, data, cls.name, options)
        if cls.needs_judge:  # the judge's name and --judge-opt, as the run checks them, before reading data
            check_judge(run["judge"], parse_options(run["judge_opt"]))
        items, notes, source = load_items(data, tracing, cls.name, options, run["limit"])
        if notes:
            err_console.print(f"reading {source}: " + "; ".join(notes), highlight=False, soft_wrap=True)
        if run["dry_run"]:
            dry_run(items, cls.name, options, run["price_in"], run["price_out"], run["judge"],
                    price_cached=run["price_cached"], judge_options=parse_options(run["judge_opt"]),
                    data_source=source)
            return
        runner = RunnerConfig(concurrency=run["concurrency"], budget_tokens=run["budget"], timeout_s=run["timeout"],
                              max_retries=run["retries"], progress=run["progress"])
        if run["executor"] not in ("local", "ray"):
            raise typer.BadParameter(f"--executor {run['executor']!r}: local or ray")
        if run["guard"] not in ("redact", "flag"):
            raise typer.BadParameter(f"--guard {run['guard']!r}: redact or flag")
        run_id = run_method(items, cls.name, options, judge=run["judge"], judge_opt=run["judge_opt"],
                            out=run["store"], data=data if data is not None else source, fresh=run["fresh"],
                            wait=run["wait"], runner=runner,
                            executor={k: run[k] for k in ("executor", "workers", "ray_address", "guard")},
                            notes=notes, finish=finish,
                            price=price)
        if finish.delivers:
            finish.send(Store(run["store"], create=False), run_id, say)

    data_help = ("the answers to score: .jsonl, .json (an array), .csv or .parquet; field names of RAGAS and "
                 "DeepEval are read too")
    data_param = inspect.Parameter("data", inspect.Parameter.KEYWORD_ONLY, annotation=Path | None,
                                   default=typer.Argument(None, metavar="DATA", help=data_help + " (or --from-phoenix, "
                                                                                 "--from-traces)"))
    run_params = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation)
                  for name, annotation, option in RUN_OPTIONS
                  if cls.needs_judge or name not in JUDGE_ONLY]
    trace_params = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation)
                    for name, annotation, option in TRACE_OPTIONS]
    params = [data_param, *method_params(cls), *run_params, *trace_params]
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    command.__doc__ = (cls.__doc__ or cls.name).strip().splitlines()[0]
    command.__name__ = f"eval_{cls.name}"
    return command


def run_method(items: list, method: str, options: dict, *, judge: str, judge_opt: list[str] | None, out: Path,
               data: Path | str, fresh: bool, wait: bool, runner: RunnerConfig,
               executor: dict[str, Any] | None = None, notes: list[str] | None = None, finish: Any = None,
               price: Price | None = None) -> str:
    """Run, print the summary, and say where things are; the run's id. Everything is validated
    (items, options, judge, the -o file: ``finish``, from :func:`plan_finish`) before the store is
    created or touched; the results file is written here (:meth:`assay.exchange.finish.Finish.export`,
    as ``assay.evaluate(..., export=...)`` writes it) and the caller sends the verdicts out
    (:meth:`~assay.exchange.finish.Finish.send`) once this has said where the run is. A budget stop
    exits 3, an unreachable judge 4 (both through :func:`assay.cli.main`). The same command
    again continues the run, or shows it with no judge call when it is finished."""
    try:
        result = asyncio.run(aevaluate(items, method, judge, store=out, runner=runner, fresh=fresh,
                                       judge_options=parse_options(judge_opt), data_source=str(data),
                                       wait_s=float("inf") if wait else None, input_notes=notes,
                                       **(executor or {}), **options))
    except (BudgetExhausted, JudgeUnreachable) as exc:
        if exc.run_id is not None:
            partial = EvalResult(Store(out, create=False), exc.run_id)
            print_summary(partial.summary(), partial.metrics, price)
        if isinstance(exc, BudgetExhausted):
            console.print(f"[yellow]stopped: {exc}. Finished items are saved; the same command with a larger "
                          "--budget continues the run.[/yellow]")
        raise
    for note in result.notes:
        err_console.print(f"note: {note}", highlight=False, soft_wrap=True)
    print_summary(result.summary(), result.metrics, price)
    for line in presentation(method_class(result.method)).summary_lines(result.records()):
        console.print(line, soft_wrap=True, highlight=False)
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
    if finish is not None and finish.alignment is not None:
        from assay.analysis.align import show_aligned

        show_aligned(finish.alignment, result.store, result.run_id, console)
    if finish is not None:
        finish.export(result.store, result.run_id, say)
    console.print(f"saved to {out} (run {result.run_id}). Next: assay export {out} -o scores.csv · "
                  f"assay report {out} -o report.html", soft_wrap=True)
    return result.run_id


class Kit:
    """What a method's ``register_commands(app, kit)`` receives: every name of this module as an
    attribute (``kit.JUDGE``, ``kit.make_command``, ``kit.console``, ...) and the help panels as
    ``kit.panels["inspect"]``. ``kit["inspect"]`` is the same panel, for a plug-in written when
    the hook's second argument was the panels themselves."""

    panels = PANEL

    def __getattr__(self, name: str) -> Any:
        try:
            return globals()[name]
        except KeyError:
            raise AttributeError(f"the command-line kit has no {name!r}") from None

    def __getitem__(self, key: str) -> str:
        return PANEL[key]


KIT = Kit()
"""The kit handed to every method's ``register_commands``."""
