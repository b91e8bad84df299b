"""The click layer under Typer. Typer 0.29 vendors its own copy of click (``typer._click``) whose
exceptions are not click's (catching ``click.ClickException`` let every usage error through as a
traceback). Everything the CLI needs from that layer comes from here; pyproject pins Typer 0.29."""

from __future__ import annotations

from typing import Any

from typer._click.exceptions import BadParameter, ClickException, NoArgsIsHelpError, UsageError

__all__ = ["BadParameter", "ClickException", "NoArgsIsHelpError", "UsageError", "convert_option", "is_group",
           "is_option"]


def is_group(command: Any) -> bool:
    return isinstance(getattr(command, "commands", None), dict)


def is_option(param: Any) -> bool:
    return getattr(param, "param_type_name", "") == "option"


def convert_option(param: Any, value: Any) -> Any:
    """Convert a value as the command line would (type and range checks); raises the layer's
    BadParameter/UsageError on a bad value."""
    value = param.get_runtime_param().coerce(value, param=param, ctx=None)
    if param.callback is not None:  # the range checks the command line applies (assay.cli._harden)
        value = param.callback(None, param, value)
    return value
