"""assay: decomposed, auditable LLM judges for LLM and RAG answers.

>>> import assay
>>> result = assay.evaluate("answers.jsonl", method="rougeL")  # doctest: +SKIP
>>> result.to_pandas()  # doctest: +SKIP
"""

from typing import TYPE_CHECKING

from assay import _relocated
from assay._version import __version__

_relocated.install()

# The public names are imported when first read (PEP 562), not with the package: every start of the
# `assay` command imports this package, and most commands need few of them (importing them all took
# ~0.2 s of each start).
_EXPORTS = {
    "AssayError": "assay.core.errors", "ConfigError": "assay.core.errors", "InputError": "assay.core.errors",
    "Completion": "assay.core.types", "GenerateConfig": "assay.core.types", "Item": "assay.core.types",
    "Message": "assay.core.types", "Reference": "assay.core.types", "Unscored": "assay.core.types",
    "EvalResult": "assay.engine", "JudgeSession": "assay.engine.session",
    "EvalResults": "assay.exchange.api", "InputNote": "assay.exchange.api", "NotDelivered": "assay.exchange.api",
    "aevaluate": "assay.exchange.api", "estimate": "assay.exchange.api", "evaluate": "assay.exchange.api",
    "load_items": "assay.exchange.api",
    "JudgeBackend": "assay.judge.backends", "get_backend": "assay.judge.backends",
    "RunnerConfig": "assay.judge.runner", "Store": "assay.store",
}

if TYPE_CHECKING:
    from assay.core.errors import AssayError, ConfigError, InputError
    from assay.core.types import Completion, GenerateConfig, Item, Message, Reference, Unscored
    from assay.engine import EvalResult
    from assay.engine.session import JudgeSession
    from assay.exchange.api import EvalResults, InputNote, NotDelivered, aevaluate, estimate, evaluate, load_items
    from assay.judge.backends import JudgeBackend, get_backend
    from assay.judge.runner import RunnerConfig
    from assay.store import Store


_PACKAGES = ("core", "store", "judge", "data", "engine", "analysis", "exchange", "view", "cli", "methods")
"""assay's packages: ``import assay`` then ``assay.data.TraceExport`` works as when they were imported eagerly."""


def __getattr__(name: str) -> object:
    import importlib

    module = _EXPORTS.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value
    if name in _PACKAGES:
        return importlib.import_module(f"assay.{name}")
    # ``assay.errors`` and the other old module names, for one release
    return _relocated.attribute(name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


__all__ = [
    "AssayError", "Completion", "ConfigError", "EvalResult", "EvalResults", "GenerateConfig", "InputError",
    "InputNote", "Item", "JudgeBackend", "JudgeSession", "Message", "NotDelivered", "Reference", "RunnerConfig",
    "Store", "Unscored", "__version__", "aevaluate", "estimate", "evaluate", "get_backend", "load_items",
]
