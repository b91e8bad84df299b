"""rouge-score's scorer without importing all of NLTK.

``rouge_score.rouge_scorer`` starts with ``import nltk``, and NLTK's package imports everything it
has (parsers, taggers, and through them scikit-learn and SciPy): 2.6 s of a 3.7 s ``assay eval
rougeL`` on 2 cores, for a scorer that uses one part of NLTK, its Porter stemmer
(``nltk.stem.porter``, with the few small modules it imports itself). ``nltk.sent_tokenize`` is
used for rougeLsum only, which assay does not compute; the scorer module's ``nltk`` is replaced by a
stand-in that imports the real NLTK when anything of it is asked for, so rougeLsum still works.

So when NLTK has not been imported yet, the scorer is imported with ``nltk`` and ``nltk.stem`` as
bare packages (their folders, not their ``__init__``): rouge-score's own code then runs NLTK's own
Porter stemmer, unchanged; the scores are the same (tests/unit/methods/lexical/test_rouge.py
compares them with a scorer imported the usual way). The bare packages are taken out of
``sys.modules`` afterwards, so a later ``import nltk`` anywhere in the process imports the real
package. The stemmer's class is not the one a later ``import nltk`` defines, so a scorer does not
pickle by reference (RougeL pickles without it and builds it again). Another thread that imports
NLTK during this import could get the bare package (the lock orders only this function's callers;
assay builds the scorer once, at the method's start). Where NLTK is already imported, or its stemmer
cannot be imported this way (a later NLTK whose stemmer needs more of its package: NLTK is not
pinned), the scorer is imported the usual way, with the same scores and NLTK's whole import time.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from typing import Any

_LOCK = threading.Lock()


def _nltk(name: str) -> bool:
    return name == "nltk" or name.startswith("nltk.")


class _RealNLTK(types.ModuleType):
    """What the scorer module sees as ``nltk``: the real package, imported at first use."""

    def __getattr__(self, name: str) -> Any:
        real = importlib.import_module("nltk")
        return getattr(real, name)


def rouge_scorer_module() -> Any:
    """``rouge_score.rouge_scorer``, imported without running NLTK's package ``__init__``."""
    with _LOCK:
        if "rouge_score.rouge_scorer" in sys.modules or "nltk" in sys.modules:
            return importlib.import_module("rouge_score.rouge_scorer")
        spec = importlib.util.find_spec("nltk")  # locates the package without running it
        if spec is None or not spec.submodule_search_locations:
            return importlib.import_module("rouge_score.rouge_scorer")  # its own ImportError names NLTK
        root = next(iter(spec.submodule_search_locations))
        before = set(sys.modules)
        for name, path in (("nltk", root), ("nltk.stem", f"{root}/stem")):
            bare = types.ModuleType(name)
            bare.__path__ = [path]
            bare.__package__ = name
            sys.modules[name] = bare
        module = None
        try:
            module = importlib.import_module("rouge_score.rouge_scorer")
            setattr(module, "nltk", _RealNLTK("nltk"))  # noqa: B010 (a module's global, which mypy cannot see)
        except (ImportError, AttributeError):
            # an NLTK whose stemmer needs more of its package than this (NLTK is not pinned: rouge-score
            # asks for any version): the usual import below, slower, with the same scores
            module = None
            for name in [n for n in sys.modules if n.startswith("rouge_score.") and n not in before]:
                del sys.modules[name]
        finally:
            for name in [n for n in sys.modules if _nltk(n)]:  # NLTK was not imported before: none is the real one
                del sys.modules[name]
        return module if module is not None else importlib.import_module("rouge_score.rouge_scorer")
