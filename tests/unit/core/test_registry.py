"""The method registry: declarations, options, versions."""

from __future__ import annotations

import asyncio
from typing import ClassVar

import pytest

import assay
from assay.core.errors import ConfigError
from assay.core.registry import build_method, method_class, methods, register_method
from assay.engine import aevaluate
from assay.judge.runner import RunnerConfig
from assay.methods.lexical import RougeL
from assay.store import Store
from tests.helpers import ITEM

QUIET = RunnerConfig(progress=False)


def test_every_built_in_method_is_registered_with_its_declarations() -> None:
    names = set(methods())
    assert {"dece", "caseaware", "pointwise", "geval", "claims", "rougeL", "bleu"} <= names
    for cls in methods().values():
        assert cls.version and cls.metrics
        assert cls.primary_metric is None or cls.primary_metric in cls.metrics
    assert method_class("dece").meta_reference


def test_options_are_checked_by_the_config_model() -> None:
    with pytest.raises(ConfigError, match="has no option 'betta'"):
        build_method("dece", betta=2)
    with pytest.raises(ConfigError, match="beta"):
        build_method("dece", beta=float("inf"))
    with pytest.raises(ConfigError, match="takes no options"):
        build_method("rougeL", domain="legal")
    with pytest.raises(ConfigError, match="unknown method 'decee'"):
        build_method("decee")


def test_a_bad_declaration_is_refused() -> None:
    class Nameless(RougeL):
        name: ClassVar[str] = "no spaces allowed"

    with pytest.raises(TypeError, match="needs a name"):
        register_method(Nameless)


def test_another_method_version_starts_its_own_run_and_says_so(tmp_path) -> None:
    """The same work done by another version of the method is not continued (it scored
    differently): this version starts its own run, and the result's notes say why."""
    store = Store(tmp_path / "run.db")
    first = assay.evaluate([ITEM], RougeL(), "scripted/none", store=store, runner=QUIET)

    class RougeL3(RougeL):
        version: ClassVar[str] = "3"

    again = assay.evaluate([ITEM], RougeL3(), "scripted/none", store=store, runner=QUIET)
    assert again.run_id != first.run_id and not again.was_finished
    assert any("made by rougeL version 2; this is version 3" in note for note in again.notes)
    assert store.run(again.run_id).manifest["method_version"] == "3"
    assert store.run(first.run_id).status == "finished"  # the old run is kept as it was
    third = assay.evaluate([ITEM], RougeL3(), "scripted/none", store=store, runner=QUIET)
    assert third.run_id == again.run_id and third.was_finished and not third.notes


def test_a_caller_that_reuses_runs_starts_the_new_version_beside_the_old(tmp_path) -> None:
    """meta and the injection audit resume "if the run is there": a new method version starts
    its own run (another id) instead of being refused, and the old run stays as it was."""
    store = Store(tmp_path / "run.db")
    first = assay.evaluate([ITEM], RougeL(), "scripted/none", store=store, runner=QUIET)

    class RougeL3(RougeL):
        version: ClassVar[str] = "3"

    again = asyncio.run(aevaluate([ITEM], RougeL3(), "scripted/none", store=store, runner=QUIET, resume=True,
                                  version_check=False))
    assert again.run_id != first.run_id and len(store.list_runs()) == 2


def test_one_registry_one_rule_for_every_kind() -> None:
    """Methods, judges, dataset readers, views and commands are entries of one registry; assay's
    own are loaded by the plug-ins' entry-point loader; an unknown name is one line listing what
    there is, whatever the kind."""
    from assay.core import registry
    from assay.core.errors import InputError
    from assay.data.datasets.adapters import adapters
    from assay.judge.backends import providers

    assert {"llamacpp", "openai", "jury", "scripted", "litellm"} <= set(providers())
    assert {"ragchecker", "mtrag", "pandalm", "expertqa", "haluquestqa", "assay", "annotations"} <= set(adapters())
    assert "method:lemaj" in registry.commands() and "method:dece" in registry.commands()
    assert {"review:lemaj", "review:dece", "grades", "report:rubric"} <= set(registry.entries("view"))
    for kind, label in (("method", "method"), ("backend", "judge provider"), ("reader", "dataset kind"),
                        ("view", "view")):
        with pytest.raises(ConfigError, match=rf"^unknown {label} 'nope'; available: "):
            registry.get(kind, "nope")
    with pytest.raises(InputError, match=r"unknown dataset kind 'nope'; available: .*ragchecker"):
        registry.get("reader", "nope", error=InputError)
    with pytest.raises(ConfigError, match=r"unknown judge provider 'nope' in 'nope/x'; available: .*scripted"):
        assay.judge.backends.get_backend("nope/x")


def test_a_plugin_entry_goes_through_the_loader_the_built_ins_use(monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry point of a kind's group is registered by the same loader as assay's own entries; one
    that fails to load is named on stderr and left out."""
    from importlib.metadata import EntryPoint

    from assay.core.registry import _core

    plugin = [EntryPoint("toy-note", "assay.store.human:grade_score", "assay.annotations"),
              EntryPoint("broken", "assay.no_such_module:x", "assay.annotations")]
    monkeypatch.setattr(_core, "entry_points", lambda group: plugin if group == "assay.annotations" else [])
    saved = dict(_core._ENTRIES["annotation"])
    monkeypatch.setattr(_core, "_loaded", set(_core._loaded) - {"annotation"})
    try:
        found = _core.entries("annotation")
        assert found["toy-note"].__name__ == "grade_score" and "broken" not in found
        assert {"split", "merge", "missing"} <= set(found)  # the built-in (LeMAJ's) are there too
        assert any("'broken'" in message for message in _core.PLUGIN_ERRORS)
    finally:
        _core._ENTRIES["annotation"].clear()
        _core._ENTRIES["annotation"].update(saved)
