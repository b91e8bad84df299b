"""The embedded judge's default thread count is the CPUs the process may run on (taskset, a cpuset,
a test worker kept to one core), not every core of the machine; prompts are read with as many."""

from __future__ import annotations

import subprocess
import sys

import pytest

from assay.judge.backends._llamacpp import LlamaCppBackend
from assay.judge.cpu_build import usable_cpus


def test_the_default_follows_the_affinity_set() -> None:
    if not hasattr(__import__("os"), "sched_setaffinity"):
        pytest.skip("no CPU affinity on this platform")
    code = ("import os; os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]}); "
            "from assay.judge.backends._llamacpp import LlamaCppBackend; "
            "print(LlamaCppBackend('smollm2', process='inline').n_threads)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "1"
    assert LlamaCppBackend("smollm2", process="inline").n_threads == usable_cpus() >= 1


def test_an_explicit_thread_count_is_kept() -> None:
    assert LlamaCppBackend("smollm2", n_threads=3, process="inline").n_threads == 3
