"""Evaluation methods."""

from __future__ import annotations

from typing import Any

from assay.errors import ConfigError
from assay.methods._base import CallEstimate, ItemResult, Method
from assay.methods.dece import DeCE, DeCEConfig

METHODS: dict[str, type[Method]] = {"dece": DeCE}


def build_method(name: str, **options: Any) -> Method:
    """Build a method by name with its options (e.g. ``domain="legal"``, ``beta=2``)."""
    if name == "dece":
        criteria = options.pop("criteria", None)
        return DeCE(DeCEConfig(**options), criteria=criteria)
    raise ConfigError(f"unknown method {name!r}; available: {', '.join(sorted(METHODS))}")


__all__ = ["METHODS", "CallEstimate", "DeCE", "DeCEConfig", "ItemResult", "Method", "build_method"]
