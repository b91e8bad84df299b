"""`assay judges`: the judge backends and the options each takes (``--judge-opt key=value``),
listed from the same option models that parse them."""

from __future__ import annotations

import json
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from assay.cli.kit import console

NOTES = {
    "llamacpp": "llamacpp/default · llamacpp/smollm2 · llamacpp//path/to/model.gguf (offline, in a child process)",
    "openai": "openai/MODEL · openai/MODEL@URL · openai/MODEL@URL1,URL2 (any OpenAI-compatible server)",
    "litellm": "litellm/PROVIDER/MODEL (pip install 'assay[litellm]')",
    "scripted": "scripted/path/to/script.json (canned answers, for tests)",
    "jury": "jury/JUDGE1+JUDGE2 (each --judge-opt goes to every member)",
}


def judges(as_json: bool = typer.Option(False, "--json", help="print the options as JSON")) -> None:
    """List the judge backends and the options each takes (--judge-opt key=value)."""
    from assay.core.registry import methods
    from assay.judge.backends import options_model, providers
    from assay.judge.backends._options import option_rows

    methods()  # a method's package may register a backend when it loads (every command loaded them all once)

    listing: dict[str, dict[str, Any]] = {}
    for provider in providers():
        model = options_model(provider)
        rows = [r for r in option_rows(model) if r["option"] != "http_client"] if model is not None else None
        listing[provider] = {"names": NOTES.get(provider, f"{provider}/MODEL (a plug-in)"), "options": rows}
    if as_json:
        typer.echo(json.dumps(listing, indent=2))
        return
    for provider, entry in listing.items():
        console.print(f"[bold]{provider}[/bold]: {escape(entry['names'])}", soft_wrap=True, highlight=False)
        if entry["options"] is None:
            console.print("  declares no options model: --judge-opt values reach it as text", highlight=False)
            continue
        if not entry["options"]:
            console.print("  no options of its own", highlight=False)
            continue
        table = Table(show_edge=False, pad_edge=False, box=None)
        for column in ("option", "type", "range", "default", "description"):
            table.add_column(column, overflow="fold")
        for row in entry["options"]:
            table.add_row(*(escape(row[c]) for c in ("option", "type", "range", "default", "description")))
        console.print(table)
        console.print()
