"""`assay ui RUN.db`: review and annotate a run in the browser (see :mod:`assay.view.ui`)."""

from __future__ import annotations

from pathlib import Path

import typer

from assay.cli.kit import console
from assay.core.errors import ConfigError
from assay.store import Store


def ui(
    store: Path = typer.Argument(..., help="run store (.db) to browse and annotate"),
    port: int = typer.Option(0, "--port", "-p", min=0, max=65535, envvar="ASSAY_UI_PORT",
                             help="port (0: a free one)"),
    host: str = typer.Option("127.0.0.1", "--host", envvar="ASSAY_UI_HOST",
                             help="address to listen on; keep 127.0.0.1 unless you know who can reach it"),
    author: str = typer.Option("reviewer", "--author", envvar="ASSAY_AUTHOR",
                               help="default reviewer name for annotations (changeable in the page)"),
    stop_after: float | None = typer.Option(None, "--stop-after", min=1.0,
                                            help="stop serving after this many seconds (for scripts and tests)"),
    alignment: Path | None = typer.Option(None, "--alignment", metavar="FILE",
                                          help="alignment file from assay align: show the aligned score, calibrated "
                                               "probabilities and verdicts at the tie threshold beside the raw ones, "
                                               "on the runs it was fitted for"),
) -> None:
    """Serve a browser app over a run store: browse runs, items and the judge's evidence, annotate."""
    from assay.view.ui import serve

    if not host.strip():  # an empty address binds every interface, the opposite of what it looks like
        raise ConfigError("--host '': give the address to listen on, e.g. 127.0.0.1 (this machine only)")
    Store(store, create=False)  # a missing or foreign file is refused before anything listens
    fitted = None
    if alignment is not None:  # a missing or malformed file, too
        from assay.analysis.align import read_alignment

        fitted = read_alignment(alignment)
        fitted["_source"] = str(alignment)
    if host not in ("127.0.0.1", "localhost", "::1"):
        console.print(f"[yellow]warning:[/] listening on {host}: anyone who can reach it and has the token can "
                      "annotate")

    def ready(url: str) -> None:
        console.print(f"assay ui on {url}", soft_wrap=True)
        console.print("the token in the URL is needed; Ctrl-C stops", style="dim")

    serve(store, host=host, port=port, author=author, ready=ready, alignment=fitted, stop_after=stop_after)
    if stop_after is not None:
        console.print(f"assay ui stopped after {stop_after:g} s (--stop-after)")
