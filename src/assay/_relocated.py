"""Old import paths, kept for one release: ``import assay.runner`` still works, warns, and
gives the module at its new place (``assay.judge.runner``) — the same module object, so a
patch through either name patches both.

After assay 0.2.0, assay moved its 37 top-level modules into ten packages (``core``, ``store``, ``judge``,
``data``, ``engine``, ``analysis``, ``exchange``, ``view``, ``cli``, ``methods``). Plug-ins and
users' code that import the old paths keep working until 0.4 through :data:`RELOCATED`, which
:func:`install` reads once, when ``assay`` is imported. (Inspect AI's
``relocated_module_attribute`` does the same for single names.)
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType

RELOCATED: dict[str, str] = {
    "assay.errors": "assay.core.errors",
    "assay.types": "assay.core.types",
    "assay.records": "assay.core.records",
    "assay._load": "assay.core._load",
    "assay._files": "assay.core._files",
    "assay.registry": "assay.core.registry",
    "assay.views": "assay.core.views",
    "assay.report_models": "assay.core.report_models",
    "assay.methods._base": "assay.core.method",
    "assay.human": "assay.store.human",
    "assay.annotation_rules": "assay.store.annotation_rules",
    "assay.backends": "assay.judge.backends",
    "assay.model": "assay.judge.model",
    "assay.doctor": "assay.judge.doctor",
    "assay.runner": "assay.judge.runner",
    "assay.structured": "assay.judge.structured",
    "assay.direct": "assay.judge.direct",
    "assay.verdicts": "assay.judge.verdicts",
    "assay.text": "assay.judge.text",
    "assay.embeddings": "assay.judge.embeddings",
    "assay.prompts": "assay.judge.prompts",
    "assay.calibration": "assay.judge.calibration",
    "assay.serve": "assay.judge.serve",
    "assay.datasets": "assay.data.datasets",
    "assay.traces": "assay.data.traces",
    "assay._ray": "assay.engine._ray",
    "assay.grader_text": "assay.engine.grader_text",
    "assay.session": "assay.engine.session",
    "assay.stages": "assay.engine.stages",
    "assay._eval": "assay.engine",
    "assay.results": "assay.engine.results",
    "assay.api": "assay.exchange.api",
    "assay.engine.api": "assay.exchange.api",
    "assay.stats": "assay.analysis.stats",
    "assay.meta": "assay.analysis.meta",
    "assay.injection": "assay.analysis.injection",
    "assay.align": "assay.analysis.align",
    "assay.align_file": "assay.analysis.align_file",
    "assay.align_labels": "assay.analysis.align_labels",
    "assay.export": "assay.exchange.export",
    "assay.otel": "assay.exchange.otel",
    "assay.phoenix": "assay.exchange.phoenix",
    "assay.pytest_plugin": "assay.exchange.pytest_plugin",
    "assay.report": "assay.view.report",
    "assay.ui": "assay.view.ui",
    "assay.clikit": "assay.cli.kit",
    "assay._help": "assay.cli._help",
    "assay.cli._common": "assay.cli.kit",
    "assay.cli._traces": "assay.cli.kit",
}
"""Old module path -> new module path (a package's submodules follow their package)."""

REMOVED_IN = "0.4"


def new_name(old: str) -> str | None:
    """Where the module ``old`` lives now, or None if it did not move."""
    for before, after in RELOCATED.items():
        if old == before or old.startswith(before + "."):
            return after + old[len(before):]
    return None


def warn(old: str, new: str, stacklevel: int = 3) -> None:
    warnings.warn(f"{old} moved to {new}; the old path works until assay {REMOVED_IN}",
                  DeprecationWarning, stacklevel=stacklevel)


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path and loads it as the module at its new path."""

    def find_spec(self, fullname: str, path: object = None, target: object = None
                  ) -> importlib.machinery.ModuleSpec | None:
        new = new_name(fullname) if fullname.startswith("assay.") else None
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, origin=new)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        assert spec.origin is not None
        warn(spec.name, spec.origin, stacklevel=8)
        return importlib.import_module(spec.origin)

    def exec_module(self, module: ModuleType) -> None:
        return None  # the module ran at its new path


def install() -> None:
    """Put the old paths on the import system (once)."""
    if not any(isinstance(finder, _Alias) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Alias())  # before the path finder, which would load a second copy


def attribute(name: str) -> ModuleType:
    """``assay.<name>`` for an old top-level module name (``assay.errors``), or AttributeError."""
    new = new_name(f"assay.{name}")
    if new is None:
        raise AttributeError(f"module 'assay' has no attribute {name!r}")
    warn(f"assay.{name}", new)
    return importlib.import_module(new)
