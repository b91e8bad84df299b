"""Small OpenAI-compatible stub servers on 127.0.0.1 for fault tests: one that answers a chat
completion, one that answers a JSON body of the test's, one that hangs, one that answers 200 with
an HTML page. Each serves in a daemon
thread, stops when the test's ``with`` block ends, and counts the requests it got."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Stub:
    def __init__(self, server: ThreadingHTTPServer) -> None:
        self.server = server
        self.requests = 0
        self.bodies: list[dict[str, Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"


def completion(text: str) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


@contextmanager
def stub_server(kind: str, answer: Callable[[dict[str, Any]], Any] | None = None,
                hang_s: float = 5.0) -> Iterator[Stub]:
    """``kind``: ``ok`` (a chat completion whose text is ``answer(request)``), ``json`` (the whole
    body is ``answer(request)``: another usage, another provider's format), ``hang`` (sleeps
    ``hang_s`` then closes), ``html`` (200 with an HTML maintenance page)."""
    holder: dict[str, Stub] = {}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            stub = holder["stub"]
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            stub.requests += 1
            stub.bodies.append(body)
            if kind == "hang":
                time.sleep(hang_s)
                self.close_connection = True
                return
            if kind == "html":
                payload = b"<html><body><h1>Down for maintenance</h1></body></html>"
                self.send_response(200)
                self.send_header("content-type", "text/html")
            else:
                assert answer is not None
                payload = json.dumps(answer(body) if kind == "json" else completion(answer(body))).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    stub = Stub(server)
    holder["stub"] = stub
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
