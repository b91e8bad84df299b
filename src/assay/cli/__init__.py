"""The `assay` command line (Typer). Commands are thin over the library."""

from __future__ import annotations

import sys

import typer

from assay._version import __version__
from assay.cli import dece, demo, eval, export, model, report
from assay.cli._common import err_console
from assay.errors import AssayError

app = typer.Typer(name="assay", help="Decomposed, auditable LLM judges for LLM and RAG answers.",
                  no_args_is_help=True, pretty_exceptions_enable=False)
app.add_typer(eval.app, name="eval")
app.add_typer(dece.app, name="dece")
app.add_typer(model.app, name="model")
app.command("export")(export.export)
app.command("report")(report.report)
app.command("demo")(demo.demo)


@app.command("version")
def version() -> None:
    """Print assay's version."""
    typer.echo(__version__)


def main() -> None:
    """Entry point: AssayErrors become one readable line and exit code 2."""
    try:
        app(standalone_mode=False)
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
