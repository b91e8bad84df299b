"""Judge backends: the interface, the registry and the built-in providers."""

from assay.backends._base import Capabilities, JudgeBackend
from assay.backends._registry import get_backend, providers, register_backend
from assay.backends._scripted import ScriptedBackend

__all__ = ["Capabilities", "JudgeBackend", "ScriptedBackend", "get_backend", "providers",
           "register_backend"]
