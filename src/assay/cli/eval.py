"""`assay eval METHOD DATA`: one command per registered method, generated from its config model.

Every method gets the same run options (judge, store, concurrency, budget, fresh, dry run, ...)
and one option per field of its config model: ``--field-name`` with the field's docstring as
help, an ``ASSAY_FIELD_NAME`` variable and the TOML key ``field_name`` in ``[eval.METHOD]``.
Nothing here names a method; a plug-in's method gets its command the same way.

The options and the command maker live in :mod:`assay.cli.kit` (a leaf, which methods import
too); their names are re-exported here, where they were first defined. The commands are added
by :func:`register_eval_commands` when :mod:`assay.cli` builds the command tree, not at import.
"""

from __future__ import annotations

import typer

from assay.cli.dry_run import EMBEDDED_SPEED
from assay.cli.kit import (
    BUDGET_OPT,
    CONCURRENCY_OPT,
    DRY_RUN_OPT,
    JUDGE,
    JUDGE_FREE_DEFAULTS,
    JUDGE_ONLY,
    JUDGE_OPT,
    PRICES_PER_MILLION,
    PROGRESS_OPT,
    RETRIES_OPT,
    RUN_NAMES,
    RUN_OPTIONS,
    STORE_OPT,
    TIMEOUT_OPT,
    check_results_file,
    make_command,
    runner_config,
    take_aliases,
    take_old_store_flag,
    user_help,
)
from assay.cli.kit import coerce as _coerce
from assay.cli.kit import dry_run as _dry_run
from assay.cli.kit import method_params as _method_params
from assay.cli.kit import run_method as _run
from assay.core.protocols import command_line
from assay.core.registry import methods

_RUN_NAMES = RUN_NAMES

__all__ = ["BUDGET_OPT", "CONCURRENCY_OPT", "DRY_RUN_OPT", "EMBEDDED_SPEED", "JUDGE", "JUDGE_FREE_DEFAULTS",
           "JUDGE_ONLY", "JUDGE_OPT", "PRICES_PER_MILLION", "PROGRESS_OPT", "RETRIES_OPT", "RUN_NAMES", "RUN_OPTIONS",
           "STORE_OPT", "TIMEOUT_OPT", "_RUN_NAMES", "_coerce", "_dry_run", "_method_params", "_run", "app",
           "check_results_file", "make_command", "register_eval_commands", "runner_config", "take_aliases",
           "take_old_store_flag", "user_help"]

app = typer.Typer(help="Evaluate a data file with a method.", no_args_is_help=True)


def register_eval_commands(group: typer.Typer = app, only: str | None = None) -> bool:
    """``assay eval NAME`` for every registered method (built-in or plug-in) that has one (for the
    method ``only`` alone when given); whether any command was added."""
    added = False
    for cls in methods().values():
        if (only is None or cls.name == only) and command_line(cls).eval_command:
            added = True
            group.command(cls.name)(make_command(cls))
    return added
