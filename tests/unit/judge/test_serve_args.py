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
