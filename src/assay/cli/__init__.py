"""The `assay` command line (Typer). Commands are thin over the library."""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path
from typing import Any

import typer

from assay._version import __version__
from assay.cli import compare, dece, demo, eval, export, injection, meta, model, report
from assay.cli._common import err_console
from assay.errors import AssayError, ConfigError

app = typer.Typer(name="assay", help="Decomposed, auditable LLM judges for LLM and RAG answers.",
                  no_args_is_help=True, pretty_exceptions_enable=False)
app.add_typer(eval.app, name="eval")
app.add_typer(dece.app, name="dece")
app.add_typer(model.app, name="model")
app.command("export")(export.export)
app.command("report")(report.report)
app.command("demo")(demo.demo)
app.command("meta")(meta.meta)
app.command("compare")(compare.compare)
app.command("gate")(compare.gate_command)
app.command("injection")(injection.injection)


@app.command("version")
def version() -> None:
    """Print assay's version."""
    typer.echo(__version__)


def load_config(path: Path | None = None) -> dict[str, Any]:
    """Option defaults from TOML: ``ASSAY_CONFIG`` or ``./assay.toml``.

    Tables follow the command path, keys are option names with underscores::

        [eval.dece]
        judge = "openai/gpt-4o-mini"
        domain = "legal"
        concurrency = 16

    Precedence: command-line flag > environment variable > config file > built-in default.
    """
    if path is None:
        env = os.environ.get("ASSAY_CONFIG")
        path = Path(env) if env else Path("assay.toml")
        if not env and not path.is_file():
            return {}
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc


def main() -> None:
    """Entry point: AssayErrors become one readable line and exit code 2."""
    try:
        app(standalone_mode=False, default_map=load_config())
    except AssayError as exc:
        err_console.print(f"[red]error:[/red] {exc}")
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        err_console.print("aborted")
        sys.exit(130)
    except Exception as exc:  # click usage errors
        import click
        if isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        raise
