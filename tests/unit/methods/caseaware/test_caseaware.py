"""Case-aware judge: Table 5 fields, severity bands, S_final weights, compare and gate."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from scipy import stats as sps
from typer.testing import CliRunner

import assay
from assay.cli import app
from assay.core.errors import ConfigError
from assay.judge.backends import ScriptedBackend
from assay.judge.runner import RunnerConfig
from assay.methods.caseaware import METRICS, PROFILES, CaseAware, CaseAwareConfig, band_of, resolve_weights
from assay.methods.caseaware.compare import compare_runs, gate, load_run

QUIET = RunnerConfig(progress=False)
TURN = {"id": "c1-t1", "query": "How do I fix VPN error 809?", "response": "Set the value to 2 and restart.",
        "contexts": [{"id": "KB-412", "text": "Error 809: set AssumeUDPEncapsulationContextOnSendRule to 2."}],
        "history": [{"role": "user", "content": "VPN fails."}, {"role": "assistant", "content": "Which error?"}],
        "case": {"subject": "VPN error 809", "description": "Windows 11 client"}, "system": "a",
        "metadata": {"conversation_id": "c1"}}


def turn_json(scores: dict[str, float] | float = 0.9, bands: dict[str, str] | None = None) -> str:
    out = {}
    for metric in METRICS:
        score = scores if isinstance(scores, float) else scores.get(metric, 0.9)
        out[f"{metric}_justification"] = f"{metric}: none"
        out[f"{metric}_band"] = (bands or {}).get(metric) or band_of(score)
        out[f"{metric}_score"] = score
    return json.dumps(out)


def test_profiles_sum_to_one_and_retrieval_heavy_scales_the_rest() -> None:
    for weights in PROFILES.values():
        assert sum(weights.values()) == pytest.approx(1.0)
    heavy = PROFILES["retrieval-heavy"]
    assert heavy["retrieval_correctness"] == heavy["context_sufficiency"] == 0.20
    assert heavy["hallucination"] == pytest.approx(0.16) and heavy["answer_helpfulness"] == pytest.approx(0.12)


def test_custom_weights_are_validated(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"sum to 0\.9"):
        resolve_weights({**PROFILES["uniform"], "hallucination": 0.025})
    with pytest.raises(ConfigError, match="no weight for case_resolution_alignment"):
        resolve_weights({m: 1 / 7 for m in METRICS[:-1]})
    with pytest.raises(ConfigError, match="unknown metric"):
        resolve_weights({**PROFILES["uniform"], "speed": 0.0})
    path = tmp_path / "w.toml"
    path.write_text("[weights]\n" + "\n".join(f"{m} = 0.125" for m in METRICS))
    assert resolve_weights(path) == ("file:w.toml", PROFILES["uniform"])
    with pytest.raises(ConfigError, match="unknown weight profile"):
        resolve_weights("heavy")


def test_a_turn_gives_the_table_5_fields_bands_and_s_final() -> None:
    scores = {m: 0.9 for m in METRICS} | {"identifier_integrity": 0.2, "hallucination": 0.5}
    backend = ScriptedBackend([turn_json(scores)])
    row = assay.evaluate([TURN], "caseaware", backend, runner=QUIET).records()[0]
    for metric in METRICS:
        assert f"{metric}_score" in row and f"{metric}_justification" in row and f"{metric}_band" in row
    assert row["identifier_integrity_band"] == "severe" and row["hallucination_band"] == "moderate"
    expected = sum(PROFILES["default"][m] * scores[m] for m in METRICS)
    assert row["s_final"] == pytest.approx(expected) and row["weights"] == PROFILES["default"]
    prompt = backend.calls[0][-1].content
    assert "KB-412" in prompt and "Which error?" in prompt and "Windows 11 client" in prompt


def test_a_score_outside_its_band_is_re_asked_then_fails_closed() -> None:
    bad = turn_json(0.9, bands={"hallucination": "severe"})
    backend = ScriptedBackend([bad, turn_json(0.9)])
    row = assay.evaluate([TURN], "caseaware", backend, runner=QUIET).records()[0]
    assert row["status"] == "scored"
    assert "hallucination_score 0.9 is outside its band 'severe' (0.00-0.30)" in backend.calls[1][-1].content

    failing = ScriptedBackend([bad, bad, bad])
    row = assay.evaluate([TURN], "caseaware", failing, runner=QUIET).records()[0]
    assert row["status"] == "unscored" and row["s_final"] is None
    assert len(row["unscored"]) == 9 and all(u["raw_output"] == bad for u in row["unscored"])


def test_a_turn_without_passages_is_judged_as_such_and_an_empty_query_is_rejected() -> None:
    backend = ScriptedBackend([turn_json(0.5)])
    assay.evaluate([{**TURN, "contexts": []}], "caseaware", backend, runner=QUIET)
    assert "(no passages were retrieved)" in backend.calls[0][-1].content
    with pytest.raises(assay.AssayError, match=r"'query'.*'c1-t1'|'c1-t1'.*'query'"):
        assay.evaluate([{**TURN, "query": " "}], "caseaware", ScriptedBackend([]), runner=QUIET)


def test_weight_profile_changes_s_final_not_scores() -> None:
    scores = {m: 0.9 for m in METRICS} | {"retrieval_correctness": 0.1}
    default = assay.evaluate([TURN], "caseaware", ScriptedBackend([turn_json(scores)]), runner=QUIET).records()[0]
    heavy = assay.evaluate([TURN], "caseaware", ScriptedBackend([turn_json(scores)]), runner=QUIET,
                           weights="retrieval-heavy").records()[0]
    assert heavy["retrieval_correctness_score"] == default["retrieval_correctness_score"]
    assert heavy["s_final"] < default["s_final"]


def make_run(tmp_path: Path, name: str, per_conversation: dict[str, list[float]]) -> Path:
    """A run store with turns whose every metric is the given score."""
    items, responses = [], []
    for conversation, turn_scores in per_conversation.items():
        for n, score in enumerate(turn_scores):
            items.append({**TURN, "id": f"{conversation}-t{n}", "metadata": {"conversation_id": conversation},
                          "system": name})
            responses.append((f"{conversation}-t{n}", turn_json(score)))
    rules = [{"match": f"<query>.*{cid}-MARK", "responses": [text]} for cid, text in responses]
    for item in items:
        item["query"] = f"{item['query']} {item['id']}-MARK"
    path = tmp_path / f"{name}.db"
    assay.evaluate(items, "caseaware", ScriptedBackend(rules=rules), store=path, runner=QUIET)
    return path


def test_compare_is_conversation_level_and_matches_scipy(tmp_path: Path) -> None:
    a = {f"c{i}": [0.9, 0.8 - 0.02 * i] for i in range(8)}
    b = {f"c{i}": [0.7 + 0.01 * i] for i in range(8)}
    run_a, run_b = load_run(make_run(tmp_path, "a", a)), load_run(make_run(tmp_path, "b", b))
    assert len(run_a.conversations) == 8 and run_a.turns == 16
    result = compare_runs(run_a, run_b, resamples=2000, seed=5)
    row = next(r for r in result["rows"] if r["metric"] == "hallucination_score")
    xs = [sum(a[c]) / 2 for c in sorted(a)]
    ys = [b[c][0] for c in sorted(b)]
    assert row["n"] == 8
    assert row["wilcoxon_p"] == pytest.approx(sps.wilcoxon(xs, ys).pvalue)
    assert row["t_p"] == pytest.approx(sps.ttest_rel(xs, ys).pvalue)
    assert compare_runs(run_a, run_b, resamples=2000, seed=5)["rows"] == result["rows"]


def test_gate_thresholds_and_regression(tmp_path: Path) -> None:
    good = load_run(make_run(tmp_path, "good", {"c1": [0.9], "c2": [0.88]}))
    worse = load_run(make_run(tmp_path, "worse", {"c1": [0.9], "c2": [0.7]}))
    assert gate(good, min_final=0.75).passed
    failed = gate(worse, min_final=0.85)
    assert not failed.passed and "s_final = 0.800 is below the minimum 0.850" in failed.reasons[0]
    regression = gate(worse, min_final=0.5, baseline=good, max_drop=0.03)
    assert not regression.passed and "dropped by 0.090" in regression.reasons[0]
    assert gate(worse, minimums={"identifier_integrity_score": 0.5}).passed
    with pytest.raises(ConfigError, match="unknown metric"):
        gate(good, minimums={"speed": 1.0})


def test_gate_and_compare_cli_exit_codes(tmp_path: Path) -> None:
    good = make_run(tmp_path, "good", {"c1": [0.9], "c2": [0.88], "c3": [0.95]})
    worse = make_run(tmp_path, "worse", {"c1": [0.7], "c2": [0.7], "c3": [0.6]})
    runner = CliRunner()
    assert runner.invoke(app, ["gate", str(good), "--min-final", "0.75"]).exit_code == 0
    failed = runner.invoke(app, ["gate", str(worse), "--min-final", "0.75"])
    assert failed.exit_code == 1 and "gate failed: s_final" in failed.output
    regressed = runner.invoke(app, ["gate", str(worse), "--min", "s_final=0.1", "--baseline", str(good),
                                    "--max-drop", "0.03"])
    assert regressed.exit_code == 1 and "dropped by" in regressed.output
    bad = subprocess.run([sys.executable, "-m", "assay", "gate", str(good), "--min", "speed=1"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown metric(s) speed" in bad.stderr
    out = tmp_path / "cmp.json"
    compared = runner.invoke(app, ["compare", str(good), str(worse), "--judge-robustness", str(good), str(worse),
                                   "--resamples", "500", "--output", str(out)])
    assert compared.exit_code == 0, compared.output
    saved = json.loads(out.read_text())
    assert saved["judge_robustness"]["A"]["n"] == 3 and saved["rows"][-1]["metric"] == "s_final"


def test_dry_run_prices_tokens(tmp_path: Path) -> None:
    data = tmp_path / "turns.jsonl"
    data.write_text(json.dumps(TURN) + "\n")
    result = CliRunner().invoke(app, ["eval", "caseaware", str(data), "--dry-run", "--price-in", "3",
                                      "--price-out", "12"])
    assert result.exit_code == 0 and "1 judge calls" in result.output and "$" in result.output
    method = CaseAware(CaseAwareConfig())
    est = method.estimate([assay.Item.model_validate(TURN)])
    assert est.calls == 1 and est.prompt_tokens > 200


def test_report_and_exports_of_a_caseaware_run(tmp_path: Path) -> None:
    path = make_run(tmp_path, "r", {"c1": [0.9, 0.2], "c2": [0.5], "c3": [0.7]})
    runner = CliRunner()
    html = tmp_path / "r.html"
    assert runner.invoke(app, ["report", str(path), "-o", str(html)], catch_exceptions=False).exit_code == 0
    page = html.read_text()
    for marker in ("Case-aware metrics", "Fig. 6", "Fig. 4", "Fig. 3", "Worst turns", "<svg"):
        assert marker in page
    out = tmp_path / "r.jsonl"
    assert runner.invoke(app, ["export", str(path), "-o", str(out)], catch_exceptions=False).exit_code == 0
    row = json.loads(out.read_text().splitlines()[0])
    assert {"hallucination_score", "hallucination_justification", "hallucination_band",
            "case_resolution_alignment_score", "case_resolution_alignment_justification", "s_final", "weights",
            "contexts", "case"} <= set(row)
    compact = tmp_path / "c.jsonl"
    assert runner.invoke(app, ["export", str(path), "-o", str(compact), "--compact"]).exit_code == 0
    small = json.loads(compact.read_text().splitlines()[0])
    assert set(small) <= {"run_id", "id", "system", "conversation_id", "status", "case", "query", "response",
                          "contexts", "s_final", "f_beta", "unscored_reason"} and "s_final" in small


def test_identifiers_are_tokens_with_digits_or_paths() -> None:
    from assay.methods.caseaware import identifiers

    text = "1. Run `fw-tool --apply 3.2.1` for E-7731 on port 8443, then delete /var/lib/app/cache/*.\n2. Wait 5 s."
    assert identifiers(text) == ["3.2.1", "E-7731", "8443", "/var/lib/app/cache/*"]
    assert identifiers("Support is 24/7; expect 1-3 days, or 3-3.5 hours, for KB-2201.") == ["KB-2201"]


def test_an_identifier_absent_from_the_inputs_caps_identifier_integrity() -> None:
    corrupted = {**TURN, "response": "Error 806: set the value to 2 and restart."}
    judge = ScriptedBackend([turn_json(0.95), turn_json(0.95), turn_json(0.95)])
    row = assay.evaluate([corrupted], "caseaware", judge, runner=QUIET).records()[0]
    assert row["identifier_check"] == {"unsupported": ["806"], "policy": "cap", "capped": True}
    assert (row["identifier_integrity_score"], row["identifier_integrity_band"]) == (0.30, "severe")
    assert (row["identifier_integrity_judge_score"], row["identifier_integrity_judge_band"]) == (0.95, "none")
    assert row["s_final"] == pytest.approx(0.95 - 0.10 * (0.95 - 0.30))
    flagged = assay.evaluate([corrupted], "caseaware", judge, runner=QUIET, identifier_check="flag").records()[0]
    assert flagged["identifier_integrity_score"] == 0.95 and flagged["identifier_check"]["unsupported"] == ["806"]
    clean = assay.evaluate([TURN], "caseaware", judge, runner=QUIET).records()[0]
    assert clean["identifier_check"]["unsupported"] == [] and clean["identifier_integrity_score"] == 0.95


def test_soft_verdicts_give_each_metric_its_expected_score_under_the_band_probabilities() -> None:
    from assay.methods.caseaware import MIDPOINTS
    from tests.helpers import WithLogprobs

    scores = {m: 0.9 for m in METRICS} | {"hallucination": 0.5}
    labels = {f"{m}_band": ("none", "minor") for m in METRICS} | {"hallucination_band": ("moderate", "minor")}
    p_first = {f"{m}_band": [0.8] for m in METRICS} | {"hallucination_band": [0.6]}
    judge = WithLogprobs(ScriptedBackend([turn_json(scores)]), labels, p_first)
    row = assay.evaluate([TURN], "caseaware", judge, runner=QUIET, verdicts="soft").records()[0]
    # by hand: the judge's own score for the band it wrote, the midpoint for the other band
    assert MIDPOINTS == {"severe": 0.15, "moderate": 0.455, "minor": 0.73, "none": 0.93}
    assert row["hallucination_score"] == pytest.approx(0.6 * 0.5 + 0.4 * 0.73)
    assert row["hallucination_score_hard"] == 0.5 and row["hallucination_band"] == "moderate"
    assert row["hallucination_band_p"] == pytest.approx({"severe": 0.0, "moderate": 0.6, "minor": 0.4, "none": 0.0})
    assert row["answer_helpfulness_score"] == pytest.approx(0.8 * 0.9 + 0.2 * 0.73)
    soft = {m: 0.8 * 0.9 + 0.2 * 0.73 for m in METRICS} | {"hallucination": 0.6 * 0.5 + 0.4 * 0.73}
    assert row["s_final"] == pytest.approx(sum(PROFILES["default"][m] * soft[m] for m in METRICS))
    assert row["s_final_hard"] == pytest.approx(sum(PROFILES["default"][m] * scores[m] for m in METRICS))

    # the identifier cap still says what counts: a capped metric counts at most 0.30
    corrupted = {**TURN, "response": "Error 806: set the value to 2 and restart."}
    judge = WithLogprobs(ScriptedBackend([turn_json(0.95)]), {f"{m}_band": ("none", "minor") for m in METRICS},
                         {f"{m}_band": [0.8] for m in METRICS})
    capped = assay.evaluate([corrupted], "caseaware", judge, runner=QUIET, verdicts="soft").records()[0]
    assert capped["identifier_integrity_score"] == 0.30 and capped["identifier_integrity_score_hard"] == 0.30
    assert capped["identifier_integrity_band_p"]["none"] == pytest.approx(0.8)

    # without logprobs: every metric Unscored with the reason, never the greedy scores
    plain = assay.evaluate([TURN], "caseaware", ScriptedBackend([turn_json(scores)]), runner=QUIET,
                           verdicts="soft").records()[0]
    assert plain["s_final"] is None
    assert "soft verdicts need the judge's logprobs at every band" in plain["unscored_reason"]


def test_direct_verdicts_ask_each_metric_and_score_the_expected_band_midpoint() -> None:
    from assay.methods.caseaware import MIDPOINTS

    judge = ScriptedBackend(rules=[
        {"match": "Metric: hallucination", "repeat": True,
         "responses": [{"label_probs": {"severe": 0.7, "moderate": 0.2, "minor": 0.1, "none": 0.0}}]},
        {"match": "Metric: ", "repeat": True,
         "responses": [{"label_probs": {"severe": 0.0, "moderate": 0.0, "minor": 0.2, "none": 0.8}}]}])
    row = assay.evaluate([TURN], "caseaware", judge, runner=QUIET, verdicts="direct").records()[0]
    assert len(judge.calls) == len(METRICS)  # one label call per metric, nothing generated
    expected = 0.7 * MIDPOINTS["severe"] + 0.2 * MIDPOINTS["moderate"] + 0.1 * MIDPOINTS["minor"]
    assert row["hallucination_score"] == pytest.approx(expected) and row["hallucination_band"] == "severe"
    assert row["answer_helpfulness_score"] == pytest.approx(0.2 * MIDPOINTS["minor"] + 0.8 * MIDPOINTS["none"])
    assert row["hallucination_band_p"]["severe"] == 0.7 and row["s_final"] is not None
    # the calls share the turn: each differs from the first only after "Metric:"
    first, other = judge.calls[0][-1].content, judge.calls[1][-1].content
    assert first.split("Metric:")[0] == other.split("Metric:")[0]


def test_the_worst_turns_never_read_none_where_no_justification_was_written() -> None:
    """Direct verdicts write no justification: each worst turn's finding ended ": None"."""
    from assay.methods.caseaware import METRICS
    from assay.view.report import environment

    row: dict[str, object] = {"id": "t1", "system": "bot", "s_final": 0.3}
    for m in METRICS:
        row |= {f"{m}_band": "moderate", f"{m}_score": 0.45, f"{m}_justification": None}
    section = CaseAware.report_section([row])
    assert section is not None and section.section
    html = environment().from_string(section.section).render(rows=[row], **section.context)
    assert "Worst turns" in html and "None" not in html and "(no justification written)" in html


def test_a_baseline_whose_turns_are_unscored_is_said_so_and_the_max_drop_shown(tmp_path: Path) -> None:
    """It printed 'max None' beside the --max-drop given, and 'no conversation in common' for the same
    conversations, unscored in the baseline."""
    good = make_run(tmp_path, "good", {"c1": [0.9], "c2": [0.88]})
    items = [{**TURN, "id": f"{c}-t0", "metadata": {"conversation_id": c}, "system": "garbled"} for c in ("c1", "c2")]
    garbled = tmp_path / "garbled.db"
    assay.evaluate(items, "caseaware", ScriptedBackend(rules=[{"match": ".", "responses": ["not json"],
                                                               "repeat": True}]), store=garbled, runner=QUIET)
    result = gate(load_run(good), min_final=0.5, baseline=load_run(garbled), max_drop=0.03)
    assert not result.passed and any("no conversation scored in both runs (2 in both" in r for r in result.reasons)
    shown = CliRunner().invoke(app, ["gate", str(good), "--min-final", "0.5", "--baseline", str(garbled),
                                     "--max-drop", "0.03"])
    assert shown.exit_code == 1 and "(max 0.030, 0 conversation(s))" in shown.output and "None" not in shown.output
