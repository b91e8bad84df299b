"""assay: decomposed, auditable LLM judges for LLM and RAG answers.

>>> import assay
>>> result = assay.evaluate(items, method="dece", judge="llamacpp/default")  # doctest: +SKIP
>>> result.summary()  # doctest: +SKIP
"""

from assay._eval import EvalResult, aevaluate, estimate, evaluate
from assay._version import __version__
from assay.backends import JudgeBackend, get_backend
from assay.errors import AssayError, InputError
from assay.runner import RunnerConfig
from assay.store import Store
from assay.types import Completion, GenerateConfig, Item, Message, Reference, Unscored

__all__ = [
    "AssayError", "Completion", "EvalResult", "GenerateConfig", "InputError", "Item", "JudgeBackend",
    "Message", "Reference", "RunnerConfig", "Store", "Unscored", "__version__", "aevaluate", "estimate",
    "evaluate", "get_backend",
]
