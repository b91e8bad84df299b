"""A real OTLP/HTTP receiver for tests: an HTTP server on 127.0.0.1 that decodes the protobuf
export requests (traces and logs) the OpenTelemetry exporters send, and can refuse, hang or
answer garbage."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


@dataclass
class Received:
    spans: list[dict[str, Any]] = field(default_factory=list)
    logs: list[dict[str, Any]] = field(default_factory=list)
    requests: int = 0


@dataclass
class Receiver:
    url: str
    received: Received
    mode: dict[str, str]


@contextmanager
def otlp_receiver(mode: str = "ok") -> Iterator[Receiver]:
    """``mode``: ok (decode and answer 200), error (HTTP 500), hang (never answer in time),
    garbage (200 with a body that is not protobuf, nothing decoded)."""
    received = Received()
    state = {"mode": mode}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            received.requests += 1
            if state["mode"] == "hang":
                time.sleep(30)
                return
            if state["mode"] == "error":
                self.send_response(500)
                self.end_headers()
                self.wfile.write(b"internal error")
                return
            if state["mode"] == "ok":
                if self.path == "/v1/traces":
                    request = ExportTraceServiceRequest.FromString(body)
                    for resource in request.resource_spans:
                        for scope in resource.scope_spans:
                            for span in scope.spans:
                                received.spans.append({
                                    "name": span.name, "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
                                    "parent_id": span.parent_span_id.hex(), "schema_url": scope.schema_url,
                                    "links": [(link.trace_id.hex(), link.span_id.hex()) for link in span.links],
                                    "attributes": {kv.key: _value(kv.value) for kv in span.attributes}})
                elif self.path == "/v1/logs":
                    request = ExportLogsServiceRequest.FromString(body)
                    for resource in request.resource_logs:
                        for scope in resource.scope_logs:
                            for record in scope.log_records:
                                received.logs.append({
                                    "event_name": record.event_name, "trace_id": record.trace_id.hex(),
                                    "span_id": record.span_id.hex(), "body": _value(record.body),
                                    "severity": record.severity_number, "schema_url": scope.schema_url,
                                    "attributes": {kv.key: _value(kv.value) for kv in record.attributes}})
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.end_headers()
            self.wfile.write(b"\xff\xfe not protobuf" if state["mode"] == "garbage" else b"")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Receiver(url=f"http://127.0.0.1:{server.server_address[1]}", received=received, mode=state)
    finally:
        server.shutdown()
        server.server_close()
