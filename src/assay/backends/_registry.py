"""Registry of backend providers: ``provider/model`` names to factories.

Optional providers import their dependencies lazily inside the factory, so assay imports
without them and a missing one fails with a ``pip install`` hint.
"""

from __future__ import annotations

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


_loaded = False


def _load_builtin() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    # Importing registers them; their heavy dependencies load only when a backend is built.
    from assay.backends import _jury, _llamacpp, _openai, _scripted  # noqa: F401
    from assay.registry import load_backend_plugins

    load_backend_plugins()  # third-party providers (entry points ``assay.backends``)
