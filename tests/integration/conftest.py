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
def _server(directory: Path, threads: int = 2, module: str = "llama_cpp.server") -> Iterator[str]:
    """A real llama-cpp-python server on 127.0.0.1 serving SmolLM2-135M; yields its base URL and
    stops it afterwards. ``module`` "assay.judge.serve" is that server with assay's fast paths."""
    with running(smollm_path(), directory / "server.log", module=module, alias="smollm2", threads=threads,
                 n_ctx=2048, start_timeout_s=120) as base:
        yield base


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


@pytest.fixture(scope="session")
def assay_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``python -m assay.judge.serve`` (check-first grammar sampling, numpy logprobs) on 127.0.0.1
    serving SmolLM2-135M; yields its base URL."""
    with _server(Path(tmp_path_factory.mktemp("assay-server")), module="assay.judge.serve") as base:
        yield base
