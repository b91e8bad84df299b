"""rouge-score's scorer without importing all of NLTK.

``rouge_score.rouge_scorer`` starts with ``import nltk``, and NLTK's package imports everything it
has (parsers, taggers, and through them scikit-learn and SciPy): 2.6 s of a 3.7 s ``assay eval
rougeL`` on 2 cores, for a scorer that uses one module of NLTK, its Porter stemmer
(``nltk.stem.porter``, which needs only ``nltk.stem.api``). ``nltk.sent_tokenize`` is used for
rougeLsum only, which assay does not compute.

So when NLTK has not been imported yet, the scorer is imported with ``nltk`` and ``nltk.stem`` as
bare packages (their folders, not their ``__init__``): rouge-score's own code then runs NLTK's own
Porter stemmer, unchanged; the scores are the same (tests/unit/methods/lexical/test_rouge.py
compares them with a scorer imported the usual way). The bare packages are taken out of
``sys.modules`` afterwards, so a later ``import nltk`` anywhere in the process imports the real
package. Where NLTK is already imported, the scorer is imported the usual way.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from typing import Any

_LOCK = threading.Lock()
_BARE = ("nltk", "nltk.stem")


def rouge_scorer_module() -> Any:
    """``rouge_score.rouge_scorer``, imported without running NLTK's package ``__init__``."""
    with _LOCK:
        if "rouge_score.rouge_scorer" in sys.modules or "nltk" in sys.modules:
            return importlib.import_module("rouge_score.rouge_scorer")
        spec = importlib.util.find_spec("nltk")  # locates the package without running it
        if spec is None or not spec.submodule_search_locations:
            return importlib.import_module("rouge_score.rouge_scorer")  # its own ImportError names NLTK
        root = next(iter(spec.submodule_search_locations))
        added: list[str] = []
        try:
            for name, path in (("nltk", root), ("nltk.stem", f"{root}/stem")):
                bare = types.ModuleType(name)
                bare.__path__ = [path]
                bare.__package__ = name
                sys.modules[name] = bare
                added.append(name)
            importlib.import_module("nltk.stem.porter")
            added += ["nltk.stem.api", "nltk.stem.porter"]
            return importlib.import_module("rouge_score.rouge_scorer")
        finally:
            for name in added:
                sys.modules.pop(name, None)
