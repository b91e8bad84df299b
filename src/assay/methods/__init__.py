"""Evaluation methods."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from assay.errors import ConfigError
from assay.methods._base import CallEstimate, ItemResult, Method
from assay.methods.baselines import BaselineConfig, Claims, ClaimsConfig, GEval, GEvalConfig, Pointwise
from assay.methods.caseaware import CaseAware, CaseAwareConfig
from assay.methods.dece import DeCE, DeCEConfig
from assay.methods.lexical import Bleu, RougeL

METHODS: dict[str, type[Method]] = {"dece": DeCE, "pointwise": Pointwise, "geval": GEval, "claims": Claims,
                                    "caseaware": CaseAware, "rougeL": RougeL, "bleu": Bleu}


_CONFIGS: dict[str, type[BaseModel]] = {"dece": DeCEConfig, "caseaware": CaseAwareConfig, "pointwise": BaselineConfig,
                                        "geval": GEvalConfig, "claims": ClaimsConfig}


def build_method(name: str, **options: Any) -> Method:
    """Build a method by name with its options (e.g. ``domain="legal"``, ``beta=2``). An option
    the method does not have, or a value of the wrong type, is a ConfigError naming it (a typo
    must not silently leave the default in place)."""
    if name in ("rougeL", "bleu"):
        if options:
            raise ConfigError(f"method {name!r} takes no options, got {', '.join(sorted(options))}")
        return METHODS[name]()
    if name not in _CONFIGS:
        raise ConfigError(f"unknown method {name!r}; available: {', '.join(sorted(METHODS))}")
    config_type = _CONFIGS[name]
    criteria = options.pop("criteria", None) if name == "dece" else None
    unknown = sorted(set(options) - set(config_type.model_fields))
    if unknown:
        raise ConfigError(f"method {name!r} has no option {', '.join(map(repr, unknown))}; its options: "
                          f"{', '.join(sorted(config_type.model_fields))}")
    try:
        config = config_type(**options)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"method {name!r}: {problems}") from None
    if name == "dece":
        return DeCE(config, criteria=criteria)  # type: ignore[arg-type]
    return METHODS[name](config)  # type: ignore[call-arg]


__all__ = ["METHODS", "CallEstimate", "DeCE", "DeCEConfig", "ItemResult", "Method", "build_method"]
