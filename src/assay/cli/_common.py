"""Pieces shared by the CLI commands: option parsing and printing."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from assay.errors import ConfigError

console = Console()
err_console = Console(stderr=True)


def parse_options(pairs: list[str] | None, what: str = "--judge-opt") -> dict[str, Any]:
    """``["key=value", ...]`` to a dict (values stay strings; backends convert)."""
    options: dict[str, Any] = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise ConfigError(f"{what} takes key=value, got {pair!r}")
        key, value = pair.split("=", 1)
        options[key.strip()] = value.strip()
    return options


def print_summary(summary: dict[str, Any], metrics: list[str]) -> None:
    """The summary table of a run, overall and per system."""
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
    console.print(f"{summary['items']} item(s){pending}; judge calls behind them: {calls['calls']} "
                  f"({calls['prompt_tokens']} prompt + {calls['completion_tokens']} completion tokens)")
