"""Evaluation methods: the interface (:class:`Method`, and the optional protocols
:class:`Presents`, :class:`MetaEvaluated`, :class:`HasCommands`) and the registry. Each method is a package
of its own (``assay.methods.<name>``: the method, its report and review templates, its extra
commands) that registers itself with :func:`register_method` when the registry loads it, as a
plug-in does; nothing here names a method."""

from __future__ import annotations

import importlib
from typing import Any

from assay.core.method import CallEstimate, CliOption, ItemResult, Method, ReportSection
from assay.core.protocols import HasCommands, MetaEvaluated, Presents
from assay.core.registry import build_method, method_class, methods, register_method

__all__ = ["CallEstimate", "CliOption", "DeCE", "DeCEConfig", "HasCommands", "ItemResult", "MetaEvaluated", "Method",
           "Presents", "ReportSection", "build_method", "method_class", "methods", "register_method"]


def __getattr__(name: str) -> Any:
    # ``from assay.methods import DeCE`` keeps working without this package importing a method
    if name in ("DeCE", "DeCEConfig"):
        return getattr(importlib.import_module("assay.methods.dece"), name)
    raise AttributeError(name)
