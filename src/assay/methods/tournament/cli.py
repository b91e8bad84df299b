"""`assay tournament DATA`: rank many systems with DICE matches (Swiss or round-robin), Elo and
Bradley–Terry, printed and written as JSON (``--out``). The run store is ``--store``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from assay.analysis.stats import correlation
from assay.cli.kit import (
    RUN_OPTIONS,
    check_method_options,
    coerce,
    console,
    dry_run,
    method_params,
    parse_options,
    take_aliases,
)
from assay.core._files import check_output, write_json
from assay.core.errors import ConfigError, InputError
from assay.core.protocols import command_line
from assay.core.registry import build_method, method_class
from assay.core.types import Item
from assay.data import load_items
from assay.engine import aevaluate, as_result, check_items
from assay.judge.runner import RunnerConfig


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def tournament_ranking(store: Any, run_id: str, method: Any, items: list) -> dict[str, Any]:
    units = store.units(run_id)
    results = {r.idx: r for r in store.results(run_id)}
    history = [(unit, as_result(results.get(i))) for i, unit in enumerate(units)]
    return method.ranking(items, history)


def parse_baselines(spec: str) -> list[tuple[str, Path]]:
    """``high=a.jsonl,medium=b.jsonl,low=c.jsonl`` → [(tier, path)], best first as given."""
    tiers: list[tuple[str, Path]] = []
    for part in spec.split(","):
        name, eq, path = part.strip().partition("=")
        if not eq or not name.strip() or not path.strip():
            raise InputError(f"--baselines: expected TIER=FILE[,TIER=FILE...] (best first), got {part.strip()!r}")
        if name.strip() in {t for t, _ in tiers}:
            raise InputError(f"--baselines: tier {name.strip()!r} named twice")
        tiers.append((name.strip(), Path(path.strip())))
    return tiers


def baseline_items(data: Path, items: list[Item], tiers: list[tuple[str, Path]], method: Any) -> list[Item]:
    """The answers to place (from DATA) plus each tier's stored answers, relabelled with the tier's
    name. Each file is checked on its own (errors name the file and line); a tier file holds one
    system's answers; a question id must ask the same question in every file."""
    check_items(method, items, str(data), together=False)
    taken = {str(i.system) for i in items}
    combined = list(items)
    queries = {i.id: (i.query, data) for i in items}
    for tier, path in tiers:
        if tier in taken:
            raise InputError(f"--baselines: tier {tier!r} is also a system in {data}; name the tier differently")
        answers = load_items(path).items
        systems = sorted({str(a.system) for a in answers if a.system is not None})
        if len(systems) > 1:
            raise InputError(f"a baseline tier holds one system's answers; this file has {len(systems)}: "
                             f"{', '.join(systems[:5])}", source=str(path))
        answers = [a.model_copy(update={"system": tier}) for a in answers]
        check_items(method, answers, str(path), together=False)
        for answer in answers:
            seen = queries.setdefault(answer.id, (answer.query, path))
            if seen[0].strip() != answer.query.strip():
                raise InputError(f"question {answer.id!r} is not the question of the same id in {seen[1]}",
                                 source=str(path), line=answer._line, field="query")
            combined.append(answer)
    return combined


def make_tournament_command() -> Any:
    import inspect

    cls = method_class("tournament")

    def command(**kwargs: Any) -> None:
        data: Path = kwargs.pop("data")
        out: Path | None = kwargs.pop("json_out")
        store_path: Path = kwargs.pop("store")
        versus_round_robin: bool = kwargs.pop("versus_round_robin")
        baselines_spec: str | None = kwargs.pop("baselines")
        force: bool = kwargs.pop("force")
        run = {name: kwargs.pop(name) for name in list(kwargs) if name in {n for n, _, _ in RUN_OPTIONS}}
        run.pop("out", None)  # -o is the ranking's JSON here (--output)
        run.pop("resume", None)  # a tournament always continues (every judged match is re-used)
        options = command_line(cls).options_from_cli(coerce(cls, take_aliases(kwargs)))
        check_method_options(cls, options)  # one line naming the flag (--elo-k: ...), before the store
        tiers = parse_baselines(baselines_spec) if baselines_spec else []
        if tiers:
            if options.get("mode", "swiss") not in ("swiss", "baselines"):
                raise ConfigError(f"--baselines places systems against tiers; it cannot be combined with --mode "
                                  f"{options['mode']}")
            options = {**options, "mode": "baselines", "tiers": [t for t, _ in tiers]}
        if out is not None:
            check_output(out, inputs=[data, store_path, *(p for _, p in tiers)], force=force, option="--output")
        method: Any = build_method("tournament", **options)
        items = load_items(data, limit=run["limit"]).items
        source = str(data)
        if tiers:
            items = baseline_items(data, items, tiers, method)
            source = " + ".join([str(data), *(str(p) for _, p in tiers)])
        if run["dry_run"]:
            check_items(method, items, source)
            dry_run(items, "tournament", options, run["price_in"], run["price_out"], run["judge"],
                    price_cached=run["price_cached"])
            return
        runner = RunnerConfig(concurrency=run["concurrency"], budget_tokens=run["budget"], timeout_s=run["timeout"],
                              max_retries=run["retries"], progress=run["progress"])

        async def go(opts: dict[str, Any]) -> Any:
            return await aevaluate(items, "tournament", run["judge"], store=store_path, runner=runner,
                                   resume=True, judge_options=parse_options(run["judge_opt"]),
                                   data_source=source, wait_s=float("inf") if run["wait"] else None,
                                   executor=run["executor"], workers=run["workers"], ray_address=run["ray_address"],
                                   **opts)

        result = asyncio.run(go(options))
        ranking = tournament_ranking(result.store, result.run_id, method, items)
        calls = result.summary()["judge_calls"]["calls"]
        ranking["judge_calls"] = calls
        ranking["run_id"] = result.run_id
        if versus_round_robin and method.config.mode == "swiss":
            robin_options = {**options, "mode": "round-robin"}
            robin_method = build_method("tournament", **robin_options)
            robin = asyncio.run(go(robin_options))
            robin_ranking = tournament_ranking(robin.store, robin.run_id, robin_method, items)
            order = [r["system"] for r in robin_ranking["ranking"]]
            swiss_rank = {r["system"]: i for i, r in enumerate(ranking["ranking"])}
            tau = correlation([swiss_rank[s] for s in order], list(range(len(order))), "kendall", resamples=0).r
            ranking["round_robin"] = {"ranking": robin_ranking["ranking"], "matches": len(robin_ranking["matches"]),
                                      "run_id": robin.run_id}
            ranking["kendall_tau_vs_round_robin"] = tau
        table = Table(title=f"DICE {ranking['mode']} tournament · {ranking['systems']} systems · "
                            f"{len(ranking['matches'])} matches · {ranking['comparisons']} comparisons")
        for column in ("rank", "system", "Elo", "Bradley–Terry", "95% CI"):
            table.add_column(column, justify="left" if column == "system" else "right")
        for n, row in enumerate(ranking["ranking"], 1):
            ci = f"[{row['bt_ci'][0]:.0f}, {row['bt_ci'][1]:.0f}]" if row["bt_ci"] else "—"
            table.add_row(str(n), row["system"], _fmt(row["elo"]), _fmt(row["bt"]), ci)
        console.print(table)
        if ranking.get("placement"):
            placed = Table(title="against the baseline tiers (questions won / tied / lost, mean DICE score)")
            for column in ("system", *ranking["tiers"]):
                placed.add_column(column, justify="left" if column == "system" else "right")
            for system, record in ranking["placement"].items():
                placed.add_row(system, *(f"{r['won']}/{r['tied']}/{r['lost']} · {r['mean_score']:.2f}"
                                         if (r := record.get(t)) else "—" for t in ranking["tiers"]))
            console.print(placed)
        if ranking.get("bt_note"):
            console.print(f"Bradley–Terry: {ranking['bt_note']}")
        if "kendall_tau_vs_round_robin" in ranking:
            tau = ranking["kendall_tau_vs_round_robin"]
            console.print(f"Kendall τ, Swiss vs round-robin ranking: {'—' if tau is None else f'{tau:.3f}'} "
                          f"({len(ranking['matches'])} vs {ranking['round_robin']['matches']} matches)")
        console.print(f"judge calls behind the tournament: {calls} (cached calls cost nothing); store {store_path}")
        if out is not None:
            write_json(out, ranking)
            console.print(f"wrote {out}")

    params = [inspect.Parameter("data", inspect.Parameter.KEYWORD_ONLY, annotation=Path,
                                default=typer.Argument(..., help="answers of several systems to the same questions"))]
    params += method_params(cls)
    for name, annotation, option in RUN_OPTIONS:  # the same run options as every method's command
        if name in ("out", "output", "force", "fresh"):  # -o/--output and --force are the ranking file's here
            continue
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation))
    params += [
        inspect.Parameter("json_out", inspect.Parameter.KEYWORD_ONLY, annotation=Path | None,
                          default=typer.Option(None, "--output", "-o", help="write the ranking, matches and "
                                                                            "judge calls as JSON")),
        inspect.Parameter("versus_round_robin", inspect.Parameter.KEYWORD_ONLY, annotation=bool,
                          default=typer.Option(False, "--versus-round-robin",
                                               help="also play the round-robin and report Kendall τ between the "
                                                    "rankings (reuses every judged match)")),
        inspect.Parameter("baselines", inspect.Parameter.KEYWORD_ONLY, annotation=str | None,
                          default=typer.Option(None, "--baselines",
                                               help="TIER=FILE,... best first (e.g. high=h.jsonl,medium=m.jsonl,"
                                                    "low=l.jsonl): place DATA's systems against stored answer "
                                                    "sets; implies --mode baselines")),
        inspect.Parameter("force", inspect.Parameter.KEYWORD_ONLY, annotation=bool,
                          default=typer.Option(False, "--force", help="replace an --output file assay did not write")),
    ]
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    command.__doc__ = "DICE tournament: rank systems with Swiss (or round-robin) pairwise matches, Elo and BT."
    return command
