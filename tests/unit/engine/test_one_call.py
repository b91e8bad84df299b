"""One path in and one ending: ``assay.evaluate`` reads every source through
:func:`assay.data.load_items` (a file, records, a trace export) and ends with the post-run steps of
:mod:`assay.exchange.finish`, the code ``assay eval`` runs; so the API and the command line read
the same items and write the same results file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import assay
from assay.data import LoadedItems, TraceExport, load_items
from assay.judge.runner import RunnerConfig

ASSAY = shutil.which("assay", path=str(Path(sys.executable).parent))
QUIET = RunnerConfig(progress=False)
EXAMPLES = Path(assay.__file__).parent / "examples"
needs_cli = pytest.mark.skipif(ASSAY is None, reason="the assay console script is not installed (make setup)")


def run(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert ASSAY is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "OTEL_"))} | {"COLUMNS": "200"}
    return subprocess.run([ASSAY, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120, env=env,
                          stdin=subprocess.DEVNULL)


@needs_cli
@pytest.mark.parametrize("name", ["scores.jsonl", "scores.csv"])
def test_evaluate_export_writes_the_file_eval_o_writes(tmp_path: Path, name: str) -> None:
    shutil.copy(EXAMPLES / "answers.csv", tmp_path / "answers.csv")
    (tmp_path / "cli").mkdir()
    made = run("eval", "rougeL", "../answers.csv", "--store", "run.db", "-o", name, "--no-progress",
               cwd=tmp_path / "cli")
    assert made.returncode == 0, made.stderr
    assert f"wrote 2 row(s) to {name}" in made.stdout
    with pytest.warns(assay.InputNote):
        result = assay.evaluate(tmp_path / "answers.csv", method="rougeL", store=tmp_path / "api.db", runner=QUIET,
                                export=tmp_path / name)
    assert isinstance(result, assay.EvalResult)
    cli, api = (tmp_path / "cli" / name).read_text(), (tmp_path / name).read_text()
    assert api == cli  # the same run id, rows and columns: one implementation writes both
    assert len(api.strip().splitlines()) == (2 if name.endswith(".jsonl") else 3)
    # the same call again: the run is read back and its file replaced (assay wrote it)
    with pytest.warns(assay.InputNote):
        again = assay.evaluate(tmp_path / "answers.csv", method="rougeL", store=tmp_path / "api.db", runner=QUIET,
                               export=tmp_path / name)
    assert isinstance(again, assay.EvalResult) and again.was_finished
    assert (tmp_path / name).read_text() == cli


def test_a_results_file_assay_did_not_write_is_refused_before_the_run(tmp_path: Path) -> None:
    mine = tmp_path / "mine.csv"
    mine.write_text("not assay's\n")
    items = [{"id": "a", "query": "q", "response": "same words", "reference": "same words"}]
    with pytest.raises(assay.ConfigError, match="--force"):
        assay.evaluate(items, method="rougeL", store=tmp_path / "r.db", runner=QUIET, export=mine)
    assert not (tmp_path / "r.db").exists() and mine.read_text() == "not assay's\n"
    with pytest.raises(assay.ConfigError, match="METRIC=MIN"):
        assay.evaluate(items, method="rougeL", store=tmp_path / "r.db", runner=QUIET, gate="rougeL")
    assert not (tmp_path / "r.db").exists()
    result = assay.evaluate(items, method="rougeL", runner=QUIET, export=mine, force=True)
    assert isinstance(result, assay.EvalResult)
    assert json.loads(json.dumps(list(result)))[0]["rougeL"] == 1.0
    assert "rougeL" in mine.read_text().splitlines()[0]


def test_post_run_steps_end_one_method(tmp_path: Path) -> None:
    items = [{"id": "a", "query": "q", "response": "x", "reference": "x"}]
    with pytest.raises(assay.ConfigError, match="export: the post-run steps end one method's run"):
        assay.evaluate(items, methods=["rougeL", "bleu"], export=tmp_path / "s.jsonl", runner=QUIET)
    assert not (tmp_path / "s.jsonl").exists()


def test_a_trace_export_is_read_as_the_command_line_reads_it(tmp_path: Path) -> None:
    traces = EXAMPLES / "traces.otlp.json"
    loaded = load_items(TraceExport(traces))
    assert isinstance(loaded, LoadedItems)
    assert [i.metadata["trace_id"][:1] for i in loaded.items] == ["a", "b"]
    assert loaded.notes == ["2 item(s) from 3 trace(s)", "1 trace(s) skipped"]
    assert len(loaded.skipped) == 1 and "no LLM span with a response" in loaded.skipped[0]
    with pytest.warns(assay.InputNote, match=r"2 item\(s\) from 3 trace\(s\).*skipped trace c+: no LLM span"):
        result = assay.evaluate(TraceExport(traces), method="rougeL", store=tmp_path / "t.db", runner=QUIET)
    assert isinstance(result, assay.EvalResult)
    assert [row["id"] for row in result] == [i.id for i in loaded.items]
    manifest = result.store.run(result.run_id).manifest
    assert manifest["data_source"] == str(traces)


def test_a_bad_trace_file_names_the_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "t.jsonl"
    bad.write_text('{"resourceSpans": []}\n{"resourceSpans": [}\n')
    with pytest.raises(assay.InputError) as caught:
        assay.evaluate(TraceExport(bad), method="rougeL", runner=QUIET)
    assert str(caught.value).startswith(f"{bad}, line 2: not OTLP/JSON")


def test_a_failed_delivery_warns_and_keeps_the_result(tmp_path: Path) -> None:
    with pytest.warns(assay.NotDelivered, match="cannot reach Phoenix at http://127.0.0.1:9"):
        result = assay.evaluate(TraceExport(EXAMPLES / "traces.otlp.json"), method="rougeL", runner=QUIET,
                                store=tmp_path / "p.db", phoenix="http://127.0.0.1:9")
    assert isinstance(result, assay.EvalResult) and len(result) == 2
    with pytest.raises(assay.ConfigError, match="a URL such as"):
        assay.evaluate(TraceExport(EXAMPLES / "traces.otlp.json"), method="rougeL", phoenix="localhost:6006")


def test_how_the_data_was_read_is_told_at_the_user_s_line(tmp_path: Path) -> None:
    """The InputNote warning named asyncio/events.py as its place: it names the line that called assay."""
    shutil.copy(EXAMPLES / "answers.csv", tmp_path / "answers.csv")
    with pytest.warns(assay.InputNote) as caught:
        assay.evaluate(tmp_path / "answers.csv", method="rougeL", store=tmp_path / "api.db", runner=QUIET)
    assert [Path(w.filename).name for w in caught if w.category is assay.InputNote] == [Path(__file__).name]
