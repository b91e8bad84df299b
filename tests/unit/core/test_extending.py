"""docs/extending.md's one-file method runs as written: its method, judge and dataset reader are
registered by their decorators and work end to end (the method with the scripted judge, through
the engine and a run store)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.core.registry import _core
from assay.data.datasets.adapters import read_labelled
from assay.judge.backends import ScriptedBackend
from assay.judge.runner import RunnerConfig
from assay.store import Store

PAGE = Path(__file__).parents[3] / "docs" / "extending.md"


def python_blocks() -> list[str]:
    """The ```python blocks of the section "A method, in one file", in order."""
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("## A method, in one file"):]
    section = section[:section.index("\n## ", 1)] if "\n## " in section[1:] else section
    return re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)


@pytest.fixture
def registry() -> Iterator[None]:
    """The page's entries are registered for this test only."""
    _core.load()
    saved = {kind: dict(entries) for kind, entries in _core._ENTRIES.items()}
    yield
    for kind, entries in _core._ENTRIES.items():
        entries.clear()
        entries.update(saved[kind])


def test_the_one_file_method_of_the_extending_page_runs(registry: None, tmp_path: Path) -> None:
    definition, usage = python_blocks()[:2]
    namespace: dict[str, Any] = {"__name__": "extending_example"}
    exec(compile(definition, str(PAGE), "exec"), namespace)
    assert "yesno" in assay.methods.methods() and "alwaysyes" in assay.judge.backends.providers()

    items = [{"id": "a", "query": "Capital of France?", "response": "Paris."},
             {"id": "b", "query": "Capital of Peru?", "response": "I like turtles."},
             {"id": "c", "query": "Capital of Chile?", "response": "Santiago."}]
    judge = ScriptedBackend(rules=[{"match": "Paris", "responses": ['{"answer": "yes"}'], "repeat": True},
                                   {"match": "turtles", "responses": ['{"answer": "no"}'], "repeat": True},
                                   {"match": "Santiago", "responses": ["not JSON at all"], "repeat": True}])
    store = Store(tmp_path / "run.db")
    result = assay.evaluate(items, "yesno", judge, store=store, runner=RunnerConfig(progress=False, max_retries=0),
                            strictness=2)
    rows = {row.items[0]["id"]: row for row in result.rows}
    assert rows["a"].scores == {"addresses": 1.0} and rows["b"].scores == {"addresses": 0.0}
    assert rows["c"].scores == {"addresses": None} and rows["c"].unscored  # unparseable: Unscored, no default
    assert store.run(result.run_id).manifest["method_manifest"]["config"] == {"strictness": 2}

    printed: list[Any] = []
    exec(compile(usage, str(PAGE), "exec"), {"print": printed.append})  # the page's usage, with its judge
    assert printed == [1.0]

    (tmp_path / "toy.tsv").write_text("Capital of France?\tParis.\t1\nCapital of Peru?\tLima.\t0\n", encoding="utf-8")
    labelled = read_labelled("toyqa", tmp_path / "toy.tsv")
    assert [u.human for u in labelled.units] == [{"score": [1.0]}, {"score": [0.0]}]
