"""Pieces shared by the CLI commands: option parsing and printing. They live in
:mod:`assay.clikit` (the command line's kit, a leaf that methods import too); re-exported here."""

from __future__ import annotations

from assay.clikit import console, err_console, parse_options, print_summary

__all__ = ["console", "err_console", "parse_options", "print_summary"]
