"""assay: decomposed, auditable LLM judges for LLM and RAG answers.

>>> import assay
>>> result = assay.evaluate("answers.jsonl", method="rougeL")  # doctest: +SKIP
>>> result.to_pandas()  # doctest: +SKIP
"""

from assay import _relocated
from assay._version import __version__
from assay.core.errors import AssayError, ConfigError, InputError
from assay.core.types import Completion, GenerateConfig, Item, Message, Reference, Unscored
from assay.engine import EvalResult
from assay.engine.session import JudgeSession
from assay.exchange.api import EvalResults, InputNote, NotDelivered, aevaluate, estimate, evaluate, load_items
from assay.judge.backends import JudgeBackend, get_backend
from assay.judge.runner import RunnerConfig
from assay.store import Store

_relocated.install()


def __getattr__(name: str) -> object:
    # ``assay.errors`` and the other old module names, for one release
    return _relocated.attribute(name)


__all__ = [
    "AssayError", "Completion", "ConfigError", "EvalResult", "EvalResults", "GenerateConfig", "InputError",
    "InputNote", "Item", "JudgeBackend", "JudgeSession", "Message", "NotDelivered", "Reference", "RunnerConfig",
    "Store", "Unscored", "__version__", "aevaluate", "estimate", "evaluate", "get_backend", "load_items",
]
