"""The method registry: every evaluation method, built in or from a plug-in, is known here.

A method registers itself once with :func:`register_method` (a class decorator). Third-party
packages plug in through entry points, as simonw/llm plug-ins do::

    # the plug-in's pyproject.toml
    [project.entry-points."assay.methods"]
    mymethod = "my_package.module:MyMethod"      # a Method subclass (or a module that registers)

    [project.entry-points."assay.backends"]
    myjudge = "my_package.judge:factory"          # factory(model, options) -> JudgeBackend

A plug-in that fails to load is reported on stderr once, naming it, and left out; it does not
break the commands that do not need it.
"""

from __future__ import annotations

import importlib
import re
import sys
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from assay.errors import ConfigError

if TYPE_CHECKING:
    from assay.methods._base import Method

BUILTIN_METHODS = ("assay.methods.baselines", "assay.methods.caseaware", "assay.methods.dece", "assay.methods.dice",
                   "assay.methods.lemaj", "assay.methods.lexical", "assay.methods.premise", "assay.methods.tournament")
"""The packages of the built-in methods; each registers its method class on import, as a
plug-in's entry point does."""

_METHODS: dict[str, type[Method]] = {}
_loaded = False
PLUGIN_ERRORS: list[str] = []
"""Why each plug-in that failed to load failed (also printed to stderr once)."""

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


def register_method(cls: type[Method]) -> type[Method]:
    """Class decorator: make a :class:`~assay.methods._base.Method` known by its ``name``."""
    from assay.methods._base import Method

    if not (isinstance(cls, type) and issubclass(cls, Method)):
        raise TypeError(f"register_method: {cls!r} is not a Method subclass")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not _NAME.match(name):
        raise TypeError(f"register_method: {cls.__name__} needs a name of letters, digits, - and _")
    if not getattr(cls, "metrics", None):
        raise TypeError(f"register_method: {cls.__name__} declares no metrics")
    if not isinstance(cls.version, str) or not cls.version:
        raise TypeError(f"register_method: {cls.__name__}.version must be a non-empty string")
    existing = _METHODS.get(name)
    if existing is not None and existing is not cls and existing.__qualname__ != cls.__qualname__:
        raise TypeError(f"register_method: two methods are called {name!r} ({existing.__module__}."
                        f"{existing.__qualname__} and {cls.__module__}.{cls.__qualname__})")
    _METHODS[name] = cls
    return cls


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in BUILTIN_METHODS:  # loaded like a plug-in: the registry names no method
        importlib.import_module(module)

    for entry in entry_points(group="assay.methods"):
        try:
            loaded = entry.load()
            if isinstance(loaded, type):
                register_method(loaded)
        except Exception as exc:  # a broken plug-in must not break assay
            message = f"assay: plug-in method {entry.name!r} ({entry.value}) failed to load: {exc}"
            PLUGIN_ERRORS.append(message)
            print(message, file=sys.stderr)


def methods() -> dict[str, type[Method]]:
    """Every registered method by name (built-in and plug-ins), sorted by name."""
    _load()
    return dict(sorted(_METHODS.items()))


def item_methods() -> dict[str, type[Method]]:
    """The methods that run over items (every one but the views of judge sessions, such as the
    rubric audit's): what ``eval``, ``meta`` and ``injection`` offer."""
    return {name: cls for name, cls in methods().items() if not cls.session_view}


def method_class(name: str) -> type[Method]:
    _load()
    cls = _METHODS.get(name)
    if cls is None:
        raise ConfigError(f"unknown method {name!r}; available: {', '.join(sorted(_METHODS))}")
    return cls


def build_method(name: str, **options: Any) -> Method:
    """Build a method by name with its options (e.g. ``domain="legal"``, ``beta=2``). An option
    the method does not have, or a value of the wrong type, is a ConfigError naming it (a typo
    must not silently leave the default in place)."""
    cls = method_class(name)
    extras_allowed = {option.name for option in cls.cli_options()} - set(
        cls.config_model.model_fields if cls.config_model else ())
    extras = {k: options.pop(k) for k in list(options) if k in extras_allowed}
    if cls.config_model is None:
        if options:
            raise ConfigError(f"method {name!r} takes no options, got {', '.join(sorted(options))}")
        return cls.from_options(None, **extras)
    fields = cls.config_model.model_fields
    unknown = sorted(set(options) - set(fields))
    if unknown:
        raise ConfigError(f"method {name!r} has no option {', '.join(map(repr, unknown))}; its options: "
                          f"{', '.join(sorted(set(fields) | extras_allowed))}")
    try:
        config = cls.config_model(**options)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"method {name!r}: {problems}") from None
    return cls.from_options(config, **extras)
