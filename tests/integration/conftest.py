"""Fixtures that start real things: the embedded model, and a llama.cpp OpenAI-compatible server."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from assay.model import smollm_path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def _server(directory: Path, threads: int = 2) -> Iterator[str]:
    """A real llama-cpp-python server on 127.0.0.1 serving SmolLM2-135M; yields its base URL and
    stops it afterwards."""
    port = free_port()
    log = directory / "server.log"
    handle = log.open("w")
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(smollm_path()),
                             "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048",
                             "--n_threads", str(threads), "--logits_all", "true", "--model_alias", "smollm2"],
                            stdout=handle, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.time() + 120
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"llama.cpp server exited: {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.time() > deadline:
                raise RuntimeError(f"llama.cpp server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        handle.close()


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real llama-cpp-python server on 127.0.0.1 serving SmolLM2-135M; yields its base URL."""
    with _server(Path(tmp_path_factory.mktemp("server"))) as base:
        yield base


@pytest.fixture(scope="session")
def second_llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Another such server (one thread each when both run: 2 cores)."""
    with _server(Path(tmp_path_factory.mktemp("server2")), threads=1) as base:
        yield base
