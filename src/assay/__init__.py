"""assay: decomposed, auditable LLM judges for LLM and RAG answers.

>>> import assay
>>> result = assay.evaluate("answers.jsonl", method="rougeL")  # doctest: +SKIP
>>> result.to_pandas()  # doctest: +SKIP
"""

from assay._eval import EvalResult
from assay._version import __version__
from assay.api import EvalResults, InputNote, aevaluate, estimate, evaluate, load_items
from assay.backends import JudgeBackend, get_backend
from assay.errors import AssayError, ConfigError, InputError
from assay.runner import RunnerConfig
from assay.session import JudgeSession
from assay.store import Store
from assay.types import Completion, GenerateConfig, Item, Message, Reference, Unscored

__all__ = [
    "AssayError", "Completion", "ConfigError", "EvalResult", "EvalResults", "GenerateConfig", "InputError",
    "InputNote", "Item", "JudgeBackend", "JudgeSession", "Message", "Reference", "RunnerConfig", "Store", "Unscored",
    "__version__", "aevaluate", "estimate", "evaluate", "get_backend", "load_items",
]
