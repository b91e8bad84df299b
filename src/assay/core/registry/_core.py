"""The registry's core (a leaf: it imports nothing of assay but its errors): every method,
judge backend, dataset reader, view and command assay knows, built
in or from a plug-in, is an entry here — a *kind* and a *name* — under one rule.

An entry is registered by a decorator (:func:`register`, or the kind's own spelling:
:func:`register_method`, :func:`assay.judge.backends.register_backend`) or by an entry point of the
kind's group. Third-party packages plug in through entry points, as simonw/llm plug-ins do::

    # the plug-in's pyproject.toml
    [project.entry-points."assay.methods"]
    mymethod = "my_package.module:MyMethod"      # a Method subclass (or a module that registers)

    [project.entry-points."assay.backends"]
    myjudge = "my_package.judge:factory"          # factory(model, options) -> JudgeBackend

    [project.entry-points."assay.datasets"]       # (or "assay.readers")
    mykind = "my_package.data:read"               # read(path) -> MetaSet

    [project.entry-points."assay.commands"]
    mytool = "my_package.cli:register"            # register(app, kit): adds Typer commands

    [project.entry-points."assay.views"]
    review:mymethod = "my_package.views:panel"    # a ReviewView / ReportView (see assay.core.views)

    [project.entry-points."assay.annotations"]
    mynote = "my_package.review:check"            # check(path, value) of human.mynote[k]

    [project.entry-points."assay.workflows"]
    mywork = "my_package.work:MyWorkflow"         # commands storing runs of their own kind

assay's own entries are loaded the same way: :data:`BUILTINS` is written as a plug-in writes its
entry points and goes through the same loader, so the registry names no method. A plug-in that
fails to load is reported on stderr once, naming it, and left out; it does not break the
commands that do not need it. An unknown name is the same one-line error for every kind, listing
what exists.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from functools import cache
from importlib import metadata
from importlib.metadata import EntryPoint, EntryPoints
from types import ModuleType
from typing import Any, TypeVar

from assay.core.errors import ConfigError

T = TypeVar("T")

KINDS: dict[str, tuple[str, ...]] = {
    "method": ("assay.methods",),
    "backend": ("assay.backends",),
    "reader": ("assay.datasets", "assay.readers"),
    "view": ("assay.views",),
    "command": ("assay.commands",),
    "annotation": ("assay.annotations",),
    "workflow": ("assay.workflows",),
}
"""Each kind and the entry-point groups its plug-ins use."""

LABELS = {"method": "method", "backend": "judge provider", "reader": "dataset kind", "view": "view",
          "command": "command", "annotation": "annotation address",
          "workflow": "workflow"}
"""How an error names an entry of each kind."""

BUILTINS = """
[assay.methods]
baselines = assay.methods.baselines
caseaware = assay.methods.caseaware
dece = assay.methods.dece
dice = assay.methods.dice
lemaj = assay.methods.lemaj
lexical = assay.methods.lexical
premise = assay.methods.premise
tournament = assay.methods.tournament

[assay.backends]
llamacpp = assay.judge.backends._builtin:llamacpp
openai = assay.judge.backends._builtin:openai
jury = assay.judge.backends._builtin:jury
scripted = assay.judge.backends._builtin:scripted
litellm = assay.judge.backends._builtin:litellm

[assay.datasets]
ragchecker = assay.data.datasets.adapters:read_ragchecker
mtrag = assay.data.datasets.adapters:read_mtrag
pandalm = assay.data.datasets.adapters:read_pandalm
expertqa = assay.data.datasets.adapters:read_expertqa
haluquestqa = assay.data.datasets.adapters:read_haluquestqa
assay = assay.data.datasets.adapters:read_assay_labelled
annotations = assay.data.datasets.adapters:read_annotated
"""
"""assay's own entries, written as a plug-in's ``entry_points.txt`` and loaded by the same
loader. A method entry names the package that registers its method(s) when imported (its views
and commands too); a backend entry a light factory that imports the backend when first used."""

_ENTRIES: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}
_BUILTIN_NAMES: dict[str, set[str]] = {kind: set() for kind in KINDS}
_loaded: set[str] = set()
PLUGIN_ERRORS: list[str] = []
"""Why each plug-in that failed to load failed (also printed to stderr once)."""

ACCEPT: dict[str, Callable[[str | None, Any], None]] = {}
"""A kind whose entries are checked before they are registered (methods: their declarations)
installs its registration here; it is called with the entry point's name and what it gave."""

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_:.-]*$")


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"no kind {kind!r} in the registry; kinds: {', '.join(KINDS)}")


def register(kind: str, name: str | None = None) -> Callable[[T], T]:
    """Decorator: register ``obj`` as the ``kind`` entry called ``name`` (default: its
    ``name`` attribute, else its ``__name__``). A method class goes through
    :func:`register_method` (its declarations are checked)."""
    _check_kind(kind)

    def decorate(obj: T) -> T:
        if kind in ACCEPT:
            ACCEPT[kind](name, obj)
            return obj
        label = name or getattr(obj, "name", None) or getattr(obj, "__name__", None)
        if not isinstance(label, str) or not _NAME.match(label):
            raise TypeError(f"register({kind!r}): {obj!r} needs a name of letters, digits, -, _, : and .")
        _ENTRIES[kind][label] = obj
        return obj

    return decorate


def add(kind: str, name: str, obj: Any) -> Any:
    """Register ``obj`` as the ``kind`` entry ``name`` (the call form of :func:`register`)."""
    return register(kind, name)(obj)


def entries(kind: str) -> dict[str, Any]:
    """Every entry of ``kind`` by name (built-in and plug-ins), sorted by name."""
    _check_kind(kind)
    load(kind)
    return dict(sorted(_ENTRIES[kind].items()))


def get(kind: str, name: str, *, where: str = "", error: type[Exception] = ConfigError) -> Any:
    """The ``kind`` entry called ``name``, or one line (``error``) naming it and listing what
    exists: ``unknown judge provider 'opnai'; available: jury, litellm, ...``."""
    _check_kind(kind)
    load(kind)
    found = _ENTRIES[kind].get(name)
    if found is None:
        raise error(unknown(kind, name, where))
    return found


def find(kind: str, name: str) -> Any | None:
    """The ``kind`` entry called ``name``, or None."""
    _check_kind(kind)
    load(kind)
    return _ENTRIES[kind].get(name)


def unknown(kind: str, name: str, where: str = "") -> str:
    """The one-line message for an unknown name, the same for every kind."""
    known = ", ".join(sorted(_ENTRIES[kind])) or "none"
    return f"unknown {LABELS[kind]} {name!r}{where}; available: {known}"


@cache
def _installed() -> EntryPoints:
    # Every installed distribution's entry points, read once a process: each entry_points(group=...)
    # call reads every distribution's metadata again (~8 ms here with assay's extras installed, six
    # groups read at every start of the `assay` command).
    found: Any = metadata.entry_points()
    if isinstance(found, EntryPoints):  # Python >= 3.12
        return found
    return EntryPoints(entry for group in found.groups for entry in found.select(group=group))  # 3.11


def entry_points(*, group: str) -> EntryPoints:
    """The installed entry points of ``group`` (plug-ins installed while the process runs are not seen)."""
    return _installed().select(group=group)


def _builtin_entry_points(group: str) -> list[EntryPoint]:
    found: list[EntryPoint] = []
    current = None
    for line in BUILTINS.splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
        elif line and current == group:
            name, _, value = (part.strip() for part in line.partition("="))
            found.append(EntryPoint(name=name, value=value, group=group))
    return found


def _accept(kind: str, name: str, loaded: Any) -> None:
    """What an entry point of ``kind`` gave: a module registers its entries itself on import; a
    method class is registered by its own name; any other object under the entry point's name."""
    if isinstance(loaded, ModuleType):
        return
    if kind in ACCEPT:
        ACCEPT[kind](name, loaded)
        return
    add(kind, name, loaded)


def load(kind: str | None = None) -> None:
    """Load the entries of ``kind`` (every kind when None) once: assay's own, then the
    plug-ins' entry points, through the same loader. A built-in name keeps its entry."""
    for each in ([kind] if kind else list(KINDS)):
        if each in _loaded:
            continue
        _loaded.add(each)
        if each in ("view", "command", "annotation", "workflow"):
            load("method")  # methods register their views, commands, annotation checks and workflows when they load
        if each in ("view", "command"):
            load("workflow")  # and workflows their views and commands
        for group in KINDS[each]:
            for entry in _builtin_entry_points(group):
                _accept(each, entry.name, entry.load())  # a built-in that fails to load is a bug: raise
                _BUILTIN_NAMES[each].add(entry.name)
        for group in KINDS[each]:
            for entry in entry_points(group=group):
                if each != "method" and entry.name in _BUILTIN_NAMES[each]:
                    continue  # a built-in name keeps its entry
                try:
                    _accept(each, entry.name, entry.load())
                except Exception as exc:  # a broken plug-in must not break assay
                    label = "dataset adapter" if each == "reader" else LABELS[each]
                    message = f"assay: plug-in {label} {entry.name!r} ({entry.value}) failed to load: {exc}"
                    PLUGIN_ERRORS.append(message)
                    print(message, file=sys.stderr)


def builtin_values(group: str) -> tuple[str, ...]:
    """The targets of assay's own entries of an entry-point group."""
    return tuple(entry.value for entry in _builtin_entry_points(group))
