"""The Phoenix round trip against a real Arize Phoenix server (started here on 127.0.0.1 with its own
SQLite in a temporary folder, stopped afterwards): the documented RAG pipeline instrumented with the
OpenInference conventions (examples/phoenix_rag.py) sends its traces to Phoenix, `assay eval --from-phoenix` reads them,
scores them (rougeL, and DeCE with the scripted judge), writes the verdicts back as span
annotations and sends gen_ai.evaluation.result events to a real OTLP receiver; the test reads the
annotations back through Phoenix's API and assay's spans from Phoenix's own OTLP receiver."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from assay.judge.serve import free_port
from tests.helpers import NO_MODEL, dece_rules
from tests.otlp_receiver import otlp_receiver

try:  # the distribution, not an import: importing phoenix loads the whole server (15 s)
    PHOENIX = importlib.metadata.version("arize-phoenix")
except importlib.metadata.PackageNotFoundError:
    PHOENIX = None
pytestmark = [pytest.mark.integration, *NO_MODEL,
              pytest.mark.skipif(PHOENIX is None, reason="the Phoenix server is not installed (make setup)")]
ASSAY = shutil.which("assay", path=str(Path(sys.executable).parent))
PROJECT = "rag-demo"

EXAMPLE = Path(__file__).parents[2] / "examples" / "phoenix_rag.py"
"""The documented pipeline: three questions, two in session s-1, the third answered wrongly."""
HAMLET, CITY = "Who wrote Hamlet?", "And against a city?"


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Phoenix server on 127.0.0.1 (its SQLite in a temporary folder); yields its URL."""
    folder = tmp_path_factory.mktemp("phoenix")
    port, grpc_port = free_port(), free_port()
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(folder), "PHOENIX_PORT": str(port), "PHOENIX_HOST": "127.0.0.1",
           "PHOENIX_GRPC_PORT": str(grpc_port), "PHOENIX_TELEMETRY_ENABLED": "false"}
    log = (folder / "phoenix.log").open("wb")
    process = subprocess.Popen([sys.executable, "-m", "phoenix.server.main", "serve"], env=env, stdout=log,
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("Phoenix did not start: " + (folder / "phoenix.log").read_text()[-2000:])
            time.sleep(0.25)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def rag_pipeline(url: str) -> dict[str, dict[str, str]]:
    """Run the documented example pipeline against Phoenix; its LLM spans by question, read back
    from Phoenix."""
    sent = subprocess.run([sys.executable, str(EXAMPLE), "--endpoint", url, "--project", PROJECT],
                          capture_output=True, text=True, timeout=60)
    assert sent.returncode == 0, sent.stderr
    spans = wait_for_spans(url, PROJECT, 9)
    assert len(spans) == 9
    questions = {s["context"]["trace_id"]: s["attributes"]["input.value"] for s in spans if s["parent_id"] is None}
    return {questions[s["context"]["trace_id"]]: s["context"] for s in spans if s["span_kind"] == "LLM"}


def run(*args: object, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    assert ASSAY is not None
    full = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "OTEL_"))}
    full.update({"COLUMNS": "200", **(env or {})})
    return subprocess.run([ASSAY, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120, env=full,
                          stdin=subprocess.DEVNULL)


def annotations(url: str, span_ids: list[str]) -> list[dict[str, Any]]:
    response = httpx.get(f"{url}/v1/projects/{PROJECT}/span_annotations", params={"span_ids": span_ids},
                         timeout=10)
    response.raise_for_status()
    return response.json()["data"]


def wait_for_spans(url: str, project: str, count: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 20
    while True:
        response = httpx.get(f"{url}/v1/projects/{project}/spans", params={"limit": 100}, timeout=10)
        spans = response.json().get("data", []) if response.status_code == 200 else []
        if len(spans) >= count or time.monotonic() > deadline:
            return spans
        time.sleep(0.25)


def test_phoenix_round_trip(phoenix: str, tmp_path: Path) -> None:
    by_question = rag_pipeline(phoenix)
    llm_spans = list(by_question.values())
    span_ids = [s["span_id"] for s in llm_spans]

    # rougeL (no judge): read from Phoenix, annotate back, events to a real OTLP receiver
    with otlp_receiver() as receiver:
        made = run("eval", "rougeL", "--from-phoenix", phoenix, "--project", PROJECT, "--store", "run.db",
                   "--phoenix-annotate", "--otel", "--gate", "rougeL=0.5", "--no-progress", cwd=tmp_path,
                   env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
        logs = receiver.received.logs
    assert made.returncode == 0, made.stderr
    run_id = re.search(r"\(run ([0-9a-f]+)\)", made.stdout).group(1)  # type: ignore[union-attr]
    assert f"phoenix: 3 annotation(s) on 3 span(s) at {phoenix} (run {run_id})" in made.stdout
    assert sorted((log["trace_id"], log["span_id"]) for log in logs) == sorted(
        (s["trace_id"], s["span_id"]) for s in llm_spans)  # each event parented to the evaluated LLM span
    found = {a["span_id"]: a for a in annotations(phoenix, span_ids) if a["name"] == "assay.rougeL"}
    assert set(found) == set(span_ids)
    for annotation in found.values():
        assert annotation["metadata"]["assay_run_id"] == run_id
        assert annotation["result"]["label"] == ("pass" if annotation["result"]["score"] >= 0.5 else "fail")
    assert found[by_question[HAMLET]["span_id"]]["result"]["label"] == "fail"  # Marlowe is not Shakespeare
    assert run("export", "run.db", "-o", "run.jsonl", cwd=tmp_path).returncode == 0
    rows = {r["query"]: r for r in map(json.loads, (tmp_path / "run.jsonl").read_text().splitlines())}
    first = next(q for q in by_question if q not in (HAMLET, CITY))
    assert [t["content"] for t in rows[CITY]["history"]] == [first, rows[first]["response"]]  # one session
    assert [c["id"] for c in rows[HAMLET]["contexts"]] == ["kb-3"] and "history" not in rows[HAMLET]

    # DeCE with the scripted judge: criterion 2 is not met in each answer; each failed verdict goes back
    (tmp_path / "judge.json").write_text(json.dumps({"rules": dece_rules(["three years", "notice"],
                                                                         ["three years"], sat=[1, 0], ver=[1])}))
    made = run("eval", "dece", "--from-phoenix", phoenix, "--project", PROJECT, "--limit", "2", "--judge",
               "scripted/judge.json", "--store", "dece.db", "--phoenix-annotate", "--no-progress", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    dece_run = re.search(r"\(run ([0-9a-f]+)\)", made.stdout).group(1)  # type: ignore[union-attr]
    verdicts = [a for a in annotations(phoenix, span_ids) if a["name"] == "assay.verdict"]
    assert {v["span_id"] for v in verdicts} == {by_question[q]["span_id"] for q in (CITY, HAMLET)}  # the latest two
    assert {v["metadata"]["assay_run_id"] for v in verdicts} == {dece_run}
    notice = [v for v in verdicts if v["metadata"]["assay_path"] == "criteria[1]"]
    assert len(notice) == 2
    for verdict in notice:
        assert verdict["result"]["label"] == "not met" and verdict["result"]["explanation"].startswith(
            "not met: notice — why: because 2 — quote: ")

    # the documented filter finds the spans with a criterion not met (Phoenix's own span query)
    project = next(p["id"] for p in httpx.get(f"{phoenix}/v1/projects", timeout=10).json()["data"]
                   if p["name"] == PROJECT)
    query = ("query($p: ID!, $c: String) { node(id: $p) { ... on Project { spans(filterCondition: $c, first: 50) "
             "{ edges { node { spanId } } } } } }")
    answer = httpx.post(f"{phoenix}/graphql", json={"query": query, "variables": {
        "p": project, "c": "annotations['assay.verdict'].label == 'not met'"}}, timeout=10).json()
    assert {e["node"]["spanId"] for e in answer["data"]["node"]["spans"]["edges"]} == {
        by_question[q]["span_id"] for q in (CITY, HAMLET)}

    # assay's own spans into Phoenix's OTLP receiver (events off: Phoenix takes traces only)
    sent = run("export", "run.db", "--otel", cwd=tmp_path,
               env={"OTEL_EXPORTER_OTLP_ENDPOINT": phoenix, "OTEL_LOGS_EXPORTER": "none",
                    "OTEL_RESOURCE_ATTRIBUTES": "openinference.project.name=assay-runs"})
    assert sent.returncode == 0, sent.stderr
    assert "otel: sent 0 evaluation event(s) and 4 span(s)" in sent.stdout
    mine = wait_for_spans(phoenix, "assay-runs", 4)
    assert sorted(s["name"] for s in mine)[0] == "assay eval rougeL"
    assert {s["attributes"]["assay.run_id"] for s in mine if s["name"] == "assay eval rougeL"} == {run_id}
