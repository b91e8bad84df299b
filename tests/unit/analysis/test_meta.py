"""Dataset adapters, lexical baselines and the meta-evaluation table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps
from typer.testing import CliRunner

import assay
from assay.analysis.meta import markdown_table, meta
from assay.cli import app
from assay.core.errors import ConfigError, InputError
from assay.core.report_models import MetaReport
from assay.data.datasets.adapters import read_labelled, read_ragchecker
from assay.judge.backends import ScriptedBackend
from assay.judge.runner import RunnerConfig

SLICE = Path(__file__).parents[2] / "data" / "ragchecker_slice.json"


def test_ragchecker_pairs_keep_both_annotators() -> None:
    metaset = read_ragchecker(SLICE)
    assert metaset.pairwise and len(metaset.units) == 6 and len(metaset.items) == 12
    first = metaset.units[0]
    assert first.keys == ("rc28::bm25_llama3_8b", "rc28::e5_mistral_gpt_4")
    assert first.human == {"correctness": [-2.0, -2.0], "completeness": [0.0, 0.0], "overall": [-1.0, -1.0]}
    assert metaset.units[5].human["correctness"] == [1.0, 2.0]
    item = metaset.items[0]
    assert item.reference is not None and item.reference.required.startswith("Snuff (song)")


def test_subset_is_reproducible() -> None:
    metaset = read_ragchecker(SLICE)
    a, b = metaset.subset(3, seed=1), metaset.subset(3, seed=1)
    assert [u.id for u in a.units] == [u.id for u in b.units] and len(a.items) == 6
    assert metaset.subset(None) is metaset
    assert {u.id for u in a.units} < {u.id for u in metaset.subset(5, seed=1).units}  # nested


def test_bad_ragchecker_file_names_record_and_field(tmp_path: Path) -> None:
    records = json.loads(SLICE.read_text())
    del records[3]["model2"]["response"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(records))
    with pytest.raises(InputError, match=r"bad.json, field 'response': record 4 has no 'response'"):
        read_ragchecker(bad)
    with pytest.raises(InputError, match="unknown dataset kind 'nope'"):
        read_labelled("nope", bad)
    records = json.loads(SLICE.read_text())
    records[0]["model1"]["response"] = None  # a system with no answer: empty text, and a note saying so
    records[1]["model1"]["response"] = None
    bad.write_text(json.dumps(records))
    metaset = read_ragchecker(bad)
    assert metaset.items[0].response == "" and metaset.notes == [
        "2 null response(s) read as empty text: record 1 model1, record 2 model1"]


def test_lexical_baselines_score_against_the_reference() -> None:
    items = [{"id": "a", "query": "q", "response": "the cat sat on the mat", "reference": "the cat sat on the mat"},
             {"id": "b", "query": "q", "response": "dogs bark loudly", "reference": "the cat sat on the mat"}]
    for method in ("rougeL", "bleu"):
        rows = assay.evaluate(items, method, runner=RunnerConfig(progress=False)).records()
        assert rows[0][method] == pytest.approx(1.0) and rows[1][method] < 0.2
        assert rows[0]["judge_calls"] == 0
        # an empty answer shares nothing with the reference: 0, not Unscored
        empty = assay.evaluate([{**items[0], "response": " "}], method, runner=RunnerConfig(progress=False)).records()
        assert empty[0][method] == 0.0 and empty[0]["status"] == "scored" and empty[0]["empty_answer"] is True


def test_pairwise_meta_repeats_the_difference_per_annotator() -> None:
    metaset = read_ragchecker(SLICE)
    result = meta(metaset, ["rougeL"], "none/unused", resamples=200, seed=0)
    rows = {r["human_label"]: r for r in result["rows"]}
    assert set(rows) == {"correctness", "completeness", "overall"}
    # recompute from the per-unit records, as a user of meta.json would
    xs, ys = [], []
    for record in result["items"]:
        for value in record["human"]["completeness"]:
            xs.append(record["score_b"] - record["score_a"])
            ys.append(value)
    assert rows["completeness"]["n"] == len(xs) == 12
    assert rows["completeness"]["pearson"] == pytest.approx(sps.pearsonr(xs, ys).statistic)
    assert rows["completeness"]["spearman"] == pytest.approx(sps.spearmanr(xs, ys).statistic)
    assert result["signature"]["judge"] == "none" and result["signature"]["n"] == 6
    assert "| rougeL | completeness |" in markdown_table(result)


def test_pointwise_meta_uses_the_annotator_mean(tmp_path: Path) -> None:
    lines = []
    for i, (response, human) in enumerate([("the cat sat on the mat", [4, 5]), ("the cat sat", [3, 3]),
                                           ("a dog", [1, 2]), ("the mat", 2)]):
        lines.append(json.dumps({"id": f"q{i}", "query": "q", "response": response,
                                 "reference": "the cat sat on the mat", "human": {"quality": human}}))
    path = tmp_path / "labelled.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = meta(read_labelled("assay", path), ["bleu", "rougeL"], "none/unused", resamples=100)
    row = next(r for r in result["rows"] if r["method"] == "rougeL")
    scores = [r["score"] for r in result["items"] if r["method"] == "rougeL"]
    assert row["pearson"] == pytest.approx(sps.pearsonr(scores, [4.5, 3, 1.5, 2]).statistic)
    assert row["pearson_ci"] is not None and np.isfinite(row["pearson_ci"]).all()


def test_meta_cli_writes_meta_json(tmp_path: Path) -> None:
    out = tmp_path / "meta.json"
    result = CliRunner().invoke(app, ["meta", "ragchecker", str(SLICE), "--method", "rougeL", "--method", "bleu",
                                      "--limit", "4", "--seed", "1", "--resamples", "50", "--output", str(out)])
    assert result.exit_code == 0, result.output
    saved = json.loads(out.read_text())
    assert {r["method"] for r in saved["rows"]} == {"rougeL", "bleu"}
    assert all(set(r) >= {"method", "human_label", "pearson", "pearson_p", "pearson_ci", "spearman",
                          "spearman_p", "kendall", "n", "unscored"} for r in saved["rows"])
    assert saved["dataset"]["units"] == 4 and "subset of 4 of 6 units, seed 1" in saved["dataset"]["notes"]
    # the typed report writes the keys meta.json always had, in their order, and reads back
    assert list(saved) == ["generator", "signature", "dataset", "runs", "methods", "rows", "comparisons",
                           "human_agreement", "system_ranking", "verdict_agreement", "items"]
    assert list(saved["runs"]["bleu"]) == ["run_id", "judge", "unscored_items", "judge_calls", "wall_s"]
    typed = MetaReport.model_validate({k: v for k, v in saved.items() if k != "generator"})
    assert typed.dataset.units == 4 and typed.runs["bleu"].judge == "none"
    assert typed.to_dict() == {k: v for k, v in saved.items() if k != "generator"}
    assert "method=rougeL+bleu" in result.output
    # the run store makes a re-run free and identical
    again = CliRunner().invoke(app, ["meta", "ragchecker", str(SLICE), "--method", "rougeL", "--method", "bleu",
                                     "--limit", "4", "--seed", "1", "--resamples", "50", "--output", str(out)])
    assert again.exit_code == 0 and json.loads(out.read_text())["rows"] == saved["rows"]


MTRAG = Path(__file__).parents[2] / "data" / "mtrag_slice.json"


def test_mtrag_items_carry_history_passages_and_three_raters() -> None:
    metaset = read_labelled("mtrag", MTRAG)
    assert not metaset.pairwise and len(metaset.items) == 6 and len(metaset.units) == 6
    turn2 = next(i for i in metaset.items if i.id.endswith("<::>2"))
    assert [t.role for t in turn2.history] == ["user", "assistant"]
    assert turn2.contexts and turn2.reference is not None
    assert turn2.metadata["conversation_id"] == turn2.id.split("<::>")[0]
    unit = metaset.units[0]
    assert set(unit.human) == {"faithfulness", "appropriateness", "completeness", "naturalness", "win_rate"}
    assert all(v in (1.0, 2.0, 3.0, 4.0) for v in unit.human["faithfulness"]) and len(unit.human["faithfulness"]) == 3


def test_caseaware_meta_on_mtrag_with_a_scripted_judge() -> None:
    from tests.unit.methods.caseaware.test_caseaware import turn_json

    metaset = read_labelled("mtrag", MTRAG)
    scores = [0.2, 0.5, 0.7, 0.9, 0.95, 0.4]
    backend = ScriptedBackend([turn_json(s) for s in scores])
    result = meta(metaset, ["caseaware"], backend, resamples=50)
    row = next(r for r in result["rows"] if r["method"] == "caseaware.s_final" and r["human_label"] == "win_rate")
    assert row["n"] == 6 and row["unscored"] == 0
    assert {r["human_label"] for r in result["rows"]} == set(metaset.labels)


DATA = Path(__file__).parents[2] / "data"


def test_pandalm_preferences_per_annotator_and_upstream_booleans() -> None:
    metaset = read_labelled("pandalm", DATA / "pandalm_slice.json")
    assert metaset.pairwise and len(metaset.units) == 4
    assert metaset.units[0].human == {"preference": [1.0, 1.0, 1.0]}  # all three chose response2
    assert metaset.units[3].human == {"preference": [-1.0, -1.0, 0.0]}
    boolean = next(i for i in metaset.items if i.id == "pandalm157" and i.metadata["side"] == "response1")
    assert boolean.response == "True" and "record 4 response1: True" in metaset.notes[0]


def test_expertqa_claim_shares_and_usefulness() -> None:
    metaset = read_labelled("expertqa", DATA / "expertqa_slice.jsonl")
    assert len(metaset.items) == 2
    unit, item = metaset.units[0], metaset.items[0]
    claims = item.metadata["claims"]
    judged = [c for c in claims if c["correctness"]]
    assert unit.human["correct_share"] == [sum(c["correctness"] in ("Definitely correct", "Probably correct")
                                               for c in judged) / len(judged)]
    assert unit.human["usefulness"] == [2.0] and item.reference is not None


def test_haluquestqa_spans_and_preferences() -> None:
    spans = read_labelled("haluquestqa", DATA / "haluquestqa_spans_slice.tsv")
    assert spans.pairwise and len(spans.units) == 3 and "factuality" in spans.labels
    first = spans.units[0]
    assert first.human["preference"] == [1.0] and first.human["factuality"] == [pytest.approx(0.14)]
    assert spans.items[0].metadata["expert_spans"]["factuality"]["label"] == "['answer1']"
    prefs = read_labelled("haluquestqa", DATA / "haluquestqa_preferences_slice.tsv")
    for unit in prefs.units:
        preferred = next(i for i in prefs.items if i.key in unit.keys and i.metadata["role"] == "preferred")
        assert unit.human["preference"] == [1.0 if preferred.key == unit.keys[1] else -1.0]
    assert read_labelled("haluquestqa", DATA / "haluquestqa_preferences_slice.tsv").units == prefs.units


def test_pairwise_rows_report_agreement() -> None:
    result = meta(read_ragchecker(SLICE), ["rougeL"], "none/unused", resamples=50)
    row = next(r for r in result["rows"] if r["human_label"] == "overall")
    decided = [(rec["score_b"] - rec["score_a"], v) for rec in result["items"] for v in rec["human"]["overall"] if v]
    expected = sum(1.0 if d * v > 0 else 0.5 if d == 0 else 0.0 for d, v in decided) / len(decided)
    assert row["agreement"] == pytest.approx(expected) and row["agreement_n"] == len(decided)


def test_comparisons_pair_two_metrics_on_the_same_units() -> None:
    result = meta(read_ragchecker(SLICE), ["rougeL", "bleu"], "none/unused", resamples=200, seed=0)
    rows = {(r["method"], r["human_label"]): r for r in result["rows"]}
    comparisons = {(c["method"], c["human_label"]): c for c in result["comparisons"]}
    assert set(comparisons) == {("bleu", label) for label in ("correctness", "completeness", "overall")}
    c = comparisons[("bleu", "overall")]
    assert c["versus"] == "rougeL"  # no DeCE in this run: the first metric is the reference
    assert c["r_versus"] == pytest.approx(rows[("rougeL", "overall")]["pearson"])
    assert c["r_method"] == pytest.approx(rows[("bleu", "overall")]["pearson"])
    assert c["delta"] == pytest.approx(c["r_versus"] - c["r_method"]) and c["n"] == rows[("bleu", "overall")]["n"]
    lo, hi = c["delta_ci"]
    assert lo <= c["delta"] <= hi
    assert "Δ Pearson r, rougeL minus each other metric" in markdown_table(result)
    other = meta(read_ragchecker(SLICE), ["rougeL", "bleu"], "none/unused", resamples=200, seed=0, versus="bleu")
    assert {c["method"] for c in other["comparisons"]} == {"rougeL"}


def test_pairwise_cis_resample_pairs_not_annotator_points() -> None:
    result = meta(read_ragchecker(SLICE), ["rougeL"], "none/unused", resamples=300, seed=0)
    row = next(r for r in result["rows"] if r["human_label"] == "completeness")
    xs, ys, groups = [], [], []
    for record in result["items"]:
        for value in record["human"]["completeness"]:
            xs.append(record["score_b"] - record["score_a"])
            ys.append(value)
            groups.append(record["id"])
    from assay.analysis.stats import correlation
    assert row["pearson_ci"] == list(correlation(xs, ys, resamples=300, seed=0, groups=groups).ci)
    assert row["pearson_ci"] != list(correlation(xs, ys, resamples=300, seed=0).ci)


def test_unknown_versus_metric_stops_before_any_call(tmp_path: Path) -> None:
    judge = ScriptedBackend([])
    with pytest.raises(InputError, match=r"--versus 'dece.f2' is not one of the metrics of this run: rougeL, "
                                         r"pointwise"):
        meta(read_ragchecker(SLICE), ["rougeL", "pointwise"], judge, versus="dece.f2")
    assert judge.calls == []


def test_human_agreement_is_the_annotators_ceiling(tmp_path: Path) -> None:
    import krippendorff

    metaset = read_ragchecker(SLICE)
    result = meta(metaset, ["rougeL"], "none/unused", resamples=100)
    row = next(r for r in result["human_agreement"] if r["human_label"] == "correctness")
    pairs = [u.human["correctness"] for u in metaset.units]
    assert row["units"] == 6 and row["raters_max"] == 2
    data = np.array(pairs, dtype=float).T
    assert row["alpha_interval"] == pytest.approx(krippendorff.alpha(reliability_data=data,
                                                                     level_of_measurement="interval"))
    assert row["pearson_1v2"] == pytest.approx(sps.pearsonr(data[0], data[1]).statistic)
    assert "Agreement between the annotators themselves" in markdown_table(result)
    # one rating per unit: nothing to agree on, and the row says so
    path = tmp_path / "single.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}", "query": "q", "response": r, "reference": "a b c",
                                        "human": {"quality": i}}) + "\n" for i, r in enumerate(["a b", "a", "c"])))
    single = meta(read_labelled("assay", path), ["rougeL"], "none/unused", resamples=50)
    assert single["human_agreement"] == [{"human_label": "quality", "units": 0, "raters_max": 0,
                                          "alpha_interval": None, "alpha_ordinal": None, "pearson_1v2": None,
                                          "pearson_1v2_ci": None,
                                          "note": "undefined: fewer than 2 units with two ratings, or a single value"}]


def test_meta_cli_method_options_are_checked_before_anything_runs(tmp_path: Path) -> None:
    out = tmp_path / "meta.json"
    base = ["meta", "ragchecker", str(SLICE), "--method", "rougeL", "--method", "dece", "--output", str(out)]
    typo = CliRunner().invoke(app, [*base, "--method-opt", "dece.domian=legal"])
    assert isinstance(typo.exception, ConfigError) and "method 'dece' has no option 'domian'" in str(typo.exception)
    wrong_type = CliRunner().invoke(app, [*base, "--method-opt", "dece.beta=two"])
    assert isinstance(wrong_type.exception, ConfigError)
    assert "method 'dece': beta: Input should be a valid number" in str(wrong_type.exception)
    not_run = CliRunner().invoke(app, [*base, "--method-opt", "geval.weighting=none"])
    assert not_run.exit_code != 0 and "METHOD one of the --method values (rougeL, dece)" in not_run.output
    assert not out.exists() and not out.with_suffix(".db").exists()  # nothing half-written


def test_meta_passes_method_options_to_the_method() -> None:
    judge = ScriptedBackend(rules=[{"match": ".", "responses": ["not json"], "repeat": True}])
    result = meta(read_ragchecker(SLICE).subset(1), ["geval"], judge, resamples=0,
                  method_options={"geval": {"weighting": "none", "beta": "1"}})
    config = result["methods"]["geval"]["config"]
    assert config["weighting"] == "none" and config["beta"] == 1.0
    assert result["runs"]["geval"]["unscored_items"] == 2  # unparseable output: unscored, never a default


def test_report_shows_the_meta_evaluation_of_a_pairwise_set(tmp_path: Path) -> None:
    out = tmp_path / "meta.json"
    ran = CliRunner().invoke(app, ["meta", "ragchecker", str(SLICE), "-m", "bleu", "-m", "rougeL",
                                   "--resamples", "50", "--output", str(out)])
    assert ran.exit_code == 0, ran.output
    saved = json.loads(out.read_text())
    html_path = tmp_path / "report.html"
    made = CliRunner().invoke(app, ["report", str(out.with_suffix(".db")), "-o", str(html_path), "--meta", str(out)])
    assert made.exit_code == 0, made.output
    html = html_path.read_text()
    assert "Meta-evaluation: agreement with human labels (ragchecker, 6 labelled units, pairwise)" in html
    row = next(r for r in saved["rows"] if r["method"] == "rougeL" and r["human_label"] == "completeness")
    # the latest run in the store is rougeL's: its rows are bold, with the value from meta.json
    assert (f'<tr style="font-weight:bold"><td>rougeL</td><td>completeness</td><td class="num">'
            f'{row["pearson"]:.3f}</td>') in html
    assert "Δ Pearson r: bleu minus each other metric" in html and "The annotators among themselves" in html
    assert "System level: do the metrics order the systems as the humans do?" in html
    bad = tmp_path / "not-meta.json"
    bad.write_text('{"rows": []}')
    html_path.unlink()
    refused = CliRunner().invoke(app, ["report", str(out.with_suffix(".db")), "-o", str(html_path), "--meta",
                                       str(bad)])
    assert isinstance(refused.exception, InputError) and "no 'signature'" in str(refused.exception)
    assert not html_path.exists()


def test_system_ranking_compares_bradley_terry_orders(tmp_path: Path) -> None:
    from assay.analysis.stats import bradley_terry

    # four systems, humans prefer d > c > b > a in every pair; the "metric" is the response length
    order = ["a", "b", "c", "d"]
    records = []
    for i, (x, y) in enumerate([(0, 1), (1, 2), (2, 3), (0, 2), (1, 3), (0, 3)]):
        first, second = (order[x], order[y]) if i % 2 else (order[y], order[x])
        label = 2 if order.index(second) > order.index(first) else -2
        for annotator_label in (label, label):
            records.append({"instance_id": i, "dataset": "t", "query_id": str(i), "query": f"q{i}",
                            "gt_answer": "w " * 8,
                            "model1": {"model_name": first, "response": "w " * (1 + 2 * order.index(first))},
                            "model2": {"model_name": second, "response": "w " * (1 + 2 * order.index(second))},
                            "correctness_label": annotator_label, "completeness_label": -annotator_label,
                            "overall_label": 0})
    path = tmp_path / "pairs.json"
    path.write_text(json.dumps(records))
    result = meta(read_ragchecker(path), ["rougeL"], "none/unused", resamples=0)
    ranking = {r["human_label"]: r for r in result["system_ranking"]["rows"]}
    human = result["system_ranking"]["human"]["correctness"]["ratings"]
    assert sorted(human, key=lambda s: -human[s]) == ["d", "c", "b", "a"]
    # ROUGE-L against an 8-word reference grows with length here, so it orders them as the humans do
    assert ranking["correctness"]["kendall_tau"] == pytest.approx(1.0) and ranking["correctness"]["systems"] == 4
    assert ranking["completeness"]["kendall_tau"] == pytest.approx(-1.0)
    # all ties: every system rated alike, tau undefined (scipy gives NaN): said, not hidden
    assert ranking["overall"]["kendall_tau"] is None
    assert ranking["overall"]["note"] == "undefined: one side rates every system alike"
    expected = bradley_terry([(r["model1"]["model_name"], r["model2"]["model_name"],
                               0.0 if r["correctness_label"] > 0 else 1.0) for r in records], resamples=0)
    assert human == pytest.approx(expected.ratings)
    assert "System level: Kendall τ" in markdown_table(result)


def test_detail_metrics_correlate_numbers_kept_beside_the_scores() -> None:
    # rougeL keeps its precision and recall in the details: correlated as rougeL.rougeL_recall, with
    # the same r as correlating those numbers by hand (a missing detail would be unscored)
    metaset = read_ragchecker(SLICE)
    result = meta(metaset, ["rougeL"], None, resamples=0, detail_metrics={"rougeL": ("rougeL_recall", "absent")})
    rows = {(r["method"], r["human_label"]): r for r in result["rows"]}
    recall_rows = assay.evaluate(metaset.items, "rougeL", None, runner=RunnerConfig(progress=False)).rows
    by_key = {r.key: r.details["rougeL_recall"] for r in recall_rows}
    diffs = [by_key[u.keys[1]] - by_key[u.keys[0]] for u in metaset.units]
    xs = [d for d, u in zip(diffs, metaset.units, strict=True) for _ in u.human["overall"]]
    ys = [h for u in metaset.units for h in u.human["overall"]]
    assert rows[("rougeL.rougeL_recall", "overall")]["pearson"] == pytest.approx(sps.pearsonr(xs, ys)[0])
    assert rows[("rougeL.absent", "overall")]["pearson"] is None
    assert rows[("rougeL.absent", "overall")]["unscored"] == len(metaset.units)
    with pytest.raises(InputError, match="detail metrics for geval, which this run does not have"):
        meta(metaset, ["rougeL"], None, resamples=0, detail_metrics={"geval": ("x",)})


def test_a_pair_method_that_does_not_split_its_scores_is_refused_before_any_call(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A method scoring pairs as a whole (no per-answer scores) cannot be correlated with labels of
    answers: meta-evaluation says so in one line, before the judge is asked anything."""
    from assay.core.protocols import MetaEvaluated
    from assay.methods.dice import Dice

    monkeypatch.setattr(Dice, "per_answer_scores", classmethod(MetaEvaluated.per_answer_scores.__func__))
    judge = ScriptedBackend([])
    with pytest.raises(InputError, match=r"^dice scores pairs as a whole and does not say which score is each"):
        meta(read_ragchecker(SLICE), ["dice"], judge)
    assert judge.calls == []
