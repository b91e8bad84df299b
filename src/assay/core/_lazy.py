"""A module imported at its first use rather than when the importing module loads.

numpy costs a few tenths of a second to import, and the command line imports every module that
uses it (the statistics, the charts, the methods' metrics) to build its command tree, whatever
the command: ``assay --help`` or a refused option need none of it. A module that uses numpy only
inside its functions writes::

    if TYPE_CHECKING:
        import numpy as np
    else:
        np = lazy_module("numpy")

and numpy is imported when one of those functions first reads an attribute of ``np``.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Any

__all__ = ["lazy_module"]


class _LazyModule(ModuleType):
    """Stands for the module of the same name; every attribute read goes to the real module,
    imported on the first one."""

    def __getattr__(self, attribute: str) -> Any:
        name = self.__name__
        module = sys.modules.get(name)
        if module is None or module is self:
            module = importlib.import_module(name)
        return getattr(module, attribute)

    def __repr__(self) -> str:
        return f"<lazy module {self.__name__!r}>"


def lazy_module(name: str) -> Any:
    """A stand-in for module ``name`` (never put in ``sys.modules``): reading any attribute
    imports the module, once, and returns the module's attribute."""
    return _LazyModule(name)
