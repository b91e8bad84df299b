"""assay align: cross-validation by item, calibration, tie threshold, monotone aligned score, the
alignment file and its refusals, the label file reader (scripted judge; no model)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import assay
from assay.analysis import align as al
from assay.core.errors import ConfigError, InputError
from assay.core.types import Completion, GenerateConfig, Message
from assay.judge.backends import ScriptedBackend
from assay.judge.runner import RunnerConfig
from assay.store import Store
from tests.helpers import criteria_json, elements_json

QUIET = RunnerConfig(progress=False)
EXAMPLES = Path(__file__).parents[3] / "src" / "assay" / "examples"
ASSAY = shutil.which("assay", path=str(Path(sys.executable).parent))


def _p(text: str) -> float:
    """A probability that depends on the prompt only (so a rerun is identical)."""
    return 0.2 + 0.75 * int(hashlib.sha256(text.encode()).hexdigest()[:4], 16) / 65535


class Judge(ScriptedBackend):
    """DeCE's extraction answered by rules; every yes/no question a prompt-dependent P(yes)."""

    def __init__(self, name: str = "scripted/test") -> None:
        super().__init__(rules=[
            {"match": "Which lettered sentence", "responses": [{"label_probs": {"A": 1.0}}], "repeat": True},
            {"match": r"<query>.*<reference>", "responses": [criteria_json("The stated fact")], "repeat": True},
            {"match": r"<query>.*<answer>", "responses": [elements_json("The answer's fact")], "repeat": True}])
        self.name = name

    def identity(self) -> dict[str, Any]:
        return {"backend": self.name}

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        if config.labels and "yes" in config.labels:
            p = _p("".join(m.content for m in messages))
            return Completion(text="yes" if p >= 0.5 else "no", label_probs={"yes": p, "no": 1 - p},
                              finish_reason="label", backend=self.name, model="t")
        return await super().generate(messages, config)


def _items() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (EXAMPLES / "align_answers.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def dece_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    path = tmp_path_factory.mktemp("align") / "runs.db"
    result = assay.evaluate(_items(), "dece", Judge(), runner=QUIET, verdicts="direct", store=path)
    return path, result.run_id


# --- cross-validation, calibration, threshold, weights ----------------------------------------------
@given(st.lists(st.sampled_from([f"q{i}" for i in range(9)]), min_size=4, max_size=60), st.integers(2, 6))
@settings(max_examples=60, deadline=None)
def test_folds_never_split_an_item(groups: list[str], folds: int) -> None:
    if len(set(groups)) < 2:
        return
    seen: dict[str, int] = {}
    for k, (train, test) in enumerate(al._folds(groups, folds)):
        held = {groups[i] for i in test}
        assert held.isdisjoint(groups[i] for i in train)  # an item's rows are all held out together
        for g in held:
            assert g not in seen  # and in exactly one test fold
            seen[g] = k
    assert set(seen) == set(groups)


def test_calibration_lowers_ece_on_miscalibrated_probabilities() -> None:
    rng = np.random.default_rng(0)
    truth = rng.uniform(0.05, 0.95, 600)
    y = (rng.uniform(size=600) < truth).astype(int)
    judged = truth ** 3  # an underconfident judge: its P(yes) is far below the rate reviewers agree
    groups = [f"item{i // 4}" for i in range(600)]
    fitted = al.fit_calibration(judged, y, groups, resamples=100)
    assert fitted["before"]["ece"] > 0.15
    assert fitted["after_cv"]["ece"] < 0.06 < fitted["before"]["ece"]
    assert fitted["after_cv"]["brier"] < fitted["before"]["brier"]
    assert fitted["after_cv"]["auroc"] >= fitted["before"]["auroc"] - 0.02  # the ranking is kept
    assert fitted["chosen"] in ("isotonic", "platt") and set(fitted["cv_log_loss"]) == {"isotonic", "platt"}
    mapped = al.calibrate(fitted["map"], np.linspace(0, 1, 50))
    assert np.all(np.diff(mapped) >= -1e-12) and np.all((mapped >= 0) & (mapped <= 1))  # monotone probabilities


def test_a_calibration_never_reverses_the_judges_ranking() -> None:
    p = np.linspace(0.1, 0.9, 40)
    y = (p < 0.5).astype(float)  # reviewers disagree exactly where the judge is sure
    mapping = al.fit_calibrator("platt", p, y)
    assert mapping["slope"] == 0.0 and al.calibrate(mapping, p) == pytest.approx(np.full(40, 0.5), abs=1e-6)


def test_the_tie_threshold_learns_what_reviewers_call_a_tie() -> None:
    rng = np.random.default_rng(1)
    fc = rng.uniform(0, 1, 300)
    labels = ["tie" if abs(v - 0.5) < 0.15 else ("A" if v > 0.5 else "B") for v in fc]
    fitted = al.fit_tie_threshold(fc, labels, ["Tie"] * 300, [f"p{i}" for i in range(300)], resamples=50)
    assert fitted["threshold"] == pytest.approx(0.15, abs=0.02)
    assert fitted["after_cv"]["accuracy"] > 0.95 > fitted["forced_choice"]["accuracy"]
    assert al.decide(0.5, fitted["threshold"]) == "tie" and al.decide(0.9, fitted["threshold"]) == "A"


def test_the_aligned_score_is_monotone_and_says_what_it_rests_on() -> None:
    rng = np.random.default_rng(2)
    x = rng.uniform(size=(200, 3))
    y = 0.7 * x[:, 0] + 0.3 * x[:, 1] - 0.5 * x[:, 2] + rng.normal(0, 0.05, 200)  # the third input hurts
    fitted = al.fit_aligned_score(["judge", "rougeL", "noise"], x, y, [f"q{i // 2}" for i in range(200)],
                                  pairwise=False, resamples=50)
    assert all(w >= 0 for w in fitted["weights"].values())
    assert fitted["weights"]["noise"] == 0.0 and fitted["weights"]["judge"] > fitted["weights"]["rougeL"] > 0
    assert sum(fitted["shares"].values()) == pytest.approx(1.0)
    assert fitted["after_cv"]["pearson"] > max(r["pearson"] for r in fitted["before"].values())
    low = al.aligned_value(fitted, {"judge": 0.1, "rougeL": 0.1, "noise": 0.5})
    high = al.aligned_value(fitted, {"judge": 0.9, "rougeL": 0.1, "noise": 0.5})
    assert low is not None and high is not None and 0 <= low < high <= 1
    assert al.aligned_value(fitted, {"judge": 0.9, "rougeL": None, "noise": 0.5}) is None  # never imputed


# --- fitting a run, the file, refusals --------------------------------------------------------------
def test_fitting_a_run_and_the_file_round_trips(dece_store: tuple[Path, str], tmp_path: Path) -> None:
    path, run_id = dece_store
    store = Store(path, create=False)
    before = [r.model_dump() for r in store.results(run_id)]
    alignment = al.fit(store, run_id, al.read_labels(EXAMPLES / "align_labels.jsonl"), resamples=50)
    assert set(alignment["calibration"]) == {"criteria", "elements"} and "aligned_score" in alignment
    assert alignment["fitted_for"]["judge"] == "scripted/test" and alignment["fitted_for"]["prompts"]
    assert alignment["fitted_on"]["counts"] == {"grades": 24, "verdicts": 48, "pairs": 0, "preferences": 0}
    out = al.write_alignment(alignment, tmp_path / "alignment.json")
    again = al.read_alignment(out)
    assert {k: v for k, v in again.items() if k != "generator"} == json.loads(json.dumps(alignment))
    assert al.aligned_fields(again, store, run_id) == al.aligned_fields(alignment, store, run_id)
    assert "NaN" not in out.read_text()
    fields = al.aligned_fields(again, store, run_id)
    assert all(0 <= v["aligned_score"] <= 1 and len(v["p_calibrated"]["criteria"]) >= 1 for v in fields.values())
    assert [r.model_dump() for r in store.results(run_id)] == before  # the raw results are never rewritten


def test_a_signal_the_run_already_scores_enters_the_aligned_score_once(tmp_path: Path) -> None:
    """A rougeL run's aligned score listed "rougeL 0.50, rougeL 0.50": its score and the default ROUGE-L
    signal, the same input twice."""
    result = assay.evaluate(_items(), "rougeL", runner=QUIET, store=tmp_path / "rouge.db")
    store = Store(tmp_path / "rouge.db", create=False)
    alignment = al.fit(store, result.run_id, al.read_labels(EXAMPLES / "align_labels.jsonl"), resamples=50)
    score = alignment["aligned_score"]
    assert list(score["weights"]) == ["rougeL"] and score["signals"] == [], score


def test_too_few_labels_are_refused_with_how_many_more(dece_store: tuple[Path, str], tmp_path: Path) -> None:
    path, run_id = dece_store
    few = tmp_path / "few.jsonl"
    few.write_text("".join(json.dumps({"id": f"q{n}", "system": "bot-a", "grade": 4}) + "\n" for n in range(1, 6))
                   + json.dumps({"id": "q1", "system": "bot-a", "verdict": "criteria[0]", "label": 1}) + "\n")
    with pytest.raises(InputError) as caught:
        al.fit(Store(path, create=False), run_id, al.read_labels(few), source=str(few))
    message = str(caught.value)
    assert "\n" not in message and "5 graded answers (need 12: 7 more)" in message
    assert "1 labelled criteria verdicts (need 24: 23 more)" in message
    nothing = tmp_path / "none.jsonl"
    nothing.write_text(json.dumps({"id": "nowhere", "grade": 3}) + "\n")
    with pytest.raises(InputError, match=r"1 label\(s\) read, none matched an answer of run \w+ by id and system: "
                                         r"a label names id 'nowhere' \(no system\), and the run's 24 answer\(s\) "
                                         r"are id 'q1', system 'bot-a'; id 'q1', system 'bot-b'; id 'q2', system "
                                         r"'bot-a'; \.\.\.$"):
        al.fit(Store(path, create=False), run_id, al.read_labels(nothing))
    some = tmp_path / "some.jsonl"
    some.write_text(few.read_text() + json.dumps({"id": "q1", "system": "bot-z", "grade": 3}) + "\n")
    with pytest.raises(InputError, match=r"5 graded answers \(need 12: 7 more\).*; 1 of the 7 label\(s\) matched no "
                                         r"answer of the run \(e.g. id 'q1', system 'bot-z'\)$"):
        al.fit(Store(path, create=False), run_id, al.read_labels(some))


def test_an_alignment_for_another_judge_method_or_prompt_is_refused(dece_store: tuple[Path, str]) -> None:
    path, run_id = dece_store
    store = Store(path, create=False)
    alignment = al.fit(store, run_id, al.read_labels(EXAMPLES / "align_labels.jsonl"), resamples=0)
    manifest = store.run(run_id).manifest
    al.check_compatible(alignment, manifest, "a.json")  # its own run: accepted
    other_judge = {**manifest, "judge": "openai/gpt-4o-mini", "judge_identity": {"backend": "openai"}}
    with pytest.raises(ConfigError, match="fitted for judge scripted/test, this run's judge is openai/gpt-4o-mini"):
        al.check_compatible(alignment, other_judge, "a.json")
    with pytest.raises(ConfigError, match="another model or version"):
        al.check_compatible(alignment, {**manifest, "judge_identity": {"backend": "x", "sha256": "1"}}, "a.json")
    with pytest.raises(ConfigError, match="fitted for method dece, this run is lemaj"):
        al.check_compatible(alignment, {**manifest, "method": "lemaj"}, "a.json")
    edited = json.loads(json.dumps(manifest))
    edited["method_manifest"]["prompt_sha256"]["criterion_direct"] = "0" * 64
    with pytest.raises(ConfigError, match="another prompt criterion_direct"):
        al.check_compatible(alignment, edited, "a.json")
    soft = json.loads(json.dumps(manifest))
    soft["method_manifest"]["config"]["verdicts"] = "soft"
    with pytest.raises(ConfigError, match="verdicts='direct' \\(this run: 'soft'\\)"):
        al.check_compatible(alignment, soft, "a.json")


def test_reviewers_grades_and_corrections_in_the_store_are_labels(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    result = assay.evaluate(_items(), "dece", Judge(), runner=QUIET, verdicts="direct", store=path)
    store = Store(path)
    for row in result.rows:
        good = row.item["system"] == "bot-a"
        store.annotate(result.run_id, row.key, "human.grade_correctness", 5 if good else 2, author="ann")
        store.annotate(result.run_id, row.key, "criteria[0].satisfied", 1 if good else 0, author="ann")
        store.annotate(result.run_id, row.key, "criteria[0].criterion", "an edited text", author="ann")
    labels = al.store_labels(store, result.run_id, result.rows)
    assert labels.counts() == {"grades": 24, "verdicts": 24, "pairs": 0, "preferences": 0}
    alignment = al.fit(store, result.run_id, labels, resamples=0, signals=())
    assert "criteria" in alignment["calibration"] and alignment["aligned_score"]["inputs"] == [
        "precision", "recall", "f_beta"]


def _pairs_judge() -> ScriptedBackend:
    class PairJudge(ScriptedBackend):
        async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
            text = "".join(m.content for m in messages)
            a = _p(text)
            return Completion(text="A", label_probs={"A": a * 0.6, "B": (1 - a) * 0.6, "Tie": 0.4},
                              finish_reason="label", backend="scripted/test", model="t")
    return PairJudge(rules=[], label_probs=True)


def dice_pairs(tmp_path: Path, n: int = 30) -> Any:
    """A DICE run (direct verdicts, the scripted pair judge) of ``n`` pairs of systems s1 and s2 in tmp_path/p.db."""
    pairs = [{"id": f"p{n}", "query": f"Question {n}?", "a": {"system": "s1", "response": f"answer one {n}"},
              "b": {"system": "s2", "response": f"answer two {n * 7}"}} for n in range(n)]
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps(p) + "\n" for p in pairs))
    return assay.evaluate(str(data), "dice", _pairs_judge(), runner=QUIET, verdicts="direct", store=tmp_path / "p.db")


def test_a_pairwise_run_gets_a_tie_threshold_and_aligned_verdicts(tmp_path: Path) -> None:
    result = dice_pairs(tmp_path)
    labels = tmp_path / "winners.jsonl"
    lines = []
    for row in result.rows:
        fc = row.details["forced_choice_a"]
        winner = "tie" if abs(fc - 0.5) < 0.1 else ("A" if fc > 0.5 else "B")
        # half the labels name the systems the other way round: read back flipped
        if row.idx % 2:
            lines.append({"id": row.item["id"], "a": "s2", "b": "s1", "winner": {"A": "B", "B": "A"}.get(winner,
                                                                                                       winner)})
        else:
            lines.append({"id": row.item["id"], "a": "s1", "b": "s2", "winner": winner})
    labels.write_text("".join(json.dumps(x) + "\n" for x in lines))
    store = Store(tmp_path / "p.db", create=False)
    alignment = al.fit(store, result.run_id, al.read_labels(labels), resamples=50)
    tie = alignment["tie_threshold"]
    assert tie["n"] == 30 and tie["after_cv"]["accuracy"] > tie["judge_verdict"]["accuracy"]
    fields = al.aligned_fields(alignment, store, result.run_id)
    assert {v["aligned_verdict"] for v in fields.values()} <= {"A", "B", "Tie"}


# --- the label file ---------------------------------------------------------------------------------
LABEL = st.one_of(
    st.fixed_dictionaries({"id": st.text(min_size=1, max_size=5), "grade": st.floats(0, 1) | st.integers(1, 5)}),
    st.fixed_dictionaries({"id": st.integers(0, 99), "system": st.sampled_from(["a", "b"]),
                           "verdict": st.sampled_from(["criteria[0]", "elements[3]"]),
                           "label": st.sampled_from([0, 1, True, False, "yes", "no", "1", "0"])}),
    st.fixed_dictionaries({"id": st.text(min_size=1, max_size=5), "a": st.just("s1"), "b": st.just("s2"),
                           "winner": st.sampled_from(["A", "B", "tie", "Tie", "a"])}),
    st.fixed_dictionaries({"id": st.text(min_size=1, max_size=5), "a": st.just("s1"), "b": st.just("s2"),
                           "preference": st.floats(-2, 2)}),
)


@given(st.lists(LABEL, min_size=1, max_size=30))
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_every_valid_label_is_read(tmp_path: Path, records: list[dict[str, Any]]) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    counts = al.read_labels(path).counts()
    assert sum(counts.values()) == len(records)
    labels = al.read_labels(path)
    assert all(0 <= g <= 1 for values in labels.grades.values() for g in values)
    assert all(v in (0, 1) for values in labels.verdicts.values() for v in values)


JUNK = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(
                        ["id", "system", "grade", "verdict", "label", "a", "b", "winner", "preference"]), inner,
                        max_size=5), max_leaves=8)


@given(st.lists(JUNK, min_size=1, max_size=5))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_bad_labels_are_one_line_naming_file_line_and_never_a_crash(tmp_path: Path, records: list[Any]) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    try:
        labels = al.read_labels(path)
    except InputError as exc:
        assert "\n" not in str(exc) and str(path) in str(exc) and "line " in str(exc)
        return
    grades = [g for values in labels.grades.values() for g in values]
    assert all(np.isfinite(g) and 0 <= g <= 1 for g in grades)  # NaN and infinities are never accepted


@pytest.mark.parametrize(("text", "message"), [
    ('{"id": "q1", "grade": NaN}\n', "line 1: NaN is not a number"),
    ('{"id": "q1", "grade": 7}\n', "field 'grade'"),
    ('{"id": "q1", "verdict": "criteria", "label": 1}\n', "field 'verdict'"),
    ('{"id": "q1", "verdict": "criteria[0]", "label": 2}\n', "field 'label'"),
    ('{"id": "q1", "a": "x", "b": "y", "winner": "C"}\n', "field 'winner'"),
    ('{"grade": 3}\n', "field 'id'"),
    ('{"id": "q1", "grade": 3, "winner": "A"}\n', "exactly one of"),
])
def test_a_bad_label_names_where(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "l.jsonl"
    path.write_text(text)
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        al.read_labels(path)


@pytest.mark.parametrize(("text", "message"), [
    ("id,system,grade,grade\nq1,bot-a,5,1\n", "line 1: column 'grade' appears more than once in the header; keep one"),
    ("id,system,grade\nq1,bot-a,5\n\nq2,\"bot\na\",x\n", "line 4, field 'grade': 'x' is not a number"),
    ("id,system,grade\nq1,bot-a,5\nq2,\"bot-a\" x,3\n", "line 3: malformed CSV: ',' expected after '\"'"),
])
def test_a_bad_csv_label_file_names_the_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "l.csv"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        al.read_labels(path)
    assert str(caught.value) == f"{path}, {message}"


def test_a_csv_label_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "l.csv"
    path.write_text("id,system,grade,verdict,label\nq1,bot-a,5,,\nq1,bot-a,,criteria[0],1\nq2,bot-b,x,,\n")
    with pytest.raises(InputError, match=r"line 4.*field 'grade'"):
        al.read_labels(path)
    path.write_text("id,system,grade,verdict,label\nq1,bot-a,5,,\nq1,bot-a,,criteria[0],yes\n")
    assert al.read_labels(path).counts() == {"grades": 1, "verdicts": 1, "pairs": 0, "preferences": 0}


# --- the command line -------------------------------------------------------------------------------
def _run(*args: object, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")} | {"COLUMNS": "200"}
    return subprocess.run([str(ASSAY), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env=env, stdin=subprocess.DEVNULL)


@pytest.mark.skipif(ASSAY is None, reason="the assay console script is not installed (make setup)")
def test_align_export_and_refusals_on_the_command_line(dece_store: tuple[Path, str], tmp_path: Path) -> None:
    import sqlite3

    with sqlite3.connect(dece_store[0]) as source, sqlite3.connect(tmp_path / "runs.db") as copy:
        source.backup(copy)  # through the WAL: the fixture's store may still be open
    proc = _run("align", "runs.db", "--labels", EXAMPLES / "align_labels.jsonl", "--resamples", "50", "-o",
                "alignment.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "calibration of criteria" in proc.stdout and "weights: equal, shares of the standardised" in proc.stdout
    assert "ridge weights' held-out r" in proc.stdout
    ridge = _run("align", "runs.db", "--labels", EXAMPLES / "align_labels.jsonl", "--resamples", "0", "--combine",
                 "ridge", "-o", "ridge.json", cwd=tmp_path)
    assert ridge.returncode == 0 and json.loads((tmp_path / "ridge.json").read_text())["aligned_score"][
        "combine"] == "ridge"
    bad = _run("align", "runs.db", "--labels", EXAMPLES / "align_labels.jsonl", "--combine", "mean", "-o", "b.json",
               cwd=tmp_path)
    assert bad.returncode == 2 and "--combine mean" in bad.stderr and not (tmp_path / "b.json").exists()
    proc = _run("export", "runs.db", "--alignment", "alignment.json", "-o", "scores.jsonl", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in (tmp_path / "scores.jsonl").read_text().splitlines()]
    assert all("aligned_score" in r and "f_beta" in r for r in rows)
    assert all("p_calibrated" in c and "p_judge" in c for r in rows for c in r["criteria"])
    few = tmp_path / "few.jsonl"
    few.write_text(json.dumps({"id": "q1", "system": "bot-a", "grade": 4}) + "\n")
    proc = _run("align", "runs.db", "--labels", few, "-o", "a2.json", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "11 more" in proc.stderr
    other = json.loads((tmp_path / "alignment.json").read_text())
    other["fitted_for"]["judge"] = "openai/gpt-4o-mini"
    (tmp_path / "other.json").write_text(json.dumps(other))
    proc = _run("export", "runs.db", "--alignment", "other.json", "-o", "s2.jsonl", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "fitted for judge openai" in proc.stderr
    assert not (tmp_path / "s2.jsonl").exists()
    proc = _run("export", "runs.db", "--alignment", few, "-o", "s3.jsonl", cwd=tmp_path)
    assert proc.returncode == 2 and "not an alignment file" in proc.stderr


@pytest.mark.skipif(ASSAY is None, reason="the assay console script is not installed (make setup)")
def test_labels_the_command_cannot_use_are_one_line_and_write_nothing(tmp_path: Path) -> None:
    """A label file with a column named twice was read silently (the last column won); labels that
    name no answer of the run were "0 graded answers (need 12: 12 more)", as if none were given."""
    made = _run("eval", "rougeL", EXAMPLES / "answers.jsonl", "--store", "run.db", "--no-progress", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    run_id = Store(tmp_path / "run.db", create=False).list_runs()[0].run_id
    (tmp_path / "twice.csv").write_text("id,system,grade,grade\nq1,bot-a,5,1\n")
    cases = [("twice.csv", "error: twice.csv, line 1: column 'grade' appears more than once in the header; keep one"),
             (EXAMPLES / "align_labels.jsonl",
              f"error: {EXAMPLES / 'align_labels.jsonl'}: 72 label(s) read, none matched an answer of run {run_id} "
              "by id and system: a label names id 'q1', system 'bot-a', and the run's 3 answer(s) are id 'q1' (no "
              "system); id 'q2' (no system); id 'q3' (no system)")]
    for labels, message in cases:
        before = sorted(p.name for p in tmp_path.iterdir())
        proc = _run("align", "run.db", "--labels", labels, "--no-reviews", "-o", "al.json", cwd=tmp_path)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "Traceback" not in proc.stdout + proc.stderr
        assert [line for line in proc.stderr.splitlines() if line.strip()] == [message]
        assert sorted(p.name for p in tmp_path.iterdir()) == before and not (tmp_path / "al.json").exists()


def test_the_default_aligned_score_weighs_agreeing_inputs_equally_on_their_own_scale() -> None:
    """combine="equal": each input that agrees with the grades (r > 0) weighs the same once
    standardised, one that disagrees weighs 0, and a line puts the sum on the grades' scale;
    "ridge" stays available and each reports the other's out-of-fold r."""
    rng = np.random.default_rng(0)
    n = 60
    good = rng.normal(0, 1, n)
    y = 0.5 + 0.1 * good + rng.normal(0, 0.02, n)
    x = np.column_stack([good * 10, good * 0.01 + rng.normal(0, 0.003, n), -good + rng.normal(0, 0.1, n)])
    groups = [f"q{i}" for i in range(n)]
    fitted = al.fit_aligned_score(["big", "small", "wrong"], x, y, groups, pairwise=False, resamples=0)
    assert fitted["combine"] == "equal"
    standard = fitted["standardised_shares"]
    assert standard["big"] == pytest.approx(0.5) and standard["small"] == pytest.approx(0.5)
    assert standard["wrong"] == 0 and fitted["weights"]["wrong"] == 0
    assert fitted["weights"]["big"] * x[:, 0].std() == pytest.approx(fitted["weights"]["small"] * x[:, 1].std())
    predicted = [al.aligned_value(fitted, dict(zip(fitted["inputs"], row, strict=True))) for row in x]
    assert float(np.mean(predicted)) == pytest.approx(float(y.mean()), abs=0.01)
    assert fitted["after_cv"]["pearson"] > 0.9
    assert set(fitted["other_combiners_after_cv"]) == {"ridge"}
    ridge = al.fit_aligned_score(["big", "small", "wrong"], x, y, groups, pairwise=False, resamples=0, combine="ridge")
    assert ridge["combine"] == "ridge" and set(ridge["other_combiners_after_cv"]) == {"equal"}
    with pytest.raises(ConfigError, match="combine 'mean'"):
        al.fit_aligned_score(["big"], x[:, :1], y, groups, pairwise=False, resamples=0, combine="mean")


def test_an_input_that_does_not_vary_gets_no_weight() -> None:
    """A constant column's std is often 1e-17, not 0: it must weigh 0, not 1e15."""
    rng = np.random.default_rng(1)
    y = rng.uniform(0, 1, 12)
    x = np.column_stack([y + rng.normal(0, 0.1, 12), np.full(12, 0.1)])
    for combine in al.COMBINERS:
        fitted = al.fit_aligned_score(["good", "flat"], x, y, [f"q{i}" for i in range(12)], pairwise=False,
                                      resamples=0, combine=combine)
        assert fitted["weights"]["flat"] == 0 and abs(fitted["intercept"]) < 10, combine
        assert al.aligned_value(fitted, {"good": 0.5, "flat": 0.9}) == al.aligned_value(
            fitted, {"good": 0.5, "flat": 0.1})


def test_equal_weights_on_grades_sit_on_the_least_squares_line() -> None:
    rng = np.random.default_rng(2)
    x = rng.normal(0, 1, (50, 2)) * [3.0, 0.2]
    y = 0.4 + 0.05 * x[:, 0] + 0.5 * x[:, 1] + rng.normal(0, 0.05, 50)
    fitted = al.fit_aligned_score(["a", "b"], x, y, [f"q{i}" for i in range(50)], pairwise=False, resamples=0)
    predicted = np.array([fitted["intercept"] + x[i] @ [fitted["weights"]["a"], fitted["weights"]["b"]]
                          for i in range(50)])
    slope, _ = np.polyfit(predicted, y, 1)
    assert slope == pytest.approx(1.0, abs=1e-6)  # regressing the grades on the score: slope 1


def test_a_pairs_held_out_predictions_are_what_aligned_value_gives() -> None:
    """On pairs the out-of-fold points are differences of the aligned score as users read it."""
    rng = np.random.default_rng(3)
    d = rng.normal(0, 1, (40, 2)) * [5.0, 0.1]
    y = np.sign(d[:, 0] / 5 + d[:, 1] / 0.1 + rng.normal(0, 0.5, 40))
    groups = [f"q{i}" for i in range(40)]
    fitted = al.fit_aligned_score(["a", "b"], d, y, groups, pairwise=True, folds=40, resamples=0)
    # with leave-one-out folds each fit is nearly the full one: the points are close to the full fit's
    full = [al.aligned_value(fitted, {"a": row[0], "b": row[1]}) - al.aligned_value(fitted, {"a": 0.0, "b": 0.0})
            for row in d]
    assert np.corrcoef(fitted["out_of_fold"]["predicted"], full)[0, 1] > 0.99
    assert max(map(abs, fitted["out_of_fold"]["predicted"])) < 2 * max(map(abs, full))


@pytest.mark.parametrize(("change", "where"), [
    (lambda a: a["fitted_for"].pop("method"), "fitted_for.method"),
    (lambda a: a["calibration"]["criteria"]["before"]["reliability"][0].update(n="<script>x</script>"),
     "calibration.criteria.before.reliability.0.n"),
    (lambda a: a["aligned_score"]["shares"].pop("precision"), "aligned_score.shares"),
    (lambda a: a["calibration"]["criteria"]["map"].update(kind="magic"), "calibration.criteria.map.kind"),
])
def test_an_alignment_file_that_does_not_fit_the_shape_is_one_line(dece_store: tuple[Path, str], tmp_path: Path,
                                                                   change: Any, where: str) -> None:
    path, run_id = dece_store
    fitted = al.fit(Store(path, create=False), run_id, al.read_labels(EXAMPLES / "align_labels.jsonl"), resamples=0)
    file = al.write_alignment(fitted, tmp_path / "a.json")
    value = json.loads(file.read_text())
    change(value)
    file.write_text(json.dumps(value))
    with pytest.raises(ConfigError, match=rf"not an alignment file assay can use: {where}") as raised:
        al.read_alignment(file)
    assert "\n" not in str(raised.value)


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every address inside a JSON value."""
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:3]):
            out += _paths(v, (*prefix, i))
    return out


_JUNK = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(-2, 2), st.text(max_size=8),
                  st.lists(st.integers(0, 3), max_size=3),
                  st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


# derandomized: the same 300 damaged files on every run (CI included); to explore more, drop
# derandomize and pass --hypothesis-seed (40 seeds of 150 passed when this was written)
@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_damaged_alignment_file_is_read_and_shown_or_refused_in_one_line(dece_store: tuple[Path, str],
                                                                            tmp_path: Path, data: Any) -> None:
    """One value anywhere in a real alignment file replaced by junk: reading it either refuses with
    a ConfigError, or what it returns can be summarised and drawn without any other exception."""
    from assay.view.report.alignment import plots

    global _FITTED
    if _FITTED is None:
        path, run_id = dece_store
        _FITTED = json.loads(json.dumps(al.fit(Store(path, create=False), run_id,
                                               al.read_labels(EXAMPLES / "align_labels.jsonl"), resamples=0)))
    value = json.loads(json.dumps(_FITTED))
    where = data.draw(st.sampled_from(_paths(value)))
    target = value
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = data.draw(_JUNK)
    file = tmp_path / "a.json"
    file.write_text(json.dumps(value))
    try:
        read = al.read_alignment(file)
    except ConfigError as exc:
        assert "\n" not in str(exc)
        return
    al.summary_lines(read)
    plots(read)
    path, run_id = dece_store
    try:  # applied to the run it was fitted for: its values, or one line
        al.aligned_fields(read, Store(path, create=False), run_id)
    except ConfigError as exc:
        assert "\n" not in str(exc)


_FITTED: dict[str, Any] | None = None
