"""The registry: one rule for every method, judge backend, dataset reader, view and command
assay knows, built in or from a plug-in — an entry with a *kind* and a *name*, registered by a
decorator or by an entry point of the kind's group (see :mod:`assay.core.registry._core`).

Methods have their own spelling, :func:`register_method` (a class decorator that checks the
method's declarations and registers its commands hook and review panel too), and their own look-ups
(:func:`methods`, :func:`method_class`, :func:`build_method`). Workflows — commands that store runs
of their own kind, which are not methods run over items (the rubric audit) — have
:func:`register_workflow` and :func:`workflows`. assay's own methods are loaded
through the same entry-point loader as a plug-in's; nothing here names a method.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from assay.core.errors import ConfigError
from assay.core.registry._core import (
    _ENTRIES,
    ACCEPT,
    BUILTINS,
    KINDS,
    PLUGIN_ERRORS,
    add,
    builtin_values,
    entries,
    find,
    get,
    load,
    register,
    unknown,
)

if TYPE_CHECKING:
    from assay.core.method import Method, RunKind

__all__ = ["BUILTINS", "BUILTIN_METHODS", "KINDS", "PLUGIN_ERRORS", "add", "build_method", "commands", "entries",
           "find", "get", "item_methods", "load", "method_class", "methods", "register", "register_method",
           "register_workflow", "unknown", "workflows"]

BUILTIN_METHODS = builtin_values("assay.methods")
"""The packages of the built-in methods; each registers its method class on import, as a
plug-in's entry point does."""

_METHOD_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


def _check_kind(cls: type[RunKind], who: str) -> str:
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not _METHOD_NAME.match(name):
        raise TypeError(f"{who}: {cls.__name__} needs a name of letters, digits, - and _")
    if not getattr(cls, "metrics", None):
        raise TypeError(f"{who}: {cls.__name__} declares no metrics")
    return name


def _register_hooks(cls: type[RunKind], name: str, command: str) -> None:
    """The commands hook (``command`` entry) and the review panel (``review:NAME`` view) of a
    method or workflow, from its optional protocols."""
    from assay.core.protocols import Presents, command_line, presentation

    _ENTRIES["command"][command] = command_line(cls).register_commands
    shown = presentation(cls)
    if getattr(shown.review_panel, "__func__", None) is not Presents.review_panel.__func__:  # type: ignore[attr-defined]
        from assay.core.views import ReviewView  # a panel given by the hook: the UI finds it as any view

        view = ReviewView(panel=shown.review_panel, context=shown.review_context)
        _ENTRIES["view"].setdefault(f"review:{name}", view)


def register_method(cls: type[Method]) -> type[Method]:
    """Class decorator: make a :class:`~assay.core.method.Method` known by its ``name`` (the
    ``method`` entry), with its commands (the ``command`` entry ``method:NAME``: the
    ``register_commands`` hook of :class:`~assay.core.protocols.HasCommands`) and its review
    panel (:class:`~assay.core.protocols.Presents`)."""
    from assay.core.method import Method

    if not (isinstance(cls, type) and issubclass(cls, Method)):
        raise TypeError(f"register_method: {cls!r} is not a Method subclass")
    name = _check_kind(cls, "register_method")
    if not isinstance(cls.version, str) or not cls.version:
        raise TypeError(f"register_method: {cls.__name__}.version must be a non-empty string")
    known = _ENTRIES["method"]
    existing = known.get(name)
    if existing is not None and existing is not cls and existing.__qualname__ != cls.__qualname__:
        raise TypeError(f"register_method: two methods are called {name!r} ({existing.__module__}."
                        f"{existing.__qualname__} and {cls.__module__}.{cls.__qualname__})")
    known[name] = cls
    _register_hooks(cls, name, f"method:{name}")
    return cls


W = TypeVar("W", bound=type)


def register_workflow(cls: W) -> W:
    """Class decorator: make a workflow known by its ``name`` (the ``workflow`` entry). A workflow
    is a job with commands of its own (:class:`~assay.core.protocols.HasCommands`) whose runs the
    store keeps under its name, as a method's are, without being a method run over items (the
    rubric audit): its :class:`~assay.core.protocols.Presents` tells export, report and review UI
    how to show them. Its commands are the ``command`` entry ``workflow:NAME``."""
    from assay.core.method import Method, RunKind

    if not (isinstance(cls, type) and issubclass(cls, RunKind)) or issubclass(cls, Method):
        raise TypeError(f"register_workflow: {cls!r} is not a workflow (a RunKind that is not a Method)")
    name = _check_kind(cls, "register_workflow")
    if name in _ENTRIES["method"]:
        raise TypeError(f"register_workflow: {name!r} is already a method")
    _ENTRIES["workflow"][name] = cls
    _register_hooks(cls, name, f"workflow:{name}")
    return cls


def _accept_method(name: str | None, loaded: Any) -> None:
    if isinstance(loaded, type):
        register_method(loaded)


ACCEPT["method"] = _accept_method


def _accept_workflow(name: str | None, loaded: Any) -> None:
    if isinstance(loaded, type):
        register_workflow(loaded)


ACCEPT["workflow"] = _accept_workflow


def methods() -> dict[str, type[Method]]:
    """Every registered method by name (built-in and plug-ins), sorted by name."""
    return entries("method")


def item_methods() -> dict[str, type[Method]]:
    """The methods that run over items: what ``eval``, ``meta`` and ``injection`` offer. Every
    method but a plug-in's class written for 0.2 that only described a workflow's runs
    (``session_view = True``; a workflow is registered with :func:`register_workflow` now)."""
    return {name: cls for name, cls in methods().items() if not getattr(cls, "session_view", False)}


def workflows() -> dict[str, type[RunKind]]:
    """Every registered workflow by name (built-in and plug-ins), sorted by name."""
    return entries("workflow")


def method_class(name: str) -> type[Method]:
    """The method called ``name``, or one line listing the methods there are."""
    cls: type[Method] = get("method", name)
    return cls


def commands() -> dict[str, Callable[[Any, Any], None]]:
    """Every ``register(app, kit)`` hook: each method's ``register_commands`` (``method:NAME``)
    and the ``assay.commands`` plug-ins'."""
    return entries("command")


def build_method(name: str, **options: Any) -> Method:
    """Build a method by name with its options (e.g. ``domain="legal"``, ``beta=2``). An option
    the method does not have, or a value of the wrong type, is a ConfigError naming it (a typo
    must not silently leave the default in place)."""
    from assay.core.protocols import command_line

    cls = method_class(name)
    extras_allowed = {option.name for option in command_line(cls).cli_options()} - set(
        cls.config_model.model_fields if cls.config_model else ())
    extras = {k: options.pop(k) for k in list(options) if k in extras_allowed}
    if cls.config_model is None:
        if options:
            raise ConfigError(f"method {name!r} takes no options, got {', '.join(sorted(options))}")
        return cls.from_options(None, **extras)
    fields = cls.config_model.model_fields
    unknown_options = sorted(set(options) - set(fields))
    if unknown_options:
        raise ConfigError(f"method {name!r} has no option {', '.join(map(repr, unknown_options))}; its options: "
                          f"{', '.join(sorted(set(fields) | extras_allowed))}")
    try:
        config = cls.config_model(**options)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"method {name!r}: {problems}") from None
    return cls.from_options(config, **extras)
