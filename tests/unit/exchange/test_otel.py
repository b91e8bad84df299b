"""Verdicts out as OpenTelemetry and items in from traces: the installed `assay` reads an
OTLP/JSON trace export, scores it, and sends gen_ai.evaluation.result events and its spans to a
real OTLP/HTTP receiver (tests/otlp_receiver.py) that decodes the protobuf requests; the receiver
also refuses, hangs and answers garbage."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from assay.data.traces import Span, items_from_spans, read_trace_file
from assay.exchange.otel import (
    ERROR_TYPE,
    EVALUATION_NAME,
    EVENT_NAME,
    EXPLANATION,
    RESPONSE_ID,
    SCHEMA_URL,
    SCORE_LABEL,
    SCORE_VALUE,
    evaluation_events,
    parse_gates,
)
from assay.store import Store
from tests.helpers import ITEM, dece_rules
from tests.otlp_receiver import otlp_receiver

ASSAY = shutil.which("assay", path=str(Path(sys.executable).parent))
pytestmark = pytest.mark.skipif(ASSAY is None, reason="the assay console script is not installed (make setup)")

TRACE_A, ROOT_A, RETR_A, LLM_A = "a" * 32, "a1" * 8, "a2" * 8, "a3" * 8
TRACE_B, ROOT_B, LLM_B = "b" * 32, "b1" * 8, "b3" * 8
TRACE_C, ROOT_C = "c" * 32, "c1" * 8


def _attrs(values: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for key, value in values.items():
        typed = {"intValue": str(value)} if isinstance(value, int) else {"stringValue": str(value)}
        out.append({"key": key, "value": typed})
    return out


def _span(trace: str, span: str, parent: str | None, name: str, start: int, attributes: dict[str, Any]) -> dict:
    return {"traceId": trace, "spanId": span, **({"parentSpanId": parent} if parent else {}), "name": name,
            "kind": 1, "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 1000),
            "attributes": _attrs(attributes)}


def trace_export(reference_b: bool = True) -> dict[str, Any]:
    """A RAG pipeline's OTLP/JSON export: trace A (chain → retriever → LLM, in a session), trace B
    (the same session's second turn), trace C (no LLM span, no output: reported)."""
    t = 1_700_000_000_000_000_000
    meta_a = json.dumps({"reference": ITEM["reference"], "customer": "acme"})
    meta_b = json.dumps({"reference": "Shakespeare wrote Hamlet."}) if reference_b else json.dumps({"x": 1})
    spans = [
        _span(TRACE_A, ROOT_A, None, "rag", t, {"openinference.span.kind": "CHAIN", "input.value": ITEM["query"],
                                                "output.value": ITEM["response"], "metadata": meta_a,
                                                "session.id": "s-1"}),
        _span(TRACE_A, RETR_A, ROOT_A, "retrieve", t + 10, {
            "openinference.span.kind": "RETRIEVER", "retrieval.documents.0.document.id": "kb-1",
            "retrieval.documents.0.document.content": "CPLR 214(5): three years.",
            "retrieval.documents.1.document.content": "Notice of claim: 90 days."}),
        _span(TRACE_A, LLM_A, ROOT_A, "generate", t + 20, {
            "openinference.span.kind": "LLM", "llm.model_name": "gpt-test",
            "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": "PROMPT",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": ITEM["response"]}),
        _span(TRACE_B, ROOT_B, None, "rag", t + 100, {"openinference.span.kind": "CHAIN",
                                                      "input.value": "Who wrote Hamlet?", "metadata": meta_b,
                                                      "session.id": "s-1"}),
        _span(TRACE_B, LLM_B, ROOT_B, "generate", t + 110, {"openinference.span.kind": "LLM",
                                                            "output.value": "Marlowe wrote Hamlet."}),
        _span(TRACE_C, ROOT_C, None, "health", t + 200, {"openinference.span.kind": "CHAIN", "input.value": "ping"}),
    ]
    return {"resourceSpans": [{"resource": {"attributes": _attrs({"service.name": "rag"})},
                               "scopeSpans": [{"scope": {"name": "rag"}, "spans": spans}]}]}


def run(*args: object, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120) -> Any:
    assert ASSAY is not None
    full = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "OTEL_"))}
    full.update({"COLUMNS": "200", **(env or {})})
    return subprocess.run([ASSAY, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=full, stdin=subprocess.DEVNULL)


def test_semantic_convention_names_are_the_conventions_own() -> None:
    from opentelemetry.semconv._incubating.attributes import error_attributes, gen_ai_attributes
    from opentelemetry.semconv.schemas import Schemas

    assert EVALUATION_NAME == gen_ai_attributes.GEN_AI_EVALUATION_NAME
    assert SCORE_VALUE == gen_ai_attributes.GEN_AI_EVALUATION_SCORE_VALUE
    assert SCORE_LABEL == gen_ai_attributes.GEN_AI_EVALUATION_SCORE_LABEL
    assert EXPLANATION == gen_ai_attributes.GEN_AI_EVALUATION_EXPLANATION
    assert RESPONSE_ID == gen_ai_attributes.GEN_AI_RESPONSE_ID
    assert ERROR_TYPE == error_attributes.ERROR_TYPE
    assert SCHEMA_URL in {s.value for s in Schemas}


def test_items_from_spans_follow_the_rules(tmp_path: Path) -> None:
    path = tmp_path / "traces.json"
    path.write_text(json.dumps(trace_export()))
    items, problems = items_from_spans(read_trace_file(path))
    assert [i.id for i in items] == [LLM_A, LLM_B]
    a, b = items
    assert a.query == ITEM["query"] and a.response == ITEM["response"]  # the root's question, not the prompt
    assert [(c.id, c.text) for c in a.contexts] == [("kb-1", "CPLR 214(5): three years."),
                                                     ("", "Notice of claim: 90 days.")]
    assert a.reference is not None and a.reference.required == ITEM["reference"]["required"]
    assert a.metadata["trace_id"] == TRACE_A and a.metadata["span_id"] == LLM_A
    assert a.metadata["customer"] == "acme" and a.metadata["model"] == "gpt-test"
    assert not a.history
    assert [(t.role, t.content) for t in b.history] == [("user", ITEM["query"]), ("assistant", ITEM["response"])]
    assert b.metadata["conversation_id"] == "s-1"
    assert len(problems) == 1 and TRACE_C in problems[0] and "no LLM span with a response" in problems[0]


def test_phoenix_flattened_metadata_is_read() -> None:
    span = Span(trace_id="d" * 32, span_id="d1" * 8, parent_id=None, name="llm", kind="LLM", start=1, end=2,
                attributes={"input.value": "q", "output.value": "r", "metadata.reference": "gold"})
    items, _ = items_from_spans([span])
    assert items[0].reference is not None and items[0].reference.required == "gold"


def test_gates_parse_and_refuse() -> None:
    assert parse_gates(["f_beta=0.7", "recall=0.5,precision=0.4"]) == {"f_beta": 0.7, "recall": 0.5,
                                                                        "precision": 0.4}
    from assay.core.errors import ConfigError

    with pytest.raises(ConfigError, match="METRIC=MIN"):
        parse_gates(["f_beta"])
    for bad in ("f_beta=nan", "f_beta=inf", "f_beta=-inf"):  # a gate that nothing passes, or everything
        with pytest.raises(ConfigError, match="a finite number"):
            parse_gates([bad])
    with pytest.raises(ConfigError, match="no metric 'fbeta'; its metrics: precision, recall, f_beta"):
        parse_gates(["fbeta=0.5"], ("precision", "recall", "f_beta"))


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("otel")
    (folder / "traces.json").write_text(json.dumps(trace_export()))
    # criterion 2 not satisfied, element 1 supported: one failed verdict with its reasoning
    (folder / "judge.json").write_text(json.dumps({"rules": dece_rules(["three years", "notice"], ["three years"],
                                                                       sat=[1, 0], ver=[1])}))
    return folder


def test_eval_from_traces_sends_events_parented_to_the_evaluated_spans(folder: Path) -> None:
    with otlp_receiver() as receiver:
        made = run("eval", "rougeL", "--from-traces", "traces.json", "--store", "lex.db", "--otel",
                   "--gate", "rougeL=0.5", "--no-progress", cwd=folder,
                   env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
        assert made.returncode == 0, made.stderr
        assert f"skipped trace {TRACE_C}" in made.stderr  # reported, not guessed
        assert "otel: sent 2 evaluation event(s) and 3 span(s)" in made.stdout, made.stdout
        logs, spans = receiver.received.logs, receiver.received.spans
    assert len(logs) == 2
    by_span = {log["span_id"]: log for log in logs}
    assert set(by_span) == {LLM_A, LLM_B}
    for log in logs:
        attrs = log["attributes"]
        assert log["event_name"] == EVENT_NAME and log["schema_url"] == SCHEMA_URL
        assert attrs[EVALUATION_NAME] == "rougeL" and 0 <= attrs[SCORE_VALUE] <= 1
        assert attrs[SCORE_LABEL] == ("pass" if attrs[SCORE_VALUE] >= 0.5 else "fail")
        assert RESPONSE_ID not in attrs  # the span is known: the event is parented to it instead
    assert by_span[LLM_A]["trace_id"] == TRACE_A and by_span[LLM_B]["trace_id"] == TRACE_B
    names = sorted(s["name"] for s in spans)
    assert names == ["assay eval rougeL", f"assay evaluate {LLM_A}", f"assay evaluate {LLM_B}"]
    item_span = next(s for s in spans if s["name"] == f"assay evaluate {LLM_A}")
    assert item_span["links"] == [(TRACE_A, LLM_A)]


def test_dece_events_explain_the_failed_verdict_and_judge_calls_are_spans(folder: Path) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": ""}
    with otlp_receiver() as receiver:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.url
        made = run("eval", "dece", "--from-traces", "traces.json", "--judge", "scripted/judge.json", "--store",
                   "dece.db", "--limit", "1", "--otel", "--no-progress", cwd=folder, env=env)
        assert made.returncode == 0, made.stderr
        first = (list(receiver.received.logs), list(receiver.received.spans))
        receiver.received.logs.clear()
        receiver.received.spans.clear()
        again = run("export", "dece.db", "--otel", cwd=folder, env=env)  # the same run, sent again from the store
        assert again.returncode == 0, again.stderr
        second = (receiver.received.logs, receiver.received.spans)
    logs, spans = first
    assert sorted(log["attributes"][EVALUATION_NAME] for log in logs) == ["f_beta", "precision", "recall"]
    recall = next(log for log in logs if log["attributes"][EVALUATION_NAME] == "recall")
    assert recall["span_id"] == LLM_A and recall["attributes"][SCORE_VALUE] == 0.5
    explanation = recall["attributes"][EXPLANATION]
    assert "not met: notice" in explanation and "why: because 2" in explanation
    calls = [s for s in spans if s["name"].startswith("chat ")]
    assert len(calls) == 4  # criteria, elements and the two verdict calls
    for call in calls:
        attrs = call["attributes"]
        assert attrs["gen_ai.operation.name"] == "chat" and attrs["assay.cache_hit"] is False
        assert attrs["gen_ai.usage.input_tokens"] > 0 and "gen_ai.request.model" in attrs
    item = next(s for s in spans if s["name"].startswith("assay evaluate"))
    assert {c["parent_id"] for c in calls} == {item["span_id"]}
    assert [log["attributes"] for log in second[0]] == [log["attributes"] for log in logs]
    assert len(second[1]) == len(spans)


def test_events_without_span_ids_carry_the_response_id(tmp_path: Path) -> None:
    data = tmp_path / "items.jsonl"
    data.write_text(json.dumps({"id": "r-1", "query": "q", "response": "three years", "reference": "three years",
                                "metadata": {"response_id": "chatcmpl-42"}}) + "\n"
                    + json.dumps({"id": "r-2", "query": "q", "response": "no", "reference": "three years"}) + "\n")
    made = run("eval", "rougeL", "items.jsonl", "--store", "run.db", "--no-progress", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    store = Store(tmp_path / "run.db", create=False)
    events = evaluation_events(store, store.resolve_run(None))
    assert [e.attributes[RESPONSE_ID] for e in events] == ["chatcmpl-42", "r-2"]
    assert all(e.trace_id is None for e in events)
    with otlp_receiver() as receiver:
        sent = run("export", "run.db", "--otel", cwd=tmp_path, env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
        assert sent.returncode == 0, sent.stderr
        logs, spans = receiver.received.logs, receiver.received.spans
    items = {s["span_id"]: s for s in spans if s["name"].startswith("assay evaluate")}
    assert {log["span_id"] for log in logs} == set(items)  # parented to assay's span of the item


def test_unscored_metric_is_an_event_with_error_type(tmp_path: Path) -> None:
    data = tmp_path / "items.jsonl"
    data.write_text(json.dumps(ITEM) + "\n")
    (tmp_path / "judge.json").write_text(json.dumps({"rules": [{"match": "", "responses": ["not json"],
                                                                "repeat": True}]}))
    made = run("eval", "dece", "items.jsonl", "--judge", "scripted/judge.json", "--store", "run.db",
               "--no-progress", "--retries", "0", cwd=tmp_path)
    assert made.returncode in (0, 4), made.stderr
    store = Store(tmp_path / "run.db", create=False)
    events = evaluation_events(store, store.resolve_run(None))
    assert events and all(e.attributes[ERROR_TYPE] in ("unscored", "judge_call_failed") for e in events)
    assert all(SCORE_VALUE not in e.attributes and e.attributes[EXPLANATION] for e in events)
    assert all(e.warn for e in events)


@pytest.mark.parametrize("mode", ["down", "error", "hang", "garbage"])
def test_a_bad_endpoint_never_fails_the_run(folder: Path, mode: str) -> None:
    if mode == "down":
        with otlp_receiver() as gone:
            pass  # stopped: its port refuses connections
        context = contextlib.nullcontext(gone)
    else:
        context = otlp_receiver(mode)
    with context as receiver:
        started = time.monotonic()
        made = run("eval", "rougeL", "--from-traces", "traces.json", "--store", f"{mode}.db", "--otel",
                   "--no-progress", cwd=folder, env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
                                                    "OTEL_EXPORTER_OTLP_TIMEOUT": "1500"})
        elapsed = time.monotonic() - started
    assert made.returncode == 0, made.stderr
    assert "saved to" in made.stdout  # the scores are in the store
    if mode == "garbage":  # a 200 with junk is delivered, as far as the sender can know
        assert "otel: sent 2 evaluation event(s)" in made.stdout
    else:
        assert "otel: not all sent" in made.stderr and "assay export" in made.stderr
        assert "Traceback" not in made.stderr and len(made.stderr.strip().splitlines()) <= 3, made.stderr
    assert elapsed < 30, elapsed  # at most the export timeout per signal, plus start-up


@pytest.mark.parametrize(("args", "message"), [
    (("eval", "rougeL", "--from-traces", "traces.json", "--gate", "rougeL"), "METRIC=MIN"),
    (("eval", "rougeL", "--from-phoenix", "http://127.0.0.1:9"), "--project"),
    (("eval", "rougeL", "traces.json", "--from-traces", "traces.json"), "one source"),
    (("eval", "rougeL", "--from-traces", "missing.json"), "no such file"),
    (("eval", "rougeL", "--from-traces", "traces.json", "--phoenix-annotate"), "--from-phoenix"),
    (("eval", "rougeL", "--from-phoenix", "http://127.0.0.1:9", "--project", "p"), "cannot reach Phoenix"),
    (("export", "lex.db", "--phoenix", "localhost:6006"), "a URL such as"),
    (("eval", "rougeL", "--from-traces", "traces.json", "--otel", "--gate", "rougeL=nan"), "a finite number"),
    (("eval", "rougeL", "--from-traces", "traces.json", "--gate", "rougeL=0.5"), "give one of them"),
    (("export", "lex.db", "-o", "x.csv", "--gate", "rougeL=-inf"), "a finite number"),
    (("export", "lex.db", "-o", "x.csv", "--gate", "rougeL=0.5"), "give one of them"),
])
def test_bad_tracing_input_is_one_line_and_exit_2(folder: Path, args: tuple[str, ...], message: str) -> None:
    made = run(*args, "--no-progress" if args[0] == "eval" else "--force", cwd=folder,
               env={"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"})
    assert made.returncode == 2, (made.stdout, made.stderr)
    assert message in made.stderr and len(made.stderr.strip().splitlines()) == 1, made.stderr


def test_a_gate_on_a_metric_the_method_does_not_have_is_refused_before_the_run(folder: Path) -> None:
    made = run("eval", "rougeL", "--from-traces", "traces.json", "--store", "nosuch.db", "--otel", "--gate",
               "nosuch=0.5", "--no-progress", cwd=folder, env={"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"})
    assert made.returncode == 2 and "Traceback" not in made.stderr, made.stderr
    assert made.stderr.strip().splitlines()[-1] == \
        "error: --gate 'nosuch=0.5': this run has no metric 'nosuch'; its metrics: rougeL"
    assert not (folder / "nosuch.db").exists()


@pytest.mark.parametrize("since", ["99999999999999999d", "999999999d", "9" * 320 + "s"])
def test_a_since_further_back_than_dates_go_is_one_line_before_the_store(tmp_path: Path, since: str) -> None:
    """--since 999999999d was an OverflowError (date value out of range) traceback."""
    made = run("eval", "dece", "--from-phoenix", "http://127.0.0.1:1", "--project", "p", "--since", since,
               "--judge", "scripted/judge.json", "--store", "r.db", "--no-progress", cwd=tmp_path)
    lines = made.stderr.strip().splitlines()
    assert made.returncode == 2 and "Traceback" not in made.stdout + made.stderr, made.stderr
    assert len(lines) == 1 and lines[0].startswith(f"error: --since {since!r}: ") and "shorter" in lines[0], lines
    assert not (tmp_path / "r.db").exists()


def test_grpc_protocol_is_refused_before_the_run(folder: Path) -> None:
    made = run("eval", "rougeL", "--from-traces", "traces.json", "--store", "grpc.db", "--otel", "--no-progress",
               cwd=folder, env={"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
    assert made.returncode == 2 and "http/protobuf" in made.stderr
    assert not (folder / "grpc.db").exists()


def test_the_documented_trace_file_is_this_tests_export() -> None:
    shipped = Path(__file__).parents[3] / "src" / "assay" / "examples" / "traces.otlp.json"
    assert json.loads(shipped.read_text()) == trace_export()
