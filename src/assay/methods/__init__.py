"""Evaluation methods. Each registers itself with :func:`assay.registry.register_method`;
nothing here names a method (importing the modules is what registers the built-in ones)."""

from __future__ import annotations

from assay.methods import baselines, caseaware, dece, dice, lemaj, lexical, tournament  # noqa: F401  (they register on import)
from assay.methods._base import CallEstimate, CliOption, ItemResult, Method, ReportSection
from assay.methods.dece import DeCE, DeCEConfig
from assay.registry import build_method, method_class, methods, register_method

__all__ = ["CallEstimate", "CliOption", "DeCE", "DeCEConfig", "ItemResult", "Method", "ReportSection", "build_method",
           "method_class", "methods", "register_method"]
