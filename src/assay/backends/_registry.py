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
from assay.errors import ConfigError

BackendFactory = Callable[[str, dict[str, Any]], JudgeBackend]
_PROVIDERS: dict[str, BackendFactory] = {}


def register_backend(provider: str) -> Callable[[BackendFactory], BackendFactory]:
    """Decorator: register ``factory(model, options) -> JudgeBackend`` under ``provider``."""

    def decorate(factory: BackendFactory) -> BackendFactory:
        _PROVIDERS[provider] = factory
        return factory

    return decorate


def providers() -> list[str]:
    """Names of the registered providers."""
    _load_builtin()
    return sorted(_PROVIDERS)


def get_backend(name: str, **options: Any) -> JudgeBackend:
    """Build the backend called ``name`` (``provider/model``), e.g. ``llamacpp/default``."""
    _load_builtin()
    if "/" not in name:
        raise ConfigError(
            f"judge name {name!r} must look like provider/model, e.g. llamacpp/default or "
            f"openai/gpt-4o-mini; providers: {', '.join(sorted(_PROVIDERS))}")
    provider, model = name.split("/", 1)
    factory = _PROVIDERS.get(provider)
    if factory is None:
        raise ConfigError(f"unknown judge provider {provider!r} in {name!r}; "
                          f"known: {', '.join(sorted(_PROVIDERS))}")
    return factory(model, dict(options))


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
        _PROVIDERS.setdefault(provider, _lazy(target))
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
