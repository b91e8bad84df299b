"""Judge backends: the interface, the registry and the built-in providers."""

from assay.judge.backends._base import COUPLED, Capabilities, JudgeBackend
from assay.judge.backends._options import BackendOptions
from assay.judge.backends._registry import (
                                      check_judge,
                                      get_backend,
                                      options_model,
                                      parse_judge_options,
                                      providers,
                                      register_backend,
)
from assay.judge.backends._scripted import ScriptedBackend

__all__ = ["COUPLED", "BackendOptions", "Capabilities", "JudgeBackend", "ScriptedBackend", "check_judge", "get_backend",
           "options_model", "parse_judge_options", "providers", "register_backend"]
