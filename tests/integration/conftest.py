"""Fixtures that start real things: the embedded model, and a llama.cpp OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from assay.judge.model import smollm_path
from assay.judge.serve import free_port, running

__all__ = ["free_port"]


@contextmanager
def _server(directory: Path, threads: int | None = None, module: str = "llama_cpp.server",
            env: dict[str, str] | None = None) -> Iterator[str]:
    """A real llama-cpp-python server on 127.0.0.1 serving SmolLM2-135M; yields its base URL and
    stops it afterwards. ``module`` "assay.judge.serve" is that server with assay's fast paths."""
    with running(smollm_path(), directory / "server.log", module=module, alias="smollm2", threads=threads,
                 n_ctx=2048, start_timeout_s=120, env=env) as base:
        yield base


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real llama-cpp-python server on 127.0.0.1 serving SmolLM2-135M; yields its base URL."""
    with _server(Path(tmp_path_factory.mktemp("server"))) as base:
        yield base


@pytest.fixture
def two_llama_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """Two such servers of one thread each, their idle threads asleep (``OMP_WAIT_POLICY=PASSIVE``),
    for a test that keeps both busy at once. Measured on a 2-core Xeon, the same three calls: the
    session's two-thread server beside a one-thread one 26.6 s, both passive 12.8 s; two one-thread
    servers 24.4 s, both passive 11.9 s (spinning OpenMP threads took the cores from each other and
    from the test's own client). Under `make test`'s two workers of one CPU each (tests/model_workers.py)
    both servers share that CPU, so the test takes about twice as long there; it asks three calls."""
    passive = {"OMP_WAIT_POLICY": "PASSIVE"}
    with _server(Path(tmp_path_factory.mktemp("server2")), threads=1, env=passive) as first, \
            _server(Path(tmp_path_factory.mktemp("server3")), threads=1, env=passive) as second:
        yield first, second


@pytest.fixture(scope="session")
def assay_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``python -m assay.judge.serve`` (check-first grammar sampling, numpy logprobs) on 127.0.0.1
    serving SmolLM2-135M; yields its base URL."""
    with _server(Path(tmp_path_factory.mktemp("assay-server")), module="assay.judge.serve") as base:
        yield base
