"""A tiny RAG pipeline traced with the OpenInference conventions, for trying assay on traces.

It answers three questions (two turns of one session, one of another) from a three-passage corpus
with canned answers, and sends its spans to Phoenix over OTLP/HTTP: per question a CHAIN span
(question, answer, the gold answer in ``metadata.reference``, ``session.id``), a RETRIEVER span
with the passages it found and an LLM span with its messages. One answer is wrong on purpose.

    python examples/phoenix_rag.py --endpoint http://127.0.0.1:6006 --project rag-demo

Needs ``opentelemetry-sdk``, ``opentelemetry-exporter-otlp-proto-http`` and
``openinference-semantic-conventions`` (all installed with ``arize-phoenix``).
"""

from __future__ import annotations

import argparse
import json
import re

from openinference.semconv.resource import ResourceAttributes
from openinference.semconv.trace import DocumentAttributes, MessageAttributes, SpanAttributes
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

CORPUS = {
    "kb-1": "The limitation period for negligence in New York is three years under CPLR 214(5).",
    "kb-2": "A notice of claim against a municipality must be served within 90 days.",
    "kb-3": "Hamlet was written by William Shakespeare around 1600.",
}
QUESTIONS = [  # (session, question, the pipeline's answer, the gold answer)
    ("s-1", "What is the limitation period for negligence in New York?",
     "It is three years under CPLR 214(5).", "Three years under CPLR 214(5)."),
    ("s-1", "And against a city?", "You must serve a notice of claim within 90 days.",
     "A notice of claim within 90 days."),
    ("s-2", "Who wrote Hamlet?", "It was Christopher Marlowe.", "William Shakespeare wrote Hamlet."),
]
STOP = {"the", "a", "of", "in", "is", "and", "who", "what", "for"}


def retrieve(question: str) -> list[tuple[str, str]]:
    words = set(re.findall(r"\w+", question.lower())) - STOP
    return [(key, text) for key, text in CORPUS.items() if words & set(re.findall(r"\w+", text.lower()))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", default="http://127.0.0.1:6006", help="Phoenix (or any OTLP/HTTP receiver)")
    parser.add_argument("--project", default="rag-demo", help="the Phoenix project the traces go to")
    args = parser.parse_args()
    provider = TracerProvider(resource=Resource.create({ResourceAttributes.PROJECT_NAME: args.project}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{args.endpoint}/v1/traces")))
    tracer = provider.get_tracer("rag-pipeline")
    kind = SpanAttributes.OPENINFERENCE_SPAN_KIND
    for session, question, answer, gold in QUESTIONS:
        with tracer.start_as_current_span("rag") as chain:
            chain.set_attributes({kind: "CHAIN", SpanAttributes.INPUT_VALUE: question,
                                  SpanAttributes.SESSION_ID: session,
                                  SpanAttributes.METADATA: json.dumps({"reference": gold})})
            with tracer.start_as_current_span("retrieve") as retriever:
                hits = retrieve(question)
                retriever.set_attributes({kind: "RETRIEVER", SpanAttributes.INPUT_VALUE: question})
                for n, (doc_id, text) in enumerate(hits):
                    prefix = f"{SpanAttributes.RETRIEVAL_DOCUMENTS}.{n}."
                    retriever.set_attributes({prefix + DocumentAttributes.DOCUMENT_ID: doc_id,
                                              prefix + DocumentAttributes.DOCUMENT_CONTENT: text})
            with tracer.start_as_current_span("generate") as llm:
                prompt = "Answer from the passages.\n" + "\n".join(t for _, t in hits) + f"\nQuestion: {question}"
                llm.set_attributes({
                    kind: "LLM", SpanAttributes.LLM_MODEL_NAME: "canned-1",
                    f"{SpanAttributes.LLM_INPUT_MESSAGES}.0.{MessageAttributes.MESSAGE_ROLE}": "user",
                    f"{SpanAttributes.LLM_INPUT_MESSAGES}.0.{MessageAttributes.MESSAGE_CONTENT}": prompt,
                    f"{SpanAttributes.LLM_OUTPUT_MESSAGES}.0.{MessageAttributes.MESSAGE_ROLE}": "assistant",
                    f"{SpanAttributes.LLM_OUTPUT_MESSAGES}.0.{MessageAttributes.MESSAGE_CONTENT}": answer})
            chain.set_attribute(SpanAttributes.OUTPUT_VALUE, answer)
    provider.shutdown()
    print(f"sent {len(QUESTIONS)} traces to {args.endpoint} (project {args.project})")


if __name__ == "__main__":
    main()
