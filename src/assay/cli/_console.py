"""The command line's two consoles: standard output for results, standard error for notes and errors.
Their own module so that :mod:`assay.cli.kit` and what it imports print through the same two.

Where output goes to a file or a pipe (a CI log, ``| tee``) and ``COLUMNS`` is not set, rich would lay
tables out for 80 columns, and cut every cell of a wide one ("0.9…", "assista…"); such output is laid out
for :data:`PIPE_WIDTH` columns instead. A terminal keeps its own width, and ``COLUMNS`` wins everywhere."""

from __future__ import annotations

import os
import sys
from typing import TextIO

from rich.console import Console

PIPE_WIDTH = 200


def _width(stream: TextIO) -> int | None:
    if os.environ.get("COLUMNS"):
        return None
    try:
        return None if stream.isatty() else PIPE_WIDTH
    except (AttributeError, ValueError):  # a stream without isatty, or closed
        return PIPE_WIDTH


console = Console(width=_width(sys.stdout))
err_console = Console(stderr=True, width=_width(sys.stderr))
