"""The command line's two consoles: standard output for results, standard error for notes and errors.
Their own module so that :mod:`assay.cli.kit` and what it imports print through the same two."""

from __future__ import annotations

from rich.console import Console

console = Console()
err_console = Console(stderr=True)
