"""What a user does after the first command: the same command again, their own RAGAS or
DeepEval files with every field those tools write, assay's own output fed back in, the export
in the format its name says, and ``eval -o`` writing the results file."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import assay
from assay.judge.runner import RunnerConfig

ASSAY = shutil.which("assay", path=str(Path(sys.executable).parent))
QUIET = RunnerConfig(progress=False)
needs_cli = pytest.mark.skipif(ASSAY is None, reason="the assay console script is not installed (make setup)")

# A record as RAGAS 0.2 writes it (EvaluationDataset.to_jsonl): reference_contexts and the rest
RAGAS = [{"user_input": "When was the Eiffel Tower completed?",
          "retrieved_contexts": ["The Eiffel Tower was built from 1887 to 1889."],
          "reference_contexts": ["It was completed in March 1889."],
          "response": "It was completed in 1889.", "multi_responses": None,
          "reference": "It was completed in 1889.", "rubrics": None}]
# A test case as DeepEval saves it (EvaluationDataset.save_as(file_type="json"))
DEEPEVAL = [{"input": "What is the refund window?", "actual_output": "30 days from purchase.",
             "expected_output": "Refunds are accepted within 30 days of purchase.",
             "context": ["Refund policy: purchases can be refunded within 30 days."],
             "retrieval_context": ["Refund policy: purchases can be refunded within 30 days."],
             "additional_metadata": {"source": "support-bot v2"}, "name": "refund-window",
             "comments": None, "tools_called": None, "expected_tools": None}]


def run(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert ASSAY is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")} | {"COLUMNS": "200"}
    return subprocess.run([ASSAY, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120, env=env,
                          stdin=subprocess.DEVNULL)


def test_the_peers_extra_fields_are_kept_under_metadata_and_reported_once() -> None:
    with pytest.warns(assay.InputNote, match=r"kept 3 unused fields under metadata: reference_contexts, "
                                             r"multi_responses, rubrics"):
        result = assay.evaluate(RAGAS, method="rougeL", runner=QUIET)
    assert isinstance(result, assay.EvalResult)
    (row,) = list(result)
    assert row["metadata"] == {"reference_contexts": ["It was completed in March 1889."], "multi_responses": None,
                               "rubrics": None}
    assert row["rougeL"] == 1.0

    with pytest.warns(assay.InputNote) as caught:
        deepeval = assay.evaluate(DEEPEVAL, method="rougeL", runner=QUIET)
    assert len(caught) == 1  # reported once for the whole data, not per record
    assert "kept 6 unused fields under metadata: context, additional_metadata, name, comments, tools_called, " \
           "expected_tools" in str(caught[0].message)
    (row,) = list(deepeval)
    assert row["metadata"]["additional_metadata"] == {"source": "support-bot v2"} and row["metadata"]["name"] == \
        "refund-window"


def test_an_extra_dataframe_column_is_kept_and_a_users_metadata_is_merged() -> None:
    frame = pd.DataFrame([{"id": "a", "query": "q", "response": "same words", "reference": "same words",
                           "team": "search", "metadata": {"jurisdiction": "NY"}}])
    with pytest.warns(assay.InputNote, match="kept 1 unused field under metadata: team"):
        result = assay.evaluate(frame, method="rougeL", runner=QUIET)
    assert next(iter(result))["metadata"] == {"jurisdiction": "NY", "team": "search"}


@needs_cli
def test_the_cli_reads_real_peer_files_and_says_so_once(tmp_path: Path) -> None:
    (tmp_path / "ragas.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RAGAS * 1))
    (tmp_path / "deepeval.json").write_text(json.dumps([DEEPEVAL[0], {**DEEPEVAL[0], "name": "second"}]))
    proc = run("eval", "rougeL", "ragas.jsonl", "--store", "r.db", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "kept 3 unused fields under metadata: reference_contexts, multi_responses, rubrics" in proc.stderr
    proc = run("eval", "bleu", "deepeval.json", "--store", "r.db", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("kept 6 unused fields under metadata") == 1, proc.stderr


def test_the_readme_example_reads_its_own_output_into_one_wide_row_per_answer(tmp_path: Path) -> None:
    """frame = result.to_pandas(); assay.evaluate(frame, methods=["rougeL", "bleu"])."""
    items = [{"id": f"q{n}", "query": "What is the refund window?", "response": text,
              "reference": "Refunds are accepted within 30 days of purchase.", "system": "bot"}
             for n, text in enumerate(["30 days from purchase.", "Refunds are accepted within 30 days."], 1)]
    result = assay.evaluate(items, method="rougeL", store=tmp_path / "run.db", runner=QUIET)
    frame = result.to_pandas()
    assert {"run_id", "status", "rougeL", "judge_calls"} <= set(frame.columns)
    with pytest.warns(assay.InputNote, match=r"left out \d+ column\(s\) of an earlier assay result: run_id, status"):
        both = assay.evaluate(frame, methods=["rougeL", "bleu"], runner=QUIET)
    assert isinstance(both, assay.EvalResults)
    wide = both.to_pandas()
    assert len(wide) == 2 and list(wide["id"]) == ["q1", "q2"]  # one row per answer, not one per method
    assert {"rougeL", "bleu", "rougeL.status", "bleu.status", "rougeL.run_id"} <= set(wide.columns)
    assert not wide[["rougeL", "bleu"]].isna().any().any()
    assert list(wide["rougeL"]) == list(frame["rougeL"])  # the earlier scores were not taken as input
    assert all("rougeL" not in row.get("metadata", {}) for row in both["bleu"])  # nor kept as metadata
    # and the wide frame reads back too
    with pytest.warns(assay.InputNote, match="left out"):
        again = assay.evaluate(wide, method="rougeL", runner=QUIET)
    assert [r["rougeL"] for r in again] == list(frame["rougeL"])


def test_the_same_call_twice_continues_or_reads_back_and_fresh_starts_over(tmp_path: Path) -> None:
    items = [{"id": "a", "query": "q", "response": "same words", "reference": "same words"}]
    first = assay.evaluate(items, method="rougeL", store=tmp_path / "r.db", runner=QUIET)
    assert isinstance(first, assay.EvalResult) and not first.was_finished
    again = assay.evaluate(items, method="rougeL", store=tmp_path / "r.db", runner=QUIET)
    assert isinstance(again, assay.EvalResult)
    assert again.run_id == first.run_id and again.was_finished and list(again) == list(first)
    old = assay.evaluate(items, method="rougeL", store=tmp_path / "r.db", runner=QUIET, resume=True)
    assert isinstance(old, assay.EvalResult) and old.was_finished  # the old keyword still works
    fresh = assay.evaluate(items, method="rougeL", store=tmp_path / "r.db", runner=QUIET, fresh=True)
    assert isinstance(fresh, assay.EvalResult)
    assert fresh.run_id == first.run_id and not fresh.was_finished and fresh.notes
    assert len(sqlite3.connect(tmp_path / "r.db").execute("SELECT * FROM runs").fetchall()) == 1


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the example answers.csv and run.db, the store of ``assay eval rougeL`` over it:
    made once for the four formats below (each test exports from its own copy)."""
    folder = tmp_path_factory.mktemp("evaluated")
    shutil.copy(Path(assay.__file__).parent / "examples" / "answers.csv", folder / "answers.csv")
    made = run("eval", "rougeL", "answers.csv", "--store", "run.db", "--no-progress", cwd=folder)
    assert made.returncode == 0, made.stderr
    for name in folder.iterdir():
        if name.name.endswith(("-wal", "-shm")):
            name.unlink()
    return folder


@needs_cli
@pytest.mark.parametrize(("name", "check"), [
    ("scores.csv", lambda p: pd.read_csv(p)["rougeL"].notna().all()),
    ("scores.parquet", lambda p: p.read_bytes()[:4] == b"PAR1" and len(pd.read_parquet(p)) == 2),
    ("scores.jsonl", lambda p: [json.loads(x)["id"] for x in p.read_text().splitlines()] == ["r1", "r2"]),
    ("scores.json", lambda p: [r["id"] for r in json.loads(p.read_text())] == ["r1", "r2"]),
])
def test_export_writes_the_format_its_name_says(evaluated: Path, tmp_path: Path, name: str, check: object) -> None:
    for made in evaluated.iterdir():
        shutil.copy(made, tmp_path / made.name)
    proc = run("export", "run.db", "-o", name, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert check(tmp_path / name)  # type: ignore[operator]
    again = run("export", "run.db", "-o", name, cwd=tmp_path)  # assay recognises its own file and replaces it
    assert again.returncode == 0, again.stderr
    # what assay wrote, assay reads back as input
    back = run("eval", "bleu", name, "--store", "back.db", "--no-progress", cwd=tmp_path)
    assert back.returncode == 0, back.stderr
    assert "left out" in back.stderr and "run_id" in back.stderr


@needs_cli
def test_eval_o_writes_the_results_file_and_the_store_stays_the_store(tmp_path: Path) -> None:
    shutil.copy(Path(assay.__file__).parent / "examples" / "answers.csv", tmp_path / "answers.csv")
    proc = run("eval", "rougeL", "answers.csv", "-o", "rouge.csv", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "wrote 2 row(s) to rouge.csv" in proc.stdout
    assert list(pd.read_csv(tmp_path / "rouge.csv")["id"]) == ["r1", "r2"]
    assert (tmp_path / "assay-run.db").is_file()  # the default store
    again = run("eval", "rougeL", "answers.csv", "-o", "rouge.csv", "--no-progress", cwd=tmp_path)
    assert again.returncode == 0 and "already finished" in again.stdout, again.stdout + again.stderr
    (tmp_path / "mine.csv").write_text("not assay's\n")
    refused = run("eval", "rougeL", "answers.csv", "-o", "mine.csv", "--store", "other.db", cwd=tmp_path)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "--force" in refused.stderr
    assert not (tmp_path / "other.db").exists()  # refused before the store was made
