"""Judge providers in the registry: ``provider/model`` names to factories (the ``backend``
entries of :mod:`assay.core.registry`, plug-ins' ``assay.judge.backends`` entry points included).

Optional providers import their dependencies lazily inside the factory, so assay imports
without them and a missing one fails with a ``pip install`` hint.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from assay.core.errors import ConfigError
from assay.core.registry import _core as registry
from assay.judge.backends._base import JudgeBackend
from assay.judge.backends._options import BackendOptions, validate_options

BackendFactory = Callable[[str, dict[str, Any]], JudgeBackend]
_PROVIDERS: dict[str, BackendFactory] = registry._ENTRIES["backend"]
"""The registry's ``backend`` entries (one dict: a test may replace a provider in it)."""
PLUGIN_ERRORS = registry.PLUGIN_ERRORS


def register_backend(provider: str, options: type[BackendOptions] | None = None
                     ) -> Callable[[BackendFactory], BackendFactory]:
    """Decorator: register ``factory(model, options) -> JudgeBackend`` under ``provider``.
    ``options`` (or an ``options`` attribute of the factory): the backend's options, a
    :class:`~assay.judge.backends.BackendOptions` subclass; the factory then receives them parsed."""

    def decorate(factory: BackendFactory) -> BackendFactory:
        if options is not None:
            factory.options = options  # type: ignore[attr-defined]
        registry.add("backend", provider, factory)
        return factory

    return decorate


def options_model(provider: str) -> type[BackendOptions] | None:
    """The options a provider declares, or None (a plug-in that declares none)."""
    declared = getattr(registry.find("backend", provider), "options", None)
    return declared if isinstance(declared, type) and issubclass(declared, BackendOptions) else None


def _split(name: str) -> tuple[str, str]:
    if "/" not in name:
        raise ConfigError(
            f"judge name {name!r} must look like provider/model, e.g. llamacpp/default or "
            f"openai/gpt-4o-mini; providers: {', '.join(providers())}")
    provider, model = name.split("/", 1)
    registry.get("backend", provider, where=f" in {name!r}")
    return provider, model


def parse_judge_options(name: str, options: dict[str, Any] | None, what: str = "--judge-opt") -> dict[str, Any]:
    """The options given for the judge ``name``, parsed against its backend's options model
    (for a jury, against every member's): typed values, or one line (ConfigError) naming the
    key that is unknown or wrong. Nothing is built, opened or touched."""
    provider, model = _split(name)
    given = dict(options or {})
    if provider == "jury":
        for member in (n.strip() for n in model.split("+")):
            if member and not member.startswith("jury/"):
                parse_judge_options(member, given, what)
        return given
    declared = options_model(provider)
    if declared is None:
        return given
    return validate_options(provider, declared, given, what)


def providers() -> list[str]:
    """Names of the registered providers."""
    return list(registry.entries("backend"))


def get_backend(name: str, /, **options: Any) -> JudgeBackend:
    """Build the backend called ``name`` (``provider/model``), e.g. ``llamacpp/default``."""
    provider, model = _split(name)
    return _PROVIDERS[provider](model, parse_judge_options(name, options))


def check_judge(name: str, options: dict[str, Any] | None = None) -> None:
    """Everything a run checks of a judge name before it calls the judge, without building it:
    the provider, the options, and for ``llamacpp/`` the model file. One line (ConfigError)."""
    parse_judge_options(name, options)
    provider, model = _split(name)
    members = [m.strip() for m in model.split("+")] if provider == "jury" else [name]
    for member in members:
        if member.startswith("openai/"):
            from assay.judge.backends._openai import endpoints

            endpoints(member.split("/", 1)[1], dict(options or {}))
        elif member.startswith("litellm/") and (options or {}).get("api_base"):
            from assay.judge.backends._openai import check_url

            check_url(str((options or {})["api_base"]), member)
        if member.startswith("llamacpp/"):
            from assay.judge.backends._llamacpp import NAMED_MODELS, check_model_name

            named = member.split("/", 1)[1]
            if named not in NAMED_MODELS:
                check_model_name(named, (options or {}).get("model_path"))
        elif member != name and member:
            check_judge(member, options)

