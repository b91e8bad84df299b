"""Registry of backend providers: ``provider/model`` names to factories.

Optional providers import their dependencies lazily inside the factory, so assay imports
without them and a missing one fails with a ``pip install`` hint.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

from assay.backends._base import JudgeBackend
from assay.backends._options import BUILTIN_OPTIONS, BackendOptions, validate_options
from assay.errors import ConfigError

BackendFactory = Callable[[str, dict[str, Any]], JudgeBackend]
_PROVIDERS: dict[str, BackendFactory] = {}
_OPTIONS: dict[str, type[BackendOptions]] = {}


def register_backend(provider: str, options: type[BackendOptions] | None = None
                     ) -> Callable[[BackendFactory], BackendFactory]:
    """Decorator: register ``factory(model, options) -> JudgeBackend`` under ``provider``.
    ``options`` (or an ``options`` attribute of the factory): the backend's options, a
    :class:`~assay.backends.BackendOptions` subclass; the factory then receives them parsed."""

    def decorate(factory: BackendFactory) -> BackendFactory:
        _PROVIDERS[provider] = factory
        declared = options if options is not None else getattr(factory, "options", None)
        if isinstance(declared, type) and issubclass(declared, BackendOptions):
            _OPTIONS[provider] = declared
        else:
            _OPTIONS.pop(provider, None)
        return factory

    return decorate


def options_model(provider: str) -> type[BackendOptions] | None:
    """The options a provider declares, or None (a plug-in that declares none)."""
    _load_builtin()
    return _OPTIONS.get(provider)


def _split(name: str) -> tuple[str, str]:
    if "/" not in name:
        raise ConfigError(
            f"judge name {name!r} must look like provider/model, e.g. llamacpp/default or "
            f"openai/gpt-4o-mini; providers: {', '.join(sorted(_PROVIDERS))}")
    provider, model = name.split("/", 1)
    if provider not in _PROVIDERS:
        raise ConfigError(f"unknown judge provider {provider!r} in {name!r}; "
                          f"known: {', '.join(sorted(_PROVIDERS))}")
    return provider, model


def parse_judge_options(name: str, options: dict[str, Any] | None, what: str = "--judge-opt") -> dict[str, Any]:
    """The options given for the judge ``name``, parsed against its backend's options model
    (for a jury, against every member's): typed values, or one line (ConfigError) naming the
    key that is unknown or wrong. Nothing is built, opened or touched."""
    _load_builtin()
    provider, model = _split(name)
    given = dict(options or {})
    if provider == "jury":
        for member in (n.strip() for n in model.split("+")):
            if member and not member.startswith("jury/"):
                parse_judge_options(member, given, what)
        return given
    declared = _OPTIONS.get(provider)
    if declared is None:
        return given
    return validate_options(provider, declared, given, what)


def providers() -> list[str]:
    """Names of the registered providers."""
    _load_builtin()
    return sorted(_PROVIDERS)


def get_backend(name: str, **options: Any) -> JudgeBackend:
    """Build the backend called ``name`` (``provider/model``), e.g. ``llamacpp/default``."""
    _load_builtin()
    provider, model = _split(name)
    return _PROVIDERS[provider](model, parse_judge_options(name, options))


BUILTIN: dict[str, str] = {
    "llamacpp": "assay.backends._llamacpp:factory",
    "openai": "assay.backends._openai:factory",
    "jury": "assay.backends._jury:factory",
    "scripted": "assay.backends._scripted:factory",
    "litellm": "assay.backends._litellm:factory",
}
"""The built-in providers, named the way a plug-in names its own (``module:factory``) and
loaded the same way, when first asked for: their dependencies load only then."""

PLUGIN_ERRORS: list[str] = []
_loaded = False


def _load_builtin() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for provider, target in BUILTIN.items():
        if provider not in _PROVIDERS:
            _PROVIDERS[provider] = _lazy(target)
            _OPTIONS[provider] = BUILTIN_OPTIONS[provider]
    _load_plugins()


def _lazy(target: str) -> BackendFactory:
    def factory(model: str, options: dict[str, Any]) -> JudgeBackend:
        module, _, attribute = target.partition(":")
        real: BackendFactory = getattr(importlib.import_module(module), attribute)
        return real(model, options)

    return factory


def _load_plugins() -> None:
    """Third-party providers: the entry points ``assay.backends``, each a factory
    ``factory(model, options) -> JudgeBackend`` registered under the entry point's name. One
    that fails to load is reported once on stderr and left out."""
    from importlib.metadata import entry_points

    for entry in entry_points(group="assay.backends"):
        try:
            register_backend(entry.name)(entry.load())
        except Exception as exc:
            message = f"assay: plug-in backend {entry.name!r} ({entry.value}) failed to load: {exc}"
            PLUGIN_ERRORS.append(message)
            print(message, file=sys.stderr)
