"""``python -m assay.judge.serve`` refuses what it cannot serve before loading anything: one line,
exit 2, no traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("draft", [["--draft_model", "prompt-lookup-decoding"],
                                   ["--draft_model=prompt-lookup-decoding"]])
def test_a_draft_model_is_refused_in_one_line(draft: list[str]) -> None:
    # its speculative steps evaluate several tokens at once, and the server reads logprobs one step at a time
    done = subprocess.run([sys.executable, "-m", "assay.judge.serve", "--model", "/nonexistent.gguf", *draft],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "takes no --draft_model" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_threads_default_to_the_usable_cpus_unless_given(monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.judge.cpu_build import usable_cpus
    from assay.judge.serve import thread_defaults

    monkeypatch.delenv("N_THREADS", raising=False)
    monkeypatch.delenv("N_THREADS_BATCH", raising=False)
    monkeypatch.delenv("CONFIG_FILE", raising=False)
    n = usable_cpus()
    assert thread_defaults(["--model", "m.gguf"]) == [f"--n_threads={n}", f"--n_threads_batch={n}", "--model", "m.gguf"]
    assert thread_defaults(["--n_threads", "1"]) == [f"--n_threads_batch={n}", "--n_threads", "1"]
    assert thread_defaults(["--n_threads_batch=3"]) == [f"--n_threads={n}", "--n_threads_batch=3"]
    assert thread_defaults(["--config_file", "c.json"]) == ["--config_file", "c.json"]  # the file says
    monkeypatch.setenv("N_THREADS", "1")  # the stock settings read it
    assert thread_defaults([]) == [f"--n_threads_batch={n}"]


def test_the_stock_parser_reads_the_added_thread_options() -> None:
    import argparse

    from llama_cpp.server.cli import add_args_from_model
    from llama_cpp.server.settings import Settings

    from assay.judge.serve import thread_defaults

    parser = argparse.ArgumentParser()
    add_args_from_model(parser, Settings)
    args = parser.parse_args(thread_defaults(["--model", "m.gguf", "--n_threads", "1"]))
    assert args.n_threads == 1 and args.n_threads_batch >= 1 and args.model == "m.gguf"
    # an abbreviation the stock parser accepts is the user's value, not overridden by the default
    assert parser.parse_args(thread_defaults(["--model", "m.gguf", "--n_threads_b", "3"])).n_threads_batch == 3
