"""The method contract and its optional protocols (``assay.core.protocols``): a method that
implements only the contract runs, exports, reports and is meta-evaluated with the defaults; a
method written for the single ``Method`` class of 0.2 keeps its hooks; the rubric audit is a
workflow whose runs are shown like a method's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

import assay
from assay.core.method import CallEstimate, ItemResult, Method, ReportSection
from assay.core.protocols import (
    HasCommands,
    MetaEvaluated,
    Presents,
    command_line,
    meta_evaluation,
    presentation,
    run_kind,
    run_presentation,
)
from assay.core.registry import _core, item_methods, methods, register_method, register_workflow, workflows
from assay.core.types import Item
from assay.exchange.export import compact_columns, export_run
from assay.judge.runner import RunnerConfig
from assay.store import Store
from tests.helpers import ITEM

QUIET = RunnerConfig(progress=False)


class Bare(Method):
    """Only the engine's contract: the length of the answer, no judge."""

    name: ClassVar[str] = "bare-contract"
    metrics: ClassVar[tuple[str, ...]] = ("short",)
    needs_judge: ClassVar[bool] = False

    def manifest(self) -> dict[str, Any]:
        return {}

    def check_item(self, item: Item) -> str | None:
        return None

    def estimate(self, items: list[Item]) -> CallEstimate:
        return CallEstimate()

    async def evaluate(self, item: Item, client: Any) -> ItemResult:
        return ItemResult(scores={"short": 1.0 if len(item.response) < 40 else 0.0}, details={"n": len(item.response)})


class OldStyle(Bare):
    """Written against 0.2's single class: every hook an attribute of the method, no protocol."""

    name: ClassVar[str] = "old-style"
    compact_columns: ClassVar[tuple[str, ...]] = ("short", "n")
    cli_main: ClassVar[tuple[str, ...] | None] = ()
    meta_reference: ClassVar[bool] = True

    @classmethod
    def report_section(cls, rows: list[dict[str, Any]]) -> ReportSection | None:
        return ReportSection(section="<p id='old-style'>{{ rows|length }} answers, {{ who }}</p>",
                             context={"who": cls.name})

    @classmethod
    def per_answer_scores(cls, scores: dict[str, Any]) -> list[dict[str, Any]] | None:
        return [dict(scores), dict(scores)]


@pytest.fixture
def registered() -> Iterator[None]:
    """Bare and OldStyle registered for one test, then forgotten."""
    register_method(Bare)
    register_method(OldStyle)
    yield
    for name in ("bare-contract", "old-style"):
        _core._ENTRIES["method"].pop(name, None)
        _core._ENTRIES["command"].pop(f"method:{name}", None)


def test_a_method_of_the_contract_alone_gets_every_protocols_defaults() -> None:
    shown = presentation(Bare)
    assert shown is not Bare and issubclass(shown, Presents)
    assert shown.name == "bare-contract" and shown.metrics == ("short",) and shown.compact() == ("short",)
    assert shown.report_section([]) is None and shown.explain({}, {}) == [] and shown.review_panel() is None
    assert shown.summary_lines([]) == [] and shown.annotation_labels == {} and shown.metric_range("short") == (0, 1)
    meta = meta_evaluation(Bare())  # an object is read through its class
    assert meta.per_answer_scores({"short": 1.0}) == [{"short": 1.0}] and meta.splits_units()
    assert meta.pair_verdict({}) is None and meta.agreement([], []) is None and not meta.meta_reference
    cli = command_line(Bare)
    assert cli.eval_command and cli.cli_main is None and cli.cli_options() == [] and cli.renamed_flags == {}
    assert cli.options_from_cli({"x": 1}) == {"x": 1}


def test_a_built_in_method_is_its_own_protocols() -> None:
    dice = methods()["dice"]
    assert issubclass(dice, Presents) and issubclass(dice, MetaEvaluated) and issubclass(dice, HasCommands)
    assert presentation(dice) is dice and meta_evaluation(dice) is dice and command_line(dice) is dice
    rouge = methods()["rougeL"]  # the lexical methods implement no protocol
    assert not issubclass(rouge, Presents) and presentation(rouge).compact() == rouge.metrics


def test_a_method_of_the_contract_alone_runs_exports_and_reports(registered: None, tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.db")
    result = assay.evaluate([ITEM], "bare-contract", "scripted/none", store=store, runner=QUIET)
    assert [r["short"] for r in result.records()] == [0.0]
    assert compact_columns("bare-contract")[-2:] == ("short", "unscored_reason")
    assert export_run(store, result.run_id, tmp_path / "out.jsonl", "jsonl", compact=True) == 1
    row = json.loads((tmp_path / "out.jsonl").read_text())
    assert list(row) == ["run_id", "id", "system", "status", "query", "response", "short", "unscored_reason"]
    page = result.report(tmp_path / "report.html").read_text()
    assert "bare-contract" in page and "old-style" not in page
    assert "bare-contract" in item_methods()


def test_a_method_written_for_the_single_class_keeps_its_hooks(registered: None, tmp_path: Path) -> None:
    shown = presentation(OldStyle)
    assert shown.compact() == ("short", "n")
    section = shown.report_section([{}])
    assert section is not None and section.context == {"who": "old-style"}  # bound to the method's own class
    assert command_line(OldStyle).cli_main == () and command_line(OldStyle).eval_command
    meta = meta_evaluation(OldStyle)
    assert meta.meta_reference and meta.unit_kind == "item"
    assert meta.per_answer_scores({"short": 1.0}) == [{"short": 1.0}] * 2
    store = Store(tmp_path / "runs.db")
    result = assay.evaluate([ITEM], "old-style", "scripted/none", store=store, runner=QUIET)
    assert compact_columns("old-style")[-3:] == ("short", "n", "unscored_reason")
    assert export_run(store, result.run_id, tmp_path / "out.jsonl", "jsonl", compact=True) == 1
    assert list(json.loads((tmp_path / "out.jsonl").read_text()))[-3:] == ["short", "n", "unscored_reason"]
    assert "<p id='old-style'>1 answers, old-style</p>" in result.report(tmp_path / "r.html").read_text()


def test_a_pair_method_that_does_not_split_its_scores_says_so() -> None:
    class Whole(Bare):
        unit_kind: ClassVar[str] = "pair"

    assert not meta_evaluation(Whole).splits_units() and meta_evaluation(Whole).per_answer_scores({}) is None


def test_the_rubric_audit_is_a_workflow_whose_runs_are_shown_like_a_methods() -> None:
    assert "rubric-audit" not in methods() and "rubric-audit" in workflows()
    audit = run_kind("rubric-audit")
    assert audit is not None and not issubclass(audit, Method)
    shown = run_presentation("rubric-audit")
    assert shown is audit and shown.compact()[0] == "structure" and shown.metric_range("structure") == (0, 5)
    assert shown.explain({}, {"flags": {"atomic": False, "clear": True}}) == ["fails the design property atomic"]
    assert compact_columns("rubric-audit")[6:8] == ("structure", "alpha")
    assert "rubric" in command_line(audit).renamed_flags
    assert _core.find("command", "workflow:rubric-audit") is not None
    assert _core.find("view", "review:rubric-audit") is not None
    assert run_presentation("not-installed") is None and run_kind("dece") is methods()["dece"]


def test_a_workflow_is_not_a_method() -> None:
    with pytest.raises(TypeError, match="is not a workflow"):
        register_workflow(Bare)
    with pytest.raises(TypeError, match="already a method"):
        register_workflow(type("Dece", (Presents,), {"name": "dece", "metrics": ("x",)}))
