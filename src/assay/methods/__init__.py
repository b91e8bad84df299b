"""Evaluation methods."""

from __future__ import annotations

from typing import Any

from assay.errors import ConfigError
from assay.methods._base import CallEstimate, ItemResult, Method
from assay.methods.baselines import BaselineConfig, Claims, ClaimsConfig, GEval, GEvalConfig, Pointwise
from assay.methods.caseaware import CaseAware, CaseAwareConfig
from assay.methods.dece import DeCE, DeCEConfig
from assay.methods.lexical import Bleu, RougeL

METHODS: dict[str, type[Method]] = {"dece": DeCE, "pointwise": Pointwise, "geval": GEval, "claims": Claims,
                                    "caseaware": CaseAware, "rougeL": RougeL, "bleu": Bleu}


def build_method(name: str, **options: Any) -> Method:
    """Build a method by name with its options (e.g. ``domain="legal"``, ``beta=2``)."""
    if name == "dece":
        criteria = options.pop("criteria", None)
        return DeCE(DeCEConfig(**options), criteria=criteria)
    if name == "caseaware":
        return CaseAware(CaseAwareConfig(**options))
    if name == "pointwise":
        return Pointwise(BaselineConfig(**options))
    if name == "geval":
        return GEval(GEvalConfig(**options))
    if name == "claims":
        return Claims(ClaimsConfig(**options))
    if name in ("rougeL", "bleu"):
        if options:
            raise ConfigError(f"method {name!r} takes no options, got {', '.join(sorted(options))}")
        return METHODS[name]()
    raise ConfigError(f"unknown method {name!r}; available: {', '.join(sorted(METHODS))}")


__all__ = ["METHODS", "CallEstimate", "DeCE", "DeCEConfig", "ItemResult", "Method", "build_method"]
