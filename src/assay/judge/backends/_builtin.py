"""The built-in judge providers as the registry loads them (the ``assay.judge.backends`` entries of
:data:`assay.core.registry.BUILTINS`): light factories that import their backend, and with it its
optional dependencies, only when a judge of theirs is first built."""

from __future__ import annotations

import importlib
from typing import Any

from assay.judge.backends._base import JudgeBackend
from assay.judge.backends._options import BUILTIN_OPTIONS


def _lazy(provider: str, target: str) -> Any:
    module, _, attribute = target.partition(":")

    def factory(model: str, options: dict[str, Any]) -> JudgeBackend:
        real = getattr(importlib.import_module(module), attribute)
        backend: JudgeBackend = real(model, options)
        return backend

    factory.options = BUILTIN_OPTIONS[provider]  # type: ignore[attr-defined]
    factory.__qualname__ = factory.__name__ = f"{provider}_factory"
    return factory


llamacpp = _lazy("llamacpp", "assay.judge.backends._llamacpp:factory")
openai = _lazy("openai", "assay.judge.backends._openai:factory")
jury = _lazy("jury", "assay.judge.backends._jury:factory")
scripted = _lazy("scripted", "assay.judge.backends._scripted:factory")
litellm = _lazy("litellm", "assay.judge.backends._litellm:factory")
