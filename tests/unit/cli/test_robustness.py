"""Runs that always end, faults that stay typed, bad input refused in one line before anything is
written: each case through the installed `assay` executable (the UI over HTTP), as a user or an
attacker meets it. Every case here failed before its fix."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ITEM
from tests.stubs import stub_server

ASSAY = shutil.which("assay", path=str(Path(sys.executable).parent))
pytestmark = pytest.mark.skipif(ASSAY is None, reason="the assay console script is not installed (make setup)")

GRADE = json.dumps({"reasoning": "stages", "issues": [], "score": 3, "justification": "ok"})


def run(*args: object, cwd: Path, timeout: float = 120, preexec: Any = None) -> subprocess.CompletedProcess:
    assert ASSAY is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    env["COLUMNS"] = "200"
    return subprocess.run([ASSAY, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=env, stdin=subprocess.DEVNULL, preexec_fn=preexec)


def one_line_error(proc: subprocess.CompletedProcess, status: int = 2) -> str:
    output = proc.stdout + proc.stderr
    assert proc.returncode == status, output
    assert "Traceback" not in output, output
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def items(n: int, **extra: Any) -> list[dict[str, Any]]:
    return [{**ITEM, "id": f"q{i}", "query": f"Question number {i}: {ITEM['query']}", **extra} for i in range(n)]


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def script(path: Path, rules: list[dict[str, Any]]) -> str:
    path.write_text(json.dumps({"rules": rules}))
    return f"scripted/{path}"


def export(cwd: Path, store: str) -> list[dict[str, Any]]:
    proc = run("export", store, "--format", "jsonl", "-o", "rows.jsonl", "--force", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in (cwd / "rows.jsonl").read_text().splitlines()]


# --- 1. a failing call ends its item; the run ends ---------------------------------------------
@pytest.mark.parametrize("fault", [{"fault": "server_error"}, {"fault": "hang", "seconds": 30}])
def test_a_call_that_keeps_failing_ends_its_item_and_the_run_ends(tmp_path: Path, fault: dict[str, Any]) -> None:
    write_jsonl(tmp_path / "items.jsonl", items(4))
    judge = script(tmp_path / "s.json", [{"match": "Question number 2:", "responses": [fault], "repeat": True},
                                         {"match": ".", "responses": [GRADE], "repeat": True}])
    proc = run("eval", "pointwise", "items.jsonl", "--judge", judge, "--retries", "0", "--timeout", "1",
               "--no-progress", "--store", "r.db", cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {r["id"]: r for r in export(tmp_path, "r.db")}
    assert len(rows) == 4
    assert rows["q2"]["pointwise"] is None and "judge call failed" in rows["q2"]["unscored_reason"]
    assert all(rows[k]["pointwise"] == 3.0 for k in ("q0", "q1", "q3"))
    # --resume tries the failed item once more, and ends again: its only call failed, so this
    # invocation reports every call failed (exit 4); the other items are not asked again
    proc = run("eval", "pointwise", "items.jsonl", "--judge", judge, "--retries", "0", "--timeout", "1",
               "--no-progress", "--store", "r.db", "--resume", cwd=tmp_path, timeout=60)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "the judge is unreachable: 1 judge call(s) failed and none succeeded" in proc.stderr
    assert "judge call failed" in {r["id"]: r for r in export(tmp_path, "r.db")}["q2"]["unscored_reason"]


# --- 2, 3. endpoints that hang or answer HTML ---------------------------------------------------
def test_a_hanging_endpoint_is_set_aside_and_the_healthy_one_answers(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "items.jsonl", items(3))
    with stub_server("hang", hang_s=4) as hang, stub_server("ok", lambda _: GRADE) as ok:
        proc = run("eval", "pointwise", "items.jsonl", "--judge", f"openai/m@{hang.url},{ok.url}", "--timeout", "1",
                   "--retries", "2", "--no-progress", "--store", "r.db", "--judge-opt", "schema_mode=none",
                   cwd=tmp_path, timeout=90)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert ok.requests >= 3
    assert [r["pointwise"] for r in export(tmp_path, "r.db")] == [3.0, 3.0, 3.0]


def test_an_html_page_with_status_200_is_a_typed_failure_and_every_item_is_recorded(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "items.jsonl", items(20))
    with stub_server("html") as html, stub_server("ok", lambda _: GRADE) as ok:
        proc = run("eval", "pointwise", "items.jsonl", "--judge", f"openai/m@{html.url},{ok.url}", "--retries", "1",
                   "--no-progress", "--store", "two.db", "--judge-opt", "schema_mode=none", cwd=tmp_path, timeout=90)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert html.requests >= 1
        rows = export(tmp_path, "two.db")
        assert len(rows) == 20 and all(r["pointwise"] == 3.0 for r in rows)
        # the maintenance page alone: the judge is unreachable (exit 4), one line, no traceback
        proc = run("eval", "pointwise", "items.jsonl", "--judge", f"openai/m@{html.url}", "--retries", "0",
                   "--no-progress", "--store", "one.db", "--judge-opt", "schema_mode=none", cwd=tmp_path, timeout=90)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "not a chat completion" in proc.stderr


# --- 4. unparsed votes are Unscored, never 0 ------------------------------------------------------
RUBRIC = "criteria:\n  - id: cites\n    description: The answer cites the statute it relies on.\n" \
         "  - id: short\n    description: The answer is short and to the point.\n"


def pairs(path: Path, n: int = 3) -> Path:
    return write_jsonl(path, [{"id": f"p{i}", "prompt": f"Question {i}?", "chosen": f"Good answer {i}.",
                               "rejected": f"Bad answer {i}."} for i in range(n)])


def test_a_rubric_audit_whose_votes_are_all_unparsed_scores_nothing_as_zero(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").write_text(RUBRIC)
    pairs(tmp_path / "p.jsonl")
    judge = script(tmp_path / "s.json", [{"match": ".", "responses": ["I cannot answer in JSON."], "repeat": True}])
    proc = run("rubric", "audit", "r.yaml", "--pairs", "p.jsonl", "--axes", "structure,fit", "--votes", "1",
               "--fit-parts", "accuracy", "--judge", judge, "--store", "a.db", "--output", "a.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads((tmp_path / "a.json").read_text())
    assert doc["summary"]["structure_mean"] is None
    assert doc["summary"]["accuracy_rubric"] is None and doc["summary"]["accuracy_no_rubric"] is None
    assert all(r["structure"] is None for r in doc["rubrics"])
    assert all(row["correct"] is None and row["unscored"]["reason"] for row in doc["detail"]["fit"]["rows"]["rubric"])
    # 13: the file is recognisably assay's: the same command replaces it without --force
    again = run("rubric", "audit", "r.yaml", "--pairs", "p.jsonl", "--axes", "structure", "--judge", judge,
                "--store", "a.db", "--output", "a.json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr


# --- 5, 22. triage refuses NaN, out-of-range and mistyped scores ------------------------------------
@pytest.mark.parametrize("line", [
    '{"id": "a", "correctness": 1.5, "relevance": NaN}',
    '{"id": "a", "correctness": 1.0, "relevance": Infinity}',
    '{"id": "a", "correctness": 1.5, "relevance": 0.9}',
    '{"id": "a", "correctness": "high", "relevance": 0.9}',
    '[1, 2]',
])
def test_triage_refuses_scores_that_are_not_numbers_in_range(tmp_path: Path, line: str) -> None:
    (tmp_path / "rows.jsonl").write_text(line + "\n")
    message = one_line_error(run("triage", "rows.jsonl", "-o", "t.json", cwd=tmp_path))
    assert "rows.jsonl" in message and "line 1" in message
    assert not (tmp_path / "t.json").exists()


def test_triage_output_is_json_without_nan_and_is_replaced_on_a_rerun(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "rows.jsonl", [{"id": "a", "correctness": 1.0, "relevance": 0.9},
                                          {"id": "b", "correctness": None, "relevance": 0.5}])
    for _ in range(2):  # 13: the second run replaces assay's own file without --force
        proc = run("triage", "rows.jsonl", "-o", "t.json", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "t.json").read_text()
    assert "NaN" not in text and json.loads(text)["answers"] == 2


# --- 6, 7, 15. comparisons need something to compare, under one question ----------------------------
def test_pairwise_refuses_one_id_under_two_questions_before_any_store(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "p.jsonl", [{"id": "q1", "query": "What is A?", "response": "A.", "system": "s1"},
                                       {"id": "q1", "query": "What is B?", "response": "B.", "system": "s2"}])
    message = one_line_error(run("pairwise", "p.jsonl", "--judge", "scripted/none.json", "--store", "p.db",
                                 cwd=tmp_path))
    assert "different questions" in message
    assert not (tmp_path / "p.db").exists()


def test_pairwise_with_one_system_refuses_before_any_store(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "p.jsonl", [{"id": f"q{i}", "query": "Q?", "response": "A.", "system": "s1"}
                                       for i in range(3)])
    message = one_line_error(run("pairwise", "p.jsonl", "--judge", "scripted/none.json", "--store", "p.db",
                                 cwd=tmp_path))
    assert "nothing to compare" in message
    assert not (tmp_path / "p.db").exists()


def test_a_tournament_whose_tiers_share_no_question_is_refused(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "new.jsonl", [{"id": "n1", "query": "Q1?", "response": "x", "system": "new"}])
    write_jsonl(tmp_path / "high.jsonl", [{"id": "h1", "query": "Q2?", "response": "y"}])
    write_jsonl(tmp_path / "low.jsonl", [{"id": "l1", "query": "Q3?", "response": "z"}])
    message = one_line_error(run("tournament", "new.jsonl", "--baselines", "high=high.jsonl,low=low.jsonl",
                                 "--judge", "scripted/none.json", "--store", "t.db", cwd=tmp_path))
    assert "share no question" in message or "nothing to compare" in message
    assert not (tmp_path / "t.db").exists()
    # 24: baselines and another mode at once is a conflict, not a silent choice
    message = one_line_error(run("tournament", "new.jsonl", "--baselines", "high=high.jsonl", "--mode",
                                 "round-robin", "--judge", "scripted/none.json", "--store", "t.db", cwd=tmp_path))
    assert "--mode" in message


def test_injection_with_bad_options_or_items_leaves_no_store(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "items.jsonl", items(2))
    write_jsonl(tmp_path / "noref.jsonl", [{k: v for k, v in i.items() if k != "reference"} for i in items(2)])
    judge = script(tmp_path / "s.json", [{"match": ".", "responses": [GRADE], "repeat": True}])
    cases = [("items.jsonl", "--guard", "nonsense", "--judge", judge),
             ("items.jsonl", "--judge", "scripted/missing.json"),
             ("noref.jsonl", "--judge", judge)]
    for data, *rest in cases:
        one_line_error(run("injection", data, "--method", "pointwise", *rest, "-o", "inj.json", cwd=tmp_path))
        assert not (tmp_path / "inj.db").exists(), rest
        assert not (tmp_path / "inj.json").exists()


# --- 8-10. annotations are validated before they are stored -----------------------------------------
@pytest.fixture
def ui_server(tmp_path: Path):
    """A finished pointwise run and `assay ui` serving it on 127.0.0.1; yields (base URL, token, run id)."""
    write_jsonl(tmp_path / "items.jsonl", items(2))
    judge = script(tmp_path / "s.json", [{"match": ".", "responses": [GRADE], "repeat": True}])
    assert run("eval", "pointwise", "items.jsonl", "--judge", judge, "--no-progress", "--store", "r.db",
               cwd=tmp_path).returncode == 0
    run_id = sqlite3.connect(tmp_path / "r.db").execute("SELECT run_id FROM runs").fetchone()[0]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    proc = subprocess.Popen([ASSAY, "ui", "r.db", "--stop-after", "120"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env | {"COLUMNS": "300"})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"(http://\S+)/\?token=(\S+)", line)
        assert match, line
        wait_listening(match.group(1))
        yield match.group(1), match.group(2), run_id
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)


def wait_listening(base: str) -> None:
    """The URL is printed once the port is bound; the server listens a moment later."""
    host, port = base.removeprefix("http://").rsplit(":", 1)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1" if host == "localhost" else host, int(port)), timeout=2).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def post(base: str, token: str, path: str, body: bytes, host: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(base + path, data=body, method="POST", headers={
        "content-type": "application/json", "x-assay-token": token, "cookie": f"assay_token={token}",
        **({"host": host} if host else {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def get(base: str, token: str, path: str, host: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(base + path, headers={"cookie": f"assay_token={token}",
                                                           **({"host": host} if host else {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


BAD_ANNOTATIONS = [
    b'{"path": "pointwise", "value": NaN}',
    b'{"path": "pointwise", "value": Infinity}',
    b'{"path": "pointwise", "value": 9}',
    b'{"path": "pointwise", "value": "great"}',
    b'{"path": "human.grade_correctness", "value": 9}',
    b'{"path": "human.grade_correctness", "value": 2.5}',
    b'{"path": "human.grade_correctness", "value": "5"}',
    b'{"path": "human.comment", "value": "' + b"x" * (70 * 1024) + b'"}',
    b'{"path": "human.comment", "value": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    b'{"path": "human.note", "value": ' + b'{"a":' * 40 + b"1" + b"}" * 40 + b"}",
    # a reviewer's score override is exactly what they entered, with why: no blank, no text, no silent 0
    b'{"path": "pointwise", "value": "", "reason": "r"}',
    b'{"path": "pointwise", "value": "2", "reason": "r"}',
    b'{"path": "pointwise", "value": 2}',
    b'{"path": "pointwise", "value": 2, "reason": "   "}',
    b'{"path": "pointwise\\n", "value": 2, "reason": "r"}',
    b'{"path": "human.comment\\n", "value": "x"}',
    # were 500s (OverflowError, UnicodeEncodeError), or stored a list's or a dict's repr as text
    b'{"path": "pointwise", "value": 1' + b"0" * 400 + b', "reason": "r"}',
    b'{"path": "human.comment", "value": "\\ud800"}',
    b'{"path": "pointwise", "value": 2, "reason": "r \\ud800"}',
    b'{"path": "pointwise", "value": 2, "reason": "r", "author": "a \\udfff"}',
    b'{"path": "pointwise", "value": 2, "reason": {"a": 1}}',
    b'{"path": "pointwise", "value": 2, "reason": "r", "author": ["a", "b"]}',
    b'{"path": "pointwise", "value": 2, "reason": "' + b"r" * 4001 + b'"}',
    b'{"path": "pointwise", "value": null}',
]


def test_bad_annotations_are_refused_with_400_and_nothing_is_stored(ui_server) -> None:
    base, token, run_id = ui_server
    for body in BAD_ANNOTATIONS:
        status, text = post(base, token, f"/api/run/{run_id}/item/0/annotations", body)
        assert status in (400, 413), (body[:80], status, text)
    status, text = get(base, token, f"/api/run/{run_id}/annotations")
    assert status == 200 and json.loads(text) == []
    ok = post(base, token, f"/api/run/{run_id}/item/0/annotations",
              b'{"path": "human.grade_correctness", "value": 4}')
    assert ok[0] == 201, ok
    ok = post(base, token, f"/api/run/{run_id}/item/0/annotations",
              b'{"path": "pointwise", "value": 2, "reason": "the dose is right"}')
    assert ok[0] == 201, ok
    assert get(base, token, f"/api/run/{run_id}/item/0")[0] in (200, 404)
    assert len(json.loads(get(base, token, f"/api/run/{run_id}/annotations")[1])) == 2
    assert get(base, token, "/api/run/nosuch/annotations")[0] == 404
    # the history shows a comment as written (it was JSON-escaped: "Wrong dose: \u003cb\u003e50 mg ...")
    note = post(base, token, f"/api/run/{run_id}/item/0/annotations",
                json.dumps({"path": "human.comment", "value": 'Wrong dose: <b>50 mg</b> & "AT&T"'}).encode())
    assert note[0] == 201, note
    status, page = get(base, token, f"/run/{run_id}/item/0")
    assert status == 200 and "\\u003c" not in page
    assert "Wrong dose: &lt;b&gt;50 mg&lt;/b&gt; &amp; &#34;AT&amp;T&#34;" in page


def test_the_host_check_stays_on_when_bound_by_name(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "items.jsonl", items(1))
    judge = script(tmp_path / "s.json", [{"match": ".", "responses": [GRADE], "repeat": True}])
    assert run("eval", "pointwise", "items.jsonl", "--judge", judge, "--no-progress", "--store", "r.db",
               cwd=tmp_path).returncode == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    proc = subprocess.Popen([ASSAY, "ui", "r.db", "--host", "localhost", "--stop-after", "60"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env | {"COLUMNS": "300"})
    try:
        assert proc.stdout is not None
        match = re.search(r"http://localhost:(\d+)/\?token=(\S+)", proc.stdout.readline())
        assert match
        port, token = match.group(1), match.group(2)
        base = f"http://127.0.0.1:{port}"
        wait_listening(base)
        assert get(base, token, "/", host=f"localhost:{port}")[0] == 200
        assert get(base, token, "/", host=f"attacker.example:{port}")[0] == 403
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)


# --- 12. outputs are regular files ------------------------------------------------------------------
def test_export_refuses_devices_and_pipes_without_blocking(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "items.jsonl", items(1))
    judge = script(tmp_path / "s.json", [{"match": ".", "responses": [GRADE], "repeat": True}])
    assert run("eval", "pointwise", "items.jsonl", "--judge", judge, "--no-progress", "--store", "r.db",
               cwd=tmp_path).returncode == 0
    os.mkfifo(tmp_path / "pipe")
    for target, extra in (("/dev/stdout", ()), ("pipe", ()), ("/dev/full", ("--force",))):
        message = one_line_error(run("export", "r.db", "-o", target, *extra, cwd=tmp_path, timeout=30))
        assert "not a regular file" in message
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
    assert stat.S_ISFIFO(os.stat(tmp_path / "pipe").st_mode)


# --- 14. a damaged store is one line ------------------------------------------------------------------
def test_a_store_with_damaged_pages_is_one_line(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "items.jsonl", items(3))
    judge = script(tmp_path / "s.json", [{"match": ".", "responses": [GRADE], "repeat": True}])
    assert run("eval", "pointwise", "items.jsonl", "--judge", judge, "--no-progress", "--store", "r.db",
               cwd=tmp_path).returncode == 0
    data = bytearray((tmp_path / "r.db").read_bytes())
    rng = __import__("random").Random(3)
    for offset in range(4096, len(data)):
        data[offset] = rng.randrange(256)
    (tmp_path / "r.db").write_bytes(bytes(data))
    for args in (("export", "r.db", "-o", "out.jsonl"), ("report", "r.db", "-o", "rep.html"),
                 ("eval", "pointwise", "items.jsonl", "--judge", judge, "--no-progress", "--store", "r.db",
                  "--resume")):
        proc = run(*args, cwd=tmp_path)
        message = one_line_error(proc)
        assert "r.db" in message, message


# --- 16. meta does not write into its input ------------------------------------------------------------
def test_meta_annotations_refuses_its_input_as_store(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "items.jsonl", items(1))
    judge = script(tmp_path / "s.json", [{"match": ".", "responses": [GRADE], "repeat": True}])
    assert run("eval", "pointwise", "items.jsonl", "--judge", judge, "--no-progress", "--store", "m.db",
               cwd=tmp_path).returncode == 0
    before = (tmp_path / "m.db").read_bytes()
    message = one_line_error(run("meta", "annotations", "m.db", "--method", "rougeL", "--store", "m.db",
                                 cwd=tmp_path))
    assert "--store" in message
    assert (tmp_path / "m.db").read_bytes() == before


# --- 17. SIGTERM stops a run whatever SIGINT's disposition ------------------------------------------------
def test_sigterm_stops_a_run_when_sigint_is_ignored(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "items.jsonl", items(3))
    judge = script(tmp_path / "s.json", [{"match": ".", "responses": [{"fault": "hang", "seconds": 60}],
                                          "repeat": True}])
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    proc = subprocess.Popen([ASSAY, "eval", "pointwise", "items.jsonl", "--judge", judge, "--no-progress", "--store",
                             "r.db"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # wait until the run has started (its row exists)
        try:
            if sqlite3.connect(tmp_path / "r.db").execute("SELECT COUNT(*) FROM runs").fetchone()[0]:
                break
        except sqlite3.Error:
            pass
        time.sleep(0.2)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, out + err
    db = sqlite3.connect(tmp_path / "r.db")
    assert db.execute("SELECT status FROM runs").fetchone()[0] == "interrupted"
    assert db.execute("SELECT COUNT(*) FROM run_locks").fetchone()[0] == 0


# --- 19. credentials in a judge URL never show --------------------------------------------------------
def test_credentials_in_a_judge_url_are_redacted(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "items.jsonl", items(1))
    with socket.socket() as sock:  # a port with nothing listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = run("eval", "pointwise", "items.jsonl", "--judge", f"openai/m@http://user:SECRETKEY42@127.0.0.1:{port}/v1",
               "--retries", "0", "--no-progress", "--store", "r.db", cwd=tmp_path)
    assert proc.returncode == 4, proc.stderr
    assert "SECRETKEY42" not in proc.stdout + proc.stderr
    assert b"SECRETKEY42" not in (tmp_path / "r.db").read_bytes()
    wal = tmp_path / "r.db-wal"
    assert not wal.exists() or b"SECRETKEY42" not in wal.read_bytes()


@pytest.mark.parametrize(("judge", "shown"), [
    ("openai/m@http://[::1", "'http://[::1'"),
    ("openai/m@http://user:SECRETKEY42@[::1/v1", "'http://***@[::1/v1'"),
    ("openai/m@http://[::1]:99999/v1", "'http://[::1]:99999/v1'"),
])
def test_a_malformed_judge_url_is_one_line_naming_it_before_the_store(tmp_path: Path, judge: str, shown: str) -> None:
    """http://[::1 was a ValueError: Invalid IPv6 URL traceback (from the credentials' redaction)."""
    write_jsonl(tmp_path / "items.jsonl", items(1))
    line = one_line_error(run("eval", "dece", "items.jsonl", "--judge", judge, "--store", "r.db", cwd=tmp_path))
    assert shown in line and "not a valid URL" in line and "SECRETKEY42" not in line, line
    assert not (tmp_path / "r.db").exists()


# --- 20, 23, 24. bad options and files: one line --------------------------------------------------------
@pytest.mark.parametrize("extra", [
    ("--votes", "0"), ("--votes", "-3"), ("--runs", "-1"), ("--paraphrases", "-1"), ("--attacks", "-1"),
    ("--tau", "nan"), ("--limit", "-1"), ("--axes", ""), ("--axes", "structure", "--fit-parts", ""),
])
def test_rubric_audit_options_are_checked_at_the_option(tmp_path: Path, extra: tuple[str, ...]) -> None:
    (tmp_path / "r.yaml").write_text(RUBRIC)
    pairs(tmp_path / "p.jsonl")
    proc = run("rubric", "audit", "r.yaml", "--pairs", "p.jsonl", *extra, "--judge", "scripted/none.json",
               "--store", "a.db", cwd=tmp_path)
    if extra == ("--axes", "structure", "--fit-parts", ""):
        assert proc.returncode != 0 or "Traceback" not in proc.stderr
        return
    one_line_error(proc)
    assert not (tmp_path / "a.db").exists()


@pytest.mark.parametrize(("command", "extra", "says"), [
    ("audit", ("--runs", "0"), "--runs: Input should be greater than or equal to 2"),
    ("audit", ("--runs", "1"), "--runs: Input should be greater than or equal to 2"),
    ("audit", ("--attacks", "0"), "--attacks: Input should be greater than or equal to 1"),
    ("compare", ("--runs", "1"), "--runs: Input should be greater than or equal to 2"),
    ("repair", ("--mode", "vfr", "--runs", "1"), "--runs: Input should be greater than or equal to 2"),
    ("repair", ("--mode", "vfr", "--beam", "100"), "--beam: Input should be less than or equal to 64"),
])
def test_rubric_options_out_of_the_audits_range_name_the_flag(tmp_path: Path, command: str, extra: tuple[str, ...],
                                                               says: str) -> None:
    """Values the option accepts but the audit's configuration does not were a pydantic
    ValidationError traceback (audit, compare) or a four-line dump (repair --mode vfr)."""
    (tmp_path / "r.yaml").write_text(RUBRIC)
    pairs(tmp_path / "p.jsonl")
    judge = script(tmp_path / "g.json", [{"match": ".", "responses": ["not json at all"], "repeat": True}])
    sources = ("r.yaml", "r.yaml") if command == "compare" else ("r.yaml",)
    output = ("-o", "fixed.yaml") if command == "repair" else ("-o", "out.json")
    line = one_line_error(run("rubric", command, *sources, "--pairs", "p.jsonl", *extra, *output, "--judge", judge,
                              "--store", "a.db", cwd=tmp_path))
    assert line == f"error: {says}", line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json", "p.jsonl", "r.yaml"]


@pytest.mark.parametrize("extra", [("--k", "0"), ("--k", "-3"), ("--cluster-size", "0"), ("--diversity", "5"),
                                   ("--diversity", "nan")])
def test_rubric_discover_options_are_checked_at_the_option(tmp_path: Path, extra: tuple[str, ...]) -> None:
    pairs(tmp_path / "p.jsonl")
    one_line_error(run("rubric", "discover", "p.jsonl", "-o", "r.yaml", *extra, "--judge", "scripted/none.json",
                       "--store", "d.db", cwd=tmp_path))
    assert not (tmp_path / "d.db").exists()


@pytest.mark.parametrize(("name", "text", "needle"), [
    ("bad.yaml", b"\xff\xfe not text", "not UTF-8"),
    ("syntax.yaml", b"criteria:\n  - id: a\n    description: [unclosed\n", "not valid YAML"),
    ("support.yaml", b"criteria:\n  - id: a\n    description: fine\n    support: -3\n", "support"),
    # the "billion laughs": nine levels of aliases, a few lines that no reader can walk (it hung)
    ("bomb.yaml", ("a: &a [" + ",".join(['"lol"'] * 9) + "]\n" + "".join(
        f"{n}: &{n} [" + ",".join([f"*{p}"] * 9) + "]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True))
        + "criteria: []\n").encode(), "line 2: not valid YAML: an alias (*name) repeats a value"),
])
def test_a_bad_rubric_file_is_one_line(tmp_path: Path, name: str, text: bytes, needle: str) -> None:
    (tmp_path / name).write_bytes(text)
    pairs(tmp_path / "p.jsonl")
    for args in (("rubric", "repair", name, "--pairs", "p.jsonl", "-o", "fixed.yaml"),
                 ("rubric", "report", "--rubric", name, "-o", "rep.html")):
        message = one_line_error(run(*args, "--judge", "scripted/none.json", cwd=tmp_path)
                                 if args[1] == "repair" else run(*args, cwd=tmp_path))
        assert needle in message and name in message, message


@pytest.mark.parametrize("row", [
    {"id": "x", "query": "Q?", "a": "text", "b": {"response": "B"}, "human": {"winner": "A"}},
    {"id": "x", "query": "Q?", "a": {"response": "A"}, "b": {"response": "B"}, "human": "A"},
])
def test_preference_pairs_of_the_wrong_shape_are_one_line(tmp_path: Path, row: dict[str, Any]) -> None:
    (tmp_path / "r.yaml").write_text(RUBRIC)
    write_jsonl(tmp_path / "p.jsonl", [row])
    message = one_line_error(run("rubric", "audit", "r.yaml", "--pairs", "p.jsonl", "--axes", "fit",
                                 "--judge", "scripted/none.json", "--store", "a.db", cwd=tmp_path))
    assert "p.jsonl" in message and "line 1" in message


def test_eval_limit_below_one_is_refused(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "items.jsonl", items(2))
    one_line_error(run("injection", "items.jsonl", "--method", "rougeL", "--limit", "-1", cwd=tmp_path))


# --- bounds found by a fuzz review: one line naming the option, before any file or store ---------------
EXAMPLES = Path(__file__).parents[3] / "examples"


@pytest.mark.parametrize("option", [("--seed", "-1"), ("--seed", str(2**32)), ("--resamples", "99999999999999")])
@pytest.mark.parametrize("command", [
    ("compare", "r1.db", "r1.db"), ("align", "r1.db", "--labels", "labels.jsonl"),
    ("injection", "answers.jsonl", "-m", "rougeL"), ("meta", "ragchecker", "answers.jsonl", "-m", "rougeL"),
])
def test_seed_and_resamples_out_of_range_are_one_line_before_any_file(tmp_path: Path, command: tuple[str, ...],
                                                                       option: tuple[str, str]) -> None:
    """--seed is what numpy takes (0 to 2**32 - 1; -1 was a ValueError traceback after the store was
    made) and --resamples at most 1,000,000 (more was a MemoryError, or align never ended)."""
    shutil.copy(EXAMPLES / "answers.jsonl", tmp_path / "answers.jsonl")
    write_jsonl(tmp_path / "labels.jsonl", [{"id": "q1", "label": 1}])
    made = run("eval", "rougeL", "answers.jsonl", "--store", "r1.db", "--no-progress", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    before = sorted(p.name for p in tmp_path.iterdir())
    line = one_line_error(run(*command, *option, cwd=tmp_path))
    assert option[0] in line and ("minimum 0" in line or "maximum" in line), line
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    if command[0] == "compare" and option[0] == "--seed":  # the largest seed is taken
        assert run(*command, "--seed", str(2**32 - 1), cwd=tmp_path).returncode == 0


# --- judges through LiteLLM (issue 29): a real LiteLLM call against a server on 127.0.0.1 ---------------
def test_a_litellm_judge_scores_through_the_executable(tmp_path: Path) -> None:
    pytest.importorskip("litellm")
    write_jsonl(tmp_path / "items.jsonl", items(2))
    with stub_server("ok", lambda _: GRADE) as ok:
        proc = run("eval", "pointwise", "items.jsonl", "--judge", "litellm/openai/m", "--judge-opt",
                   f"api_base={ok.url}", "--judge-opt", "api_key=sk-test", "--no-progress", "--store", "r.db",
                   cwd=tmp_path, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert ok.requests == 2
    assert [r["pointwise"] for r in export(tmp_path, "r.db")] == [3.0, 3.0]
    bad = run("eval", "pointwise", "items.jsonl", "--judge", "litellm/nomodel", "--store", "b.db", cwd=tmp_path)
    assert "name the provider" in one_line_error(bad)


# --- issue 28: rubric commands run as runs of the engine ----------------------------------------------
def test_a_rubric_audit_is_a_run_with_a_record_and_the_engine_options(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").write_text(RUBRIC)
    pairs(tmp_path / "p.jsonl")
    verdict = json.dumps({"reasoning": "ok", "verdict": "PASS"})
    log = tmp_path / "calls.log"
    (tmp_path / "s.json").write_text(json.dumps({"rules": [{"match": ".", "responses": [verdict], "repeat": True}],
                                                 "log": str(log)}))
    args = ("rubric", "audit", "r.yaml", "--axes", "structure", "--judge", f"scripted/{tmp_path / 's.json'}",
            "--store", "a.db", "--timeout", "5", "--retries", "1", "--concurrency", "2")
    proc = run(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    runs = sqlite3.connect(tmp_path / "a.db").execute("SELECT method, status FROM runs").fetchall()
    assert runs == [("rubric-audit", "finished")]
    calls = log.read_text().count("\n")
    assert calls == 2 * 5  # two criteria, five properties
    again = run(*args, cwd=tmp_path)  # the same work again: every call from the cache
    assert again.returncode == 0 and log.read_text().count("\n") == calls
    spent = run("rubric", "audit", "r.yaml", "--axes", "structure", "--judge", f"scripted/{tmp_path / 's.json'}",
                "--store", "b.db", "--budget", "0", cwd=tmp_path)
    assert spent.returncode == 3, spent.stdout + spent.stderr  # the budget stops it, as in every command
    status = sqlite3.connect(tmp_path / "b.db").execute("SELECT status FROM runs").fetchone()[0]
    assert status == "incomplete: budget exhausted"


def test_an_audits_criteria_are_units_a_reviewer_can_override(tmp_path: Path) -> None:
    from assay.core.protocols import run_presentation
    from assay.store import Store, StoreError

    (tmp_path / "r.yaml").write_text(RUBRIC)
    script(tmp_path / "s.json", [{"match": "Design property — Atomic", "repeat": True,
                                  "responses": [json.dumps({"reasoning": "two things", "verdict": "FAIL"})]},
                                 {"match": ".", "repeat": True,
                                  "responses": [json.dumps({"reasoning": "ok", "verdict": "PASS"})]}])
    proc = run("rubric", "audit", "r.yaml", "--axes", "structure", "--judge", f"scripted/{tmp_path / 's.json'}",
               "--store", "a.db", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    store = Store(tmp_path / "a.db", create=False)
    (audit,) = store.list_runs()
    rows = store.results(audit.run_id)
    assert [(r.item["id"], r.scores["structure"], r.details["flags"]["atomic"]) for r in rows] == [
        ("cites", 4.0, False), ("short", 4.0, False)]
    cites = rows[0].key
    again = run("rubric", "audit", "r.yaml", "--axes", "structure", "--judge", f"scripted/{tmp_path / 's.json'}",
                "--store", "a.db", cwd=tmp_path)
    assert again.returncode == 0 and len(store.results(audit.run_id)) == 2  # re-run: the same two units
    rules = run_presentation("rubric-audit")  # a workflow's runs, shown and reviewed as a method's
    store.annotate(audit.run_id, cites, "flags.atomic", True, author="ann", rules=rules)
    store.annotate(audit.run_id, cites, "structure", 5, author="ann", rules=rules, reason="cites its source")
    with pytest.raises(StoreError, match="yes/no"):
        store.annotate(audit.run_id, cites, "flags.atomic", 1, author="ann", rules=rules)
    with pytest.raises(StoreError, match=r"within \[0, 5\]"):
        store.annotate(audit.run_id, cites, "structure", 7, author="ann", rules=rules, reason="x")
    exported = run("export", "a.db", "-o", "audit.jsonl", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert [json.loads(line)["id"] for line in (tmp_path / "audit.jsonl").read_text().splitlines()] == ["cites",
                                                                                                     "short"]
    meta = run("meta", "ragchecker", "x.json", "-m", "rubric-audit", cwd=tmp_path)
    assert meta.returncode == 2 and "unknown method(s) rubric-audit" in meta.stderr


def test_a_rubric_audit_killed_with_sigkill_resumes_without_repeating_a_call(tmp_path: Path) -> None:
    """kill -9 in the middle of an audit's structure votes, then the same command again: every
    call made before the kill comes from the store; no prompt is sent to the judge twice."""
    import signal
    import time
    from collections import Counter

    assert ASSAY is not None
    (tmp_path / "r.yaml").write_text(RUBRIC)
    log = tmp_path / "calls.log"
    verdict = json.dumps({"reasoning": "ok", "verdict": "PASS"})
    (tmp_path / "s.json").write_text(json.dumps({"rules": [{"match": ".", "responses": [verdict], "repeat": True}],
                                                 "log": str(log), "latency": 0.4}))
    args = [ASSAY, "rubric", "audit", "r.yaml", "--axes", "structure", "--judge", f"scripted/{tmp_path / 's.json'}",
            "--store", "a.db", "--concurrency", "1"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    proc = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while (not log.exists() or log.read_text().count("\n") < 3) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=20)
    before = log.read_text().count("\n")
    assert 3 <= before < 10  # killed part-way through the 2 × 5 votes
    again = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    sent = Counter(log.read_text().split())
    assert sum(sent.values()) == 10 and max(sent.values()) == 1  # each of the 10 prompts sent once


def test_assay_ui_stops_after_its_time_as_a_normal_end_and_refuses_an_empty_host(tmp_path: Path) -> None:
    """--stop-after ended with exit 130 ('interrupted'), as a Ctrl-C does; --host '' bound every interface."""
    write_jsonl(tmp_path / "items.jsonl", items(1))
    judge = script(tmp_path / "s.json", [{"match": ".", "responses": [GRADE], "repeat": True}])
    assert run("eval", "pointwise", "items.jsonl", "--judge", judge, "--no-progress", "--store", "r.db",
               cwd=tmp_path).returncode == 0
    timed = run("ui", "r.db", "--stop-after", "1", cwd=tmp_path, timeout=60)
    assert timed.returncode == 0, timed.stdout + timed.stderr
    assert "assay ui on http://127.0.0.1:" in timed.stdout and "stopped after 1 s (--stop-after)" in timed.stdout
    empty = one_line_error(run("ui", "r.db", "--host", "", "--stop-after", "1", cwd=tmp_path, timeout=60))
    assert "--host ''" in empty


def test_triage_of_a_store_whose_latest_run_is_not_lemaj_names_its_lemaj_runs(tmp_path: Path) -> None:
    """It said 'not a LeMAJ run: 2 row(s) without correctness/relevance' of a store whose latest run was a
    pointwise one, without saying which run it read or where the LeMAJ runs were."""
    write_jsonl(tmp_path / "items.jsonl", items(1))
    judge = script(tmp_path / "s.json", [{"match": ".", "responses": [GRADE], "repeat": True}])
    assert run("eval", "pointwise", "items.jsonl", "--judge", judge, "--no-progress", "--store", "r.db",
               cwd=tmp_path).returncode == 0
    message = one_line_error(run("triage", "r.db", cwd=tmp_path))
    assert "the latest run " in message and "is a pointwise run, not a LeMAJ run" in message
    assert "the store holds no LeMAJ run" in message
